// SPDX-License-Identifier: Apache-2.0
// RabbitMQ transport integration tests against the real broker. What the
// broker holds is read back with a plain rabbitmq-c client (rabbitmq_raw.hpp),
// never from the transport's own structures.
#include "../../src/rabbitmq/consumers.hpp"
#include "../../src/rabbitmq/delay_buckets.hpp"
#include "rabbitmq_raw.hpp"
#include "rabbitmq_test_env.hpp"
#include "reply_dropping_proxy.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bq = babelqueue;
namespace rmq = babelqueue::rabbitmq::testing;
using namespace std::chrono_literals;
using bq::rabbitmq::raw::Client;

namespace {

std::string envelope_body(const std::string& queue, std::int64_t attempts = 0) {
  bq::MakeOptions options;
  options.queue = queue;
  auto envelope = bq::Envelope::make("urn:test:orders:created", bq::Value::object({{"order_id", 42}}), options);
  if (!envelope) throw bq::Error(envelope.error());
  if (attempts == 0) return std::string(envelope->body());
  auto with = envelope->encode_with_attempts(attempts);
  if (!with) throw bq::Error(with.error());
  return *with;
}

Client raw_client() {
  auto client = Client::connect(rmq::url());
  if (!client) throw bq::Error(client.error());
  return std::move(*client);
}

// Polls the raw count of queue until it equals want or 5 s passed.
std::int64_t wait_count(Client& client, const std::string& queue, std::int64_t want,
                        std::chrono::milliseconds for_at_most = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + for_at_most;
  std::int64_t count = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    auto got = client.count(queue);
    count = got ? *got : -1;
    if (count == want) return count;
    std::this_thread::sleep_for(50ms);
  }
  return count;
}

TEST(RabbitmqTransport, EveryPropertyAndHeaderReadBackFromTheBroker) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("props");
  const std::string body = envelope_body(queue, 2);
  auto envelope = bq::Envelope::decode(body);
  ASSERT_TRUE(envelope);
  bq::PublishOptions options;
  options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                     {"x-attempts", "99"},  // collides with a contract key: the contract wins
                     {"empty", ""}};        // dropped
  ASSERT_TRUE(transport->publish(queue, body, options));

  Client client = raw_client();
  auto got = client.get(queue);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_TRUE(got->has_value());
  const auto& message = **got;
  EXPECT_EQ(message.body, body);
  EXPECT_EQ(message.properties.at("type"), "urn:test:orders:created");
  EXPECT_EQ(message.properties.at("correlation_id"), envelope->trace_id());
  EXPECT_EQ(message.properties.at("message_id"), envelope->id());
  EXPECT_EQ(message.properties.at("app_id"), "babelqueue");
  EXPECT_EQ(message.properties.at("content_type"), "application/json");
  EXPECT_EQ(message.properties.at("content_encoding"), "utf-8");
  EXPECT_EQ(message.delivery_mode, 2);
  EXPECT_EQ(std::get<std::int64_t>(message.headers.at("x-schema-version")), 1);
  EXPECT_EQ(message.header_kinds.at("x-schema-version"), 'I');
  EXPECT_EQ(std::get<std::string>(message.headers.at("x-source-lang")), envelope->lang());
  EXPECT_EQ(std::get<std::int64_t>(message.headers.at("x-attempts")), 2);
  EXPECT_EQ(message.header_kinds.at("x-attempts"), 'I');
  EXPECT_EQ(std::get<std::string>(message.headers.at("traceparent")), options.headers.at("traceparent"));
  EXPECT_FALSE(message.headers.contains("empty"));
  ASSERT_TRUE(client.delete_queue(queue));
}

TEST(RabbitmqTransport, ABodyThatIsNotAnEnvelopeGetsNoContractProjection) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("plain");
  ASSERT_TRUE(transport->publish(queue, "not json \xff"));
  Client client = raw_client();
  auto got = client.get(queue);
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->body, "not json \xff");
  EXPECT_FALSE((*got)->properties.contains("type"));
  EXPECT_FALSE((*got)->headers.contains("x-attempts"));
  EXPECT_EQ((*got)->delivery_mode, 2);
  ASSERT_TRUE(client.delete_queue(queue));
}

TEST(RabbitmqTransport, QueuesAreDeclaredLikeThePythonAndGoSdksDeclareThem) {
  // A plain durable declare with no arguments (what pika and amqp091-go send)
  // succeeds on a queue this transport created: no 406.
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("declare");
  ASSERT_TRUE(transport->publish(queue, envelope_body(queue)));
  Client client = raw_client();
  ASSERT_TRUE(client.publish_plain(queue, "x")) << "declaring durable, no arguments failed";
  EXPECT_EQ(wait_count(client, queue, 2), 2);
  ASSERT_TRUE(client.delete_queue(queue));
}

