// SPDX-License-Identifier: Apache-2.0
// babelqueue_reconnects_total on the real Kafka broker: a worker with the
// metrics middleware consumes through the robustness harness's fault proxy
// (tests/robustness/fault_proxy.py), which cuts every connection for two
// seconds; librdkafka connects again by itself, the worker goes on, and a
// scrape of the registry counts the reconnects under transport="kafka".
// The proxy listens on the port the broker's FAULT listener advertises (see
// run_fault.sh), so the clients never go around it. CTest runs it alone
// (RUN_SERIAL), as the fault runs that use the same port.
#include "broker_env.hpp"
#include "reconnect_metrics.hpp"

#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

// The fault proxy as a child process: forwards listen → target, quiet for
// the first seconds, then cuts every connection for a while, then forwards
// again until it is stopped.
class FaultProxy {
 public:
  FaultProxy(const std::string& listen_port, const std::string& target) {
    const std::string script = std::string(BQ_SOURCE_DIR) + "/tests/robustness/fault_proxy.py";
    std::vector<std::string> args = {"python3", script,   "--target", target,  "--listen", listen_port,
                                     "--fault", "none:5", "--fault",  "cut:2", "--fault",  "none:3600"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  ~FaultProxy() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// Whether something accepts connections on 127.0.0.1:port.
bool accepts_connections(const std::string& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

}  // namespace

TEST(KafkaReconnectMetrics, ConnectionsCutAndMadeAgainAreCountedPerTransport) {
  const auto info = bq::testing::broker_info("kafka");
  const auto proxy_port = info.find("fault_proxy_port");
  const auto listener_port = info.find("fault_listener_port");
  ASSERT_TRUE(proxy_port != info.end() && listener_port != info.end()) << "no fault listener in 'broker info kafka'";
  FaultProxy proxy(proxy_port->second, "127.0.0.1:" + listener_port->second);
  ASSERT_TRUE(proxy.started());
  ASSERT_TRUE(bq::testing::wait_until([&] { return accepts_connections(proxy_port->second); }, 10s))
      << "the proxy did not start";
  bq::kafka::register_transport();

  const std::string url = "kafka://127.0.0.1:" + proxy_port->second + "?group=reconnect-" + std::to_string(::getpid()) +
                          "&partitions=1&session_timeout=6s&publish_timeout=5s&request_timeout=2s"
                          "&connect_timeout=2s&reconnect_max=500ms";
  auto opened_consumer = bq::open_transport(url);
  ASSERT_TRUE(opened_consumer) << opened_consumer.error().message();
  auto opened_producer = bq::open_transport(url);
  ASSERT_TRUE(opened_producer) << opened_producer.error().message();
  std::unique_ptr<bq::Transport> consumer = std::move(*opened_consumer);
  std::unique_ptr<bq::Transport> producer = std::move(*opened_producer);
  const std::string queue = "reconnect-metrics-" + std::to_string(::getpid());
  bq::testing::MeteredWorker worker(*consumer, queue);

  bq::testing::publish_with_retry(*producer, queue, 1, 60s, 200ms);
  EXPECT_TRUE(bq::testing::wait_until([&] { return worker.handled() >= 1; }, 60s));
  EXPECT_EQ(consumer->connection_stats().transport, "kafka");

  // The cut comes five seconds after the proxy started and lasts two.
  EXPECT_TRUE(bq::testing::wait_until([&] { return consumer->connection_stats().reconnects >= 1; }, 40s))
      << "no reconnect counted after the connections were cut";
  bq::testing::publish_with_retry(*producer, queue, 2, 60s, 200ms);
  EXPECT_TRUE(bq::testing::wait_until([&] { return worker.handled() >= 2; }, 60s)) << "the worker did not resume";
  worker.stop();

  const auto reconnects = consumer->connection_stats().reconnects;
  EXPECT_GE(reconnects, 1U);
  const double counted =
      bq::testing::counter_value(worker.registry(), "babelqueue_reconnects_total", "transport", "kafka");
  EXPECT_GE(counted, 1.0);
  EXPECT_LE(counted, static_cast<double>(reconnects)) << "the metric counts what the transport reported";
  consumer->close();
  producer->close();
}