TEST(RabbitmqTransport, PublishReturnsOnlyOnceTheBrokerConfirmed) {
  auto transport = rmq::open_url(rmq::url() + "?max_in_flight=64");
  const std::string queue = rmq::unique_queue("confirm");
  std::vector<bq::OutgoingMessage> batch;
  for (int i = 0; i < 3000; ++i) batch.push_back({queue, envelope_body(queue), {}});
  ASSERT_TRUE(transport->publish_batch(batch));
  Client client = raw_client();
  // Confirmed means enqueued: the count is complete at once, no waiting.
  auto count = client.count(queue);
  ASSERT_TRUE(count);
  EXPECT_EQ(*count, 3000);
  ASSERT_TRUE(transport->publish(queue, "one more"));
  EXPECT_EQ(*client.count(queue), 3001);
  ASSERT_TRUE(client.delete_queue(queue));
}

TEST(RabbitmqTransport, AnUnroutableMessageIsAnErrorNotASilentDrop) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("unroutable");
  ASSERT_TRUE(transport->publish(queue, "first"));
  Client client = raw_client();
  ASSERT_TRUE(client.delete_queue(queue));  // behind the transport's back
  auto lost = transport->publish(queue, "second");
  ASSERT_FALSE(lost) << "a publish to a deleted queue must fail (mandatory)";
  EXPECT_EQ(lost.error().code(), bq::Errc::not_found);
  EXPECT_NE(lost.error().message().find(queue), std::string::npos) << lost.error().message();
  EXPECT_NE(lost.error().message().find("unroutable"), std::string::npos) << lost.error().message();
  EXPECT_EQ(lost.error().native_code(), "312 NO_ROUTE") << "the broker's own reply code is kept";
  EXPECT_FALSE(lost.error().retriable());
  // The next publish declares the queue again.
  ASSERT_TRUE(transport->publish(queue, "third"));
  EXPECT_EQ(wait_count(client, queue, 1), 1);
  ASSERT_TRUE(client.delete_queue(queue));
}

// The broker enqueued the message, its confirm never reached the client:
// the publish fails as outcome_unknown (it may be there), not as a timeout
// (which says it was not sent). A proxy swallows everything the broker sends
// after the first, confirmed publish.
TEST(RabbitmqTransport, APublishWhoseConfirmWasLostIsOutcomeUnknown) {
  const std::string queue = rmq::unique_queue("unknown");
  std::string url = rmq::url();  // amqp://user:password@127.0.0.1:PORT/vhost
  const std::size_t port_at = url.rfind(':') + 1;
  const std::size_t port_length = url.find('/', port_at) - port_at;
  bq::test_support::ReplyDroppingProxy proxy(std::stoi(url.substr(port_at, port_length)));
  url.replace(port_at, port_length, std::to_string(proxy.port()));
  auto transport = rmq::open_url(url + "?publish_timeout=1s");
  ASSERT_TRUE(transport->publish(queue, "confirmed"));
  proxy.drop_replies();
  auto unknown = transport->publish(queue, "unconfirmed");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), bq::Errc::outcome_unknown) << unknown.error().message();
  Client client = raw_client();
  EXPECT_EQ(wait_count(client, queue, 2), 2) << "the broker holds the message whose publish failed";
  transport->close(std::chrono::milliseconds(200));
  ASSERT_TRUE(client.delete_queue(queue));
}

TEST(RabbitmqTransport, ADelayedPublishWaitsInItsBucketQueueThenArrives) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("delay");
  const std::string bucket = bq::rabbitmq::detail::delay_bucket_queue(queue, 1500ms);
  EXPECT_EQ(bucket, queue + ".delay.1500");
  bq::PublishOptions delayed;
  delayed.delay = 1500ms;
  delayed.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(transport->publish(queue, envelope_body(queue), delayed));
  Client client = raw_client();
  EXPECT_EQ(*client.count(bucket), 1);
  EXPECT_EQ(*client.count(queue), 0);
  auto stats = transport->stats(queue);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->delayed, 1);
  auto received = transport->receive(queue, 1, 5s);
  ASSERT_TRUE(received);
  ASSERT_EQ(received->size(), 1U);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1450ms);
  EXPECT_EQ(received->front().headers.at("traceparent"), delayed.headers.at("traceparent"));
  EXPECT_FALSE(received->front().headers.contains("x-death")) << "broker bookkeeping is not an application header";
  ASSERT_TRUE(transport->ack(received->front()));
  EXPECT_EQ(bq::rabbitmq::detail::bucket_of(1234ms), 1300ms);
  EXPECT_EQ(bq::rabbitmq::detail::bucket_of(45678ms), 46000ms);
  EXPECT_EQ(bq::rabbitmq::detail::bucket_of(99ms), 99ms);
}

TEST(RabbitmqTransport, ReleaseRequeuesAndADelayedReleaseGoesThroughItsBucket) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("release");
  const std::string body = envelope_body(queue);
  ASSERT_TRUE(transport->publish(queue, body));
  auto first = transport->receive(queue, 1, 5s);
  ASSERT_TRUE(first && first->size() == 1);
  ASSERT_TRUE(transport->release(first->front()));
  auto second = transport->receive(queue, 1, 5s);
  ASSERT_TRUE(second && second->size() == 1);
  EXPECT_EQ(second->front().body, body);
  ASSERT_TRUE(transport->release(second->front(), 800ms));
  Client client = raw_client();
  EXPECT_EQ(*client.count(bq::rabbitmq::detail::delay_bucket_queue(queue, 800ms)), 1);
  auto stale = transport->ack(second->front());
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), bq::Errc::not_found);
  auto third = transport->receive(queue, 1, 5s);
  ASSERT_TRUE(third && third->size() == 1);
  EXPECT_EQ(third->front().body, body);
  ASSERT_TRUE(transport->ack(third->front()));
  transport->close();
  EXPECT_EQ(wait_count(client, queue, 0), 0);
}

TEST(RabbitmqTransport, TheWorkerDeadLettersToTheDlqAfterItsRetries) {
  bq::WorkerOptions options;
  const std::string queue = rmq::unique_queue("dlq");
  options.default_queue = queue;
  options.dead_letter = true;
  options.max_attempts = 2;
  options.poll_timeout = 200ms;
  bq::Worker worker(rmq::open_url(rmq::url()), options);
  EXPECT_EQ(worker.transport().dead_letter_queue(queue), queue + ".dlq");
  std::atomic<int> calls{0};
  worker.handle("urn:test:orders:created", [&](const bq::Message&) -> bq::Result<void> {
    ++calls;
    return bq::unexpected(bq::Errc::io, "handler always fails");
  });
  bq::PublishOptions headers;
  headers.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  ASSERT_TRUE(worker.transport().publish(queue, envelope_body(queue), headers));
  bq::RunLimits limits;
  limits.idle_exit = 1500ms;
  ASSERT_TRUE(worker.run({queue}, limits));
  EXPECT_EQ(calls.load(), 2);
  Client client = raw_client();
  auto dead = client.get(queue + ".dlq");
  ASSERT_TRUE(dead && dead->has_value());
  auto envelope = bq::Envelope::decode((*dead)->body);
  ASSERT_TRUE(envelope);
  ASSERT_TRUE(envelope->has_dead_letter());
  EXPECT_EQ(std::get<std::int64_t>((*dead)->headers.at("x-attempts")), 2);
  EXPECT_EQ(std::get<std::string>((*dead)->headers.at("traceparent")), headers.headers.at("traceparent"));
  EXPECT_EQ(*client.count(queue), 0);
  ASSERT_TRUE(client.delete_queue(queue));
  ASSERT_TRUE(client.delete_queue(queue + ".dlq"));
}

TEST(RabbitmqTransport, APoisonBodyIsDeadLetteredWithItsBytesKept) {
  const std::string queue = rmq::unique_queue("poison");
  const std::string poison = std::string("{\"job\": not an envelope \xc3\x28", 29);
  Client client = raw_client();
  ASSERT_TRUE(client.publish_plain(queue, poison));  // as a foreign producer would
  bq::WorkerOptions options;
  options.default_queue = queue;
  options.dead_letter = true;
  options.poll_timeout = 200ms;
  bq::Worker worker(rmq::open_url(rmq::url()), options);
  bq::RunLimits limits;
  limits.idle_exit = 1000ms;
  ASSERT_TRUE(worker.run({queue}, limits));
  EXPECT_EQ(worker.metrics().snapshot().poison, 1U);
  auto dead = client.get(queue + ".dlq");
  ASSERT_TRUE(dead && dead->has_value()) << "the poison message was not dead-lettered";
  EXPECT_EQ((*dead)->body, poison) << "the bytes must be kept";
  EXPECT_EQ(std::get<std::string>((*dead)->headers.at("bq-dead-letter-reason")), "poison");
  EXPECT_EQ(*client.count(queue), 0);
  ASSERT_TRUE(client.delete_queue(queue));
  ASSERT_TRUE(client.delete_queue(queue + ".dlq"));
}

// The consumer's QoS as the broker reports it: sized from the worker's
// concurrency through its prefetch, or set by the URL.
TEST(RabbitmqTransport, TheConsumerPrefetchIsSizedFromTheWorker) {
  auto prefetch_of = [](const std::string& queue) {
    const std::string listing = rmq::rabbitmqctl("list_consumers queue_name prefetch_count --no-table-headers --quiet");
    std::istringstream lines(listing);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(queue + "\t", 0) == 0) return std::stoi(line.substr(queue.size() + 1));
    }
    return -1;
  };
  const std::string worker_queue = rmq::unique_queue("qos-worker");
  bq::WorkerOptions options;
  options.default_queue = worker_queue;
  options.concurrency = 24;  // prefetch max(24, 16) = 24 -> QoS 8 x 24
  options.poll_timeout = 100ms;
  bq::Worker worker(rmq::open_url(rmq::url()), options);
  std::thread runner([&] {
    bq::RunLimits limits;
    limits.idle_exit = 1500ms;
    [[maybe_unused]] auto ran = worker.run({worker_queue}, limits);
  });
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(prefetch_of(worker_queue), 192);
  runner.join();

  auto fixed = rmq::open_url(rmq::url() + "?prefetch=7");
  const std::string fixed_queue = rmq::unique_queue("qos-fixed");
  ASSERT_TRUE(fixed->receive(fixed_queue, 100, 100ms));
  EXPECT_EQ(prefetch_of(fixed_queue), 7);
  EXPECT_EQ(bq::rabbitmq::detail::auto_prefetch(1), 128);
  EXPECT_EQ(bq::rabbitmq::detail::auto_prefetch(16), 128);
  EXPECT_EQ(bq::rabbitmq::detail::auto_prefetch(24), 192);
  Client client = raw_client();
  ASSERT_TRUE(client.delete_queue(worker_queue));
  ASSERT_TRUE(client.delete_queue(fixed_queue));
}

namespace {

// Publishes, receives and acks one message over the URL's connection.
void expect_a_round_trip(const std::string& url, const std::string& role) {
  auto transport = rmq::open_url(url);
  const std::string queue = rmq::unique_queue(role);
  ASSERT_TRUE(transport->publish(queue, envelope_body(queue)));
  auto received = transport->receive(queue, 1, 5s);
  ASSERT_TRUE(received && received->size() == 1);
  ASSERT_TRUE(transport->ack(received->front()));
}

}  // namespace

TEST(RabbitmqTransport, TlsWithVerificationWorks) { expect_a_round_trip(rmq::tls_url(), "tls"); }

TEST(RabbitmqTransport, TlsByIpAddressChecksTheCertificatesIpAddresses) {
  // The broker's certificate names DNS:localhost and IP:127.0.0.1; the URL
  // keeps the address.
  const std::string url = rmq::info("tls_url") + "?cacert=" + rmq::info("tls_ca");
  ASSERT_NE(url.find("@127.0.0.1:"), std::string::npos) << url;
  expect_a_round_trip(url, "tls-ip");
}

// amqps:// to the plain port: the broker answers the ClientHello with its
// AMQP header; that is said as such, and the CA is not blamed.
TEST(RabbitmqTransport, TlsToThePlainPortSaysSo) {
  bq::rabbitmq::register_transport();
  const std::string plain = rmq::info("url");
  const std::string port = rmq::info("port");
  std::string url = "amqps" + plain.substr(plain.find("://"));
  ASSERT_NE(url.find(":" + port + "/"), std::string::npos) << url;
  auto refused = bq::open_transport(url + "?connect_timeout=10&tls_ca=" + rmq::info("tls_ca"));
  ASSERT_FALSE(refused);
  const std::string& message = refused.error().message();
  EXPECT_EQ(refused.error().code(), bq::Errc::connection) << message;
  EXPECT_NE(message.find("the server did not answer TLS: is this a TLS port?"), std::string::npos) << message;
  EXPECT_EQ(message.find("tls_ca"), std::string::npos) << message;
}

namespace {

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = loopback(0);
  socklen_t length = sizeof(address);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

void wait_until_accepting(int port) {
  for (int i = 0; i < 100; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in address = loopback(port);
    const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    if (ok) return;
    std::this_thread::sleep_for(50ms);
  }
}

// A TLS server (openssl s_server) on 127.0.0.1 whose certificate, signed by
// its own CA, names DNS:localhost but no IP address. It speaks no AMQP.
class TlsServerWithoutIpName {
 public:
  TlsServerWithoutIpName() {
    dir_ = std::filesystem::temp_directory_path() / ("bq-no-ip-" + bq::uuid_v4().substr(0, 8));
    std::filesystem::create_directories(dir_);
    port_ = free_port();
    const std::string d = dir_.string();
    pid_ = std::stoi(bq::testing::run_command_output(
        "exec 2>/dev/null; cd " + d +
        " && "
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.crt && "
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key -out server.csr && "
        "printf 'subjectAltName=DNS:localhost\\n' > server.ext && "
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -set_serial 1 -days 1 -extfile server.ext "
        "-out server.crt && "
        "{ openssl s_server -quiet -accept 127.0.0.1:" +
        std::to_string(port_) +
        " -cert server.crt -key server.key </dev/null >/dev/null 2>&1 & echo $!; } 2>/dev/null"));
    wait_until_accepting(port_);
  }
  ~TlsServerWithoutIpName() {
    ::kill(pid_, SIGTERM);
    std::filesystem::remove_all(dir_);
  }
  TlsServerWithoutIpName(const TlsServerWithoutIpName&) = delete;
  TlsServerWithoutIpName& operator=(const TlsServerWithoutIpName&) = delete;

  std::string url(const std::string& host) const {
    return "amqps://guest:guest@" + host + ":" + std::to_string(port_) +
           "/%2F?connect_timeout=3&cacert=" + (dir_ / "ca.crt").string();
  }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  int pid_ = 0;
};

}  // namespace

TEST(RabbitmqTransport, AnIpAddressTheCertificateDoesNotNameIsRefused) {
  TlsServerWithoutIpName server;
  bq::rabbitmq::register_transport();
  auto by_address = bq::open_transport(server.url("127.0.0.1"));
  ASSERT_FALSE(by_address) << "a certificate without IP:127.0.0.1 must not pass for 127.0.0.1";
  EXPECT_EQ(by_address.error().code(), bq::Errc::auth) << by_address.error().message();
  EXPECT_NE(by_address.error().message().find("TLS handshake"), std::string::npos) << by_address.error().message();
  EXPECT_NE(by_address.error().message().find("IP address 127.0.0.1"), std::string::npos)
      << by_address.error().message();
  // By its DNS name the same certificate and CA pass the TLS check: the
  // failure that follows is the missing AMQP broker, not TLS.
  auto by_name = bq::open_transport(server.url("localhost"));
  ASSERT_FALSE(by_name);
  EXPECT_EQ(by_name.error().message().find("TLS handshake"), std::string::npos) << by_name.error().message();
}

TEST(RabbitmqTransport, TlsServerNameIsTheNameCheckedAgainstTheCertificate) {
  // The broker's certificate names DNS:localhost and IP:127.0.0.1.
  const std::string by_address = rmq::info("tls_url") + "?tls_ca=" + rmq::info("tls_ca");
  ASSERT_NE(by_address.find("@127.0.0.1:"), std::string::npos) << by_address;
  expect_a_round_trip(by_address + "&tls_server_name=localhost", "tls-name");
  expect_a_round_trip(rmq::tls_url("tls_server_name=127.0.0.1"), "tls-name-ip");
  // A name the certificate does not carry is refused, even though the
  // address it connects to is in the certificate.
  auto parsed = bq::Url::parse(by_address + "&tls_server_name=not-the-broker.example");
  ASSERT_TRUE(parsed);
  auto options = bq::rabbitmq::Transport::options_from_url(*parsed);
  ASSERT_TRUE(options) << options.error().message();
  auto refused = bq::rabbitmq::Transport::open(*options);
  ASSERT_FALSE(refused) << "a certificate that does not name tls_server_name must be refused";
  EXPECT_EQ(refused.error().code(), bq::Errc::auth) << refused.error().message();
  EXPECT_NE(refused.error().message().find("TLS handshake"), std::string::npos) << refused.error().message();
  EXPECT_NE(refused.error().message().find("host not-the-broker.example"), std::string::npos)
      << refused.error().message();
}

namespace {

// A TLS server (openssl s_server) on 127.0.0.1 that serves the certificate
// of broker.example only to a client that asks for that name by SNI, and
// ends any other handshake with a fatal alert. It speaks no AMQP.
class TlsServerBySni {
 public:
  TlsServerBySni() {
    dir_ = std::filesystem::temp_directory_path() / ("bq-sni-" + bq::uuid_v4().substr(0, 8));
    std::filesystem::create_directories(dir_);
    port_ = free_port();
    auto certificate = [](const std::string& name) {
      return "openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + name + ".key -out " + name +
             ".csr && printf 'subjectAltName=DNS:" + name + "\\n' > " + name + ".ext && openssl x509 -req -in " + name +
             ".csr -CA ca.crt -CAkey ca.key -set_serial 1 -days 1 -extfile " + name + ".ext -out " + name + ".crt && ";
    };
    pid_ = std::stoi(bq::testing::run_command_output(
        "exec 2>/dev/null; cd " + dir_.string() +
        " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.crt && " +
        certificate("other.example") + certificate("broker.example") +
        "{ openssl s_server -quiet -accept 127.0.0.1:" + std::to_string(port_) +
        " -cert other.example.crt -key other.example.key -servername broker.example -servername_fatal"
        " -cert2 broker.example.crt -key2 broker.example.key </dev/null >/dev/null 2>&1 & echo $!; } 2>/dev/null"));
    wait_until_accepting(port_);
  }
  ~TlsServerBySni() {
    ::kill(pid_, SIGTERM);
    std::filesystem::remove_all(dir_);
  }
  TlsServerBySni(const TlsServerBySni&) = delete;
  TlsServerBySni& operator=(const TlsServerBySni&) = delete;

  std::string url(const std::string& server_name) const {
    return "amqps://guest:guest@127.0.0.1:" + std::to_string(port_) +
           "/%2F?connect_timeout=2&tls_ca=" + (dir_ / "ca.crt").string() + "&tls_server_name=" + server_name;
  }

 private:
  std::filesystem::path dir_;
  int port_ = 0;
  int pid_ = 0;
};

}  // namespace

TEST(RabbitmqTransport, TlsServerNameIsSentAsSni) {
  TlsServerBySni server;
  bq::rabbitmq::register_transport();
  // The server picks its certificate by the SNI: the handshake passes only
  // if tls_server_name was sent, not the address connected to. What fails
  // afterwards is the missing AMQP broker, not TLS.
  auto by_sni = bq::open_transport(server.url("broker.example"));
  ASSERT_FALSE(by_sni);
  EXPECT_EQ(by_sni.error().message().find("TLS handshake"), std::string::npos) << by_sni.error().message();
  // Any other name gets the fatal alert.
  auto other = bq::open_transport(server.url("other.example"));
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("TLS handshake"), std::string::npos) << other.error().message();
}

TEST(RabbitmqTransport, AWrongCaIsRefusedWithAClearError) {
  const auto dir = std::filesystem::temp_directory_path() / ("bq-wrong-ca-" + bq::uuid_v4().substr(0, 8));
  std::filesystem::create_directories(dir);
  const std::string ca = (dir / "other-ca.crt").string();
  const std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=not-the-broker-ca -keyout " +
                              (dir / "other-ca.key").string() + " -out " + ca + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  auto parsed = bq::Url::parse(rmq::info("tls_url") + "?cacert=" + ca);
  ASSERT_TRUE(parsed);
  auto options = bq::rabbitmq::Transport::options_from_url(*parsed);
  ASSERT_TRUE(options);
  auto refused = bq::rabbitmq::Transport::open(*options);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(refused) << "a broker certificate the CA did not sign must be refused";
  EXPECT_EQ(refused.error().code(), bq::Errc::auth);
  EXPECT_NE(refused.error().message().find("TLS handshake"), std::string::npos) << refused.error().message();
  EXPECT_NE(refused.error().message().find(ca), std::string::npos) << refused.error().message();
}

TEST(RabbitmqTransport, WrongCredentialsAreRefusedWithAClearError) {
  std::string text = rmq::url();
  text.replace(text.find("guest:guest"), 11, "nobody:wrong");
  bq::rabbitmq::register_transport();
  auto refused = bq::open_transport(text);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::auth);
  EXPECT_NE(refused.error().message().find("refused login as user 'nobody'"), std::string::npos)
      << refused.error().message();
  EXPECT_EQ(refused.error().message().find("wrong"), std::string::npos) << "the password must not leak";
}

TEST(RabbitmqTransport, AnUnreachableBrokerIsAConnectionError) {
  bq::rabbitmq::register_transport();
  auto refused = bq::open_transport("amqp://guest:guest@127.0.0.1:1/%2F?connect_timeout=2");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::connection);
  EXPECT_NE(refused.error().message().find("127.0.0.1:1"), std::string::npos) << refused.error().message();
}

// Above max_message_size a publish fails before anything is sent, naming
// both sizes (the broker would close the channel after the bytes went out);
// a batch with one such message publishes nothing.
TEST(RabbitmqTransport, APublishAboveTheLimitFailsNamingBothSizes) {
  auto transport = rmq::open_url(rmq::url() + "?max_message_size=1000");
  const std::string queue = rmq::unique_queue("limit");
  const auto too_big = transport->publish(queue, std::string(1001, 'x'));
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(too_big.error().message().find("is 1001 bytes; RabbitMQ takes at most 1000 bytes (max_message_size)"),
            std::string::npos)
      << too_big.error().message();
  ASSERT_TRUE(transport->publish(queue, std::string(1000, 'x')));
  std::vector<bq::OutgoingMessage> batch{{queue, "small", {}}, {queue, std::string(2000, 'x'), {}}};
  const auto batched = transport->publish_batch(batch);
  ASSERT_FALSE(batched);
  EXPECT_NE(batched.error().message().find("message 1 of the batch"), std::string::npos) << batched.error().message();
  auto got = transport->receive(queue, 10, 1s);
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), 1U) << "only the 1000-byte message was published";
  EXPECT_EQ(got->front().body.size(), 1000U);
  EXPECT_TRUE(transport->ack(got->front()));
}

TEST(RabbitmqTransport, UnknownUrlParametersAreRefused) {
  auto parsed = bq::Url::parse("amqp://guest:guest@127.0.0.1/%2F?prefech=4");
  ASSERT_TRUE(parsed);
  auto options = bq::rabbitmq::Transport::options_from_url(*parsed);
  ASSERT_FALSE(options);
  EXPECT_NE(options.error().message().find("prefech"), std::string::npos);
}

TEST(RabbitmqTransport, ReconnectsAfterTheConnectionIsDroppedAndNeverAcksOnTheNewChannel) {
  const std::string name = "bq-test-reconnect-" + bq::uuid_v4().substr(0, 8);
  auto transport = rmq::open_url(rmq::url() + "?reconnect_min=0.05&reconnect_max=0.5&connection_name=" + name);
  const std::string queue = rmq::unique_queue("reconnect");
  ASSERT_TRUE(transport->publish(queue, "held"));
  auto held = transport->receive(queue, 1, 5s);
  ASSERT_TRUE(held && held->size() == 1);
  rmq::close_connections_named(name);
  // The delivery belonged to the lost channel: the broker requeued it, so it
  // comes back, and the old token settles nothing.
  std::vector<bq::Delivery> again;
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (again.empty() && std::chrono::steady_clock::now() < deadline) {
    auto received = transport->receive(queue, 1, 500ms);
    if (received) again = std::move(*received);
  }
  ASSERT_EQ(again.size(), 1U) << "the requeued message did not come back after the reconnect";
  EXPECT_EQ(again.front().body, "held");
  auto stale = transport->ack(held->front());
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), bq::Errc::not_found);
  ASSERT_TRUE(transport->ack(again.front()));
  EXPECT_GE(transport->reconnects(), 1U);
  ASSERT_TRUE(transport->publish(queue, "after the reconnect"));
  auto after = transport->receive(queue, 1, 5s);
  ASSERT_TRUE(after && after->size() == 1);
  ASSERT_TRUE(transport->ack(after->front()));
}

TEST(RabbitmqTransport, PublishesCaughtByADroppedConnectionAreSentAgain) {
  const std::string name = "bq-test-republish-" + bq::uuid_v4().substr(0, 8);
  auto transport = rmq::open_url(rmq::url() + "?reconnect_min=0.05&reconnect_max=0.5&connection_name=" + name);
  const std::string queue = rmq::unique_queue("republish");
  std::atomic<bool> stop{false};
  std::atomic<int> published{0};
  std::atomic<int> failures{0};
  std::chrono::milliseconds slowest{0};
  std::thread publisher([&] {
    for (int i = 0; !stop.load(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      if (transport->publish(queue, "m" + std::to_string(i))) {
        ++published;
      } else {
        ++failures;
      }
      slowest = std::max(
          slowest, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start));
    }
  });
  while (published.load() < 300) std::this_thread::sleep_for(5ms);
  rmq::close_connections_named(name);
  const int before_reconnect = published.load();
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (transport->reconnects() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  while (published.load() < before_reconnect + 300 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  stop = true;
  publisher.join();
  const int kMessages = published.load();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(kMessages, before_reconnect + 300) << "publishing did not resume after the reconnect";
  EXPECT_LT(slowest, 10s) << "a publish waited for its timeout instead of being sent again";
  EXPECT_GE(transport->reconnects(), 1U);
  Client client = raw_client();
  // Every confirmed message is there; one caught unconfirmed by the drop may
  // be there twice (sent again after the reconnect).
  auto count = client.count(queue);
  ASSERT_TRUE(count);
  EXPECT_GE(*count, kMessages);
  EXPECT_LE(*count, kMessages + 1);
  ASSERT_TRUE(client.delete_queue(queue));
}

namespace {

// The lines a transport logged, for the test below.
class Captured {
 public:
  bq::LogSink sink() {
    return [this](bq::LogLevel level, std::string_view line) {
      const std::lock_guard lock(mutex_);
      lines_.emplace_back(level, std::string(line));
    };
  }
  std::string text() {
    const std::lock_guard lock(mutex_);
    std::string all;
    for (const auto& line : lines_) all += line.second + "\n";
    return all;
  }
  // How many lines start with start, at level.
  int count(bq::LogLevel level, const std::string& start) {
    const std::lock_guard lock(mutex_);
    return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), [&](const auto& line) {
      return line.first == level && line.second.rfind(start, 0) == 0;
    }));
  }
  // Waits until more than already lines start with start, at level.
  bool wait_for(bq::LogLevel level, const std::string& start, int already = 0) {
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (count(level, start) <= already) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<bq::LogLevel, std::string>> lines_;
};

// A broker user of the test's own (other tests share the broker and its
// guest user), deleted at the end.
class BrokerUser {
 public:
  BrokerUser(std::string name, const std::string& password) : name_(std::move(name)) {
    rmq::rabbitmqctl("add_user '" + name_ + "' '" + password + "'");
    rmq::rabbitmqctl("set_permissions -p / '" + name_ + "' '.*' '.*' '.*'");
  }
  ~BrokerUser() { rmq::rabbitmqctl("delete_user '" + name_ + "'"); }
  BrokerUser(const BrokerUser&) = delete;
  BrokerUser& operator=(const BrokerUser&) = delete;

  void change_password(const std::string& password) const {
    rmq::rabbitmqctl("change_password '" + name_ + "' '" + password + "'");
  }

 private:
  std::string name_;
};

}  // namespace

TEST(RabbitmqTransport, ConnectsLossesFailedAttemptsReconnectsAndGiveUpsAreLogged) {
  const std::string id = bq::uuid_v4().substr(0, 8);
  const std::string password = "log-secret-" + id;
  const std::string other_password = "log-other-secret-" + id;
  const BrokerUser user("bq-log-" + id, password);
  const std::string name = "bq-test-log-" + id;
  std::string text = rmq::url();
  text.replace(text.find("guest:guest"), 11, "bq-log-" + id + ":" + password);
  auto parsed = bq::Url::parse(text + "?reconnect_min=50ms&reconnect_max=200ms&connection_name=" + name);
  ASSERT_TRUE(parsed);
  auto options = bq::rabbitmq::Transport::options_from_url(*parsed);
  ASSERT_TRUE(options) << options.error().message();
  const std::string broker = "amqp://" + options->host + ":" + std::to_string(options->port);
  Captured captured;
  options->log = captured.sink();
  auto transport = bq::rabbitmq::Transport::open(*options);
  ASSERT_TRUE(transport) << transport.error().message();
  EXPECT_EQ(captured.count(bq::LogLevel::info, "rabbitmq: connected to " + broker + " (vhost /)"), 1)
      << captured.text();

  // The connection drops and the broker refuses the password meanwhile:
  // failed attempts, then a reconnect once it takes it again.
  const std::string failed = "rabbitmq: reconnect attempt ";
  user.change_password(other_password);
  rmq::close_connections_named(name);
  EXPECT_TRUE(captured.wait_for(bq::LogLevel::warning, "rabbitmq: connection to " + broker + " lost ("))
      << captured.text();
  ASSERT_TRUE(captured.wait_for(bq::LogLevel::warning, failed + "1 to " + broker + " failed, next in "))
      << captured.text();
  user.change_password(password);
  EXPECT_TRUE(captured.wait_for(bq::LogLevel::info, "rabbitmq: reconnected to " + broker + " (vhost /, after "))
      << captured.text();
  EXPECT_EQ((*transport)->reconnects(), 1U);

  // Dropped again, and closed while it cannot get back: it gives up.
  const int failed_before = captured.count(bq::LogLevel::warning, failed);
  user.change_password(other_password);
  rmq::close_connections_named(name);
  ASSERT_TRUE(captured.wait_for(bq::LogLevel::warning, failed, failed_before)) << captured.text();
  (*transport)->close();
  EXPECT_EQ(
      captured.count(bq::LogLevel::warning, "rabbitmq: closed while reconnecting to " + broker + "; giving up after "),
      1)
      << captured.text();

  const std::string all = captured.text();
  EXPECT_EQ(all.find(password), std::string::npos) << "the password must not be logged:\n" << all;
  EXPECT_EQ(all.find(other_password), std::string::npos) << all;
}

TEST(RabbitmqTransport, HeartbeatsKeepAnIdleConnectionAlive) {
  auto transport = rmq::open_url(rmq::url() + "?heartbeat=1");
  const std::string queue = rmq::unique_queue("heartbeat");
  ASSERT_TRUE(transport->publish(queue, "before"));
  // Idle for several heartbeat timeouts: the broker would close a connection
  // that missed two heartbeats.
  std::this_thread::sleep_for(4s);
  ASSERT_TRUE(transport->publish(queue, "after"));
  EXPECT_EQ(transport->reconnects(), 0U) << "the connection was dropped while idle";
  Client client = raw_client();
  EXPECT_EQ(*client.count(queue), 2);
  ASSERT_TRUE(client.delete_queue(queue));
}

TEST(RabbitmqTransport, ManyThreadsPublishAndConsumeThroughOneTransport) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("threads");
  constexpr int kThreads = 8;
  constexpr int kEach = 250;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!transport->publish(queue, std::to_string(t) + "-" + std::to_string(i))) ++failures;
      }
    });
  }
  std::mutex mutex;
  std::multiset<std::string> seen;
  for (int c = 0; c < 3; ++c) {
    threads.emplace_back([&] {
      const auto deadline = std::chrono::steady_clock::now() + 30s;
      while (std::chrono::steady_clock::now() < deadline) {
        {
          std::lock_guard lock(mutex);
          if (seen.size() >= kThreads * kEach) return;
        }
        auto batch = transport->receive(queue, 8, 100ms);
        if (!batch) {
          ++failures;
          return;
        }
        for (const bq::Delivery& delivery : *batch) {
          if (!transport->ack(delivery)) ++failures;
          std::lock_guard lock(mutex);
          seen.insert(delivery.body);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kThreads * kEach));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size()) << "a message was delivered twice";
  transport->close();
  Client client = raw_client();
  EXPECT_EQ(wait_count(client, queue, 0), 0);
  ASSERT_TRUE(client.delete_queue(queue));
}

TEST(RabbitmqTransport, AQuorumQueueReportsTheNativeDeliveryCount) {
  auto transport = rmq::open_url(rmq::url() + "?queue_type=quorum");
  EXPECT_TRUE(transport->capabilities().delivery_count);
  const std::string queue = rmq::unique_queue("quorum");
  ASSERT_TRUE(transport->publish(queue, envelope_body(queue)));
  for (std::int64_t expected = 0; expected < 3; ++expected) {
    auto received = transport->receive(queue, 1, 5s);
    ASSERT_TRUE(received && received->size() == 1);
    ASSERT_TRUE(received->front().native_attempts.has_value());
    EXPECT_EQ(*received->front().native_attempts, expected);
    if (expected < 2) {
      ASSERT_TRUE(transport->release(received->front()));
    } else {
      ASSERT_TRUE(transport->ack(received->front()));
    }
  }
  // A classic declare of the quorum queue fails: queue types never mix.
  auto classic = rmq::open_url(rmq::url());
  auto mixed = classic->publish(queue, "x");
  ASSERT_FALSE(mixed);
  EXPECT_NE(mixed.error().message().find("PRECONDITION_FAILED"), std::string::npos) << mixed.error().message();
  // ...and the transport keeps working on other queues after the 406.
  const std::string other = rmq::unique_queue("after-406");
  ASSERT_TRUE(classic->publish(other, "y"));
  Client client = raw_client();
  ASSERT_TRUE(client.delete_queue(queue));
  ASSERT_TRUE(client.delete_queue(other));
}

}  // namespace
