// SPDX-License-Identifier: Apache-2.0
// An Artemis restart under an open transport: the broker is stopped and
// started again while a receive waits, a delivery is held and a publish is
// under way. The transport reconnects by itself: the publish completes once
// the broker is back, the waiting receive returns what arrives after the
// restart, the held delivery is gone (Errc::not_found) and comes back, and
// nothing durable is lost. Restarts the shared broker, so CTest runs it alone
// (RUN_SERIAL).
#include "artemis_test_env.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/error.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

void broker(const std::string& command) {
  bq::testing::run_command_output(bq::testing::broker_script() + " " + command + " artemis >/dev/null 2>&1");
}

std::string envelope(int n, const std::string& queue) {
  bq::MakeOptions make;
  make.queue = queue;
  return std::string(bq::Envelope::make("urn:test:reconnect", bq::Value::object({{"n", n}}), make).value().body());
}

struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;
};

std::unique_ptr<bq::artemis::Transport> open(Log& log) {
  // A short backoff ceiling: the reconnect comes within a second of the
  // broker being back. publish_timeout outlasts the outage.
  auto url = bq::Url::parse(bq::testing::artemis_url("reconnect_max=1s&publish_timeout=90s"));
  EXPECT_TRUE(url) << url.error().message();
  auto options = bq::artemis::Transport::options_from_url(*url);
  EXPECT_TRUE(options) << options.error().message();
  options->log = [&log](bq::LogLevel, std::string_view text) {
    const std::lock_guard lock(log.mutex);
    log.lines.emplace_back(text);
  };
  auto opened = bq::artemis::Transport::open(*options);
  EXPECT_TRUE(opened) << opened.error().message();
  return opened ? std::move(*opened) : nullptr;
}

}  // namespace

TEST(ArtemisReconnect, TheTransportCarriesOnAcrossABrokerRestart) {
  Log log;
  auto transport = open(log);
  ASSERT_TRUE(transport);
  const std::string q = bq::testing::unique_queue("reconnect");
  const std::string late = bq::testing::unique_queue("reconnect-late");

  for (int i = 0; i < 3; ++i) ASSERT_TRUE(transport->publish(q, envelope(i, q))) << "publish before the restart";
  // The three are durable on the broker: one held by us, the other two
  // buffered in the client under its credit.
  std::vector<bq::Delivery> first;
  const auto first_deadline = Clock::now() + 10s;
  while (first.empty() && Clock::now() < first_deadline) {
    auto got = transport->receive(q, 1, 1s);
    ASSERT_TRUE(got) << got.error().message();
    first = std::move(*got);
  }
  ASSERT_EQ(first.size(), 1U);
  const bq::Delivery held = first.front();

  // A receive that starts before the outage and waits through it.
  auto waiting = std::async(std::launch::async, [&] { return transport->receive(late, 1, 120s); });
  std::this_thread::sleep_for(500ms);  // the receiver on `late` is attached

  broker("stop");
  const std::string late_body = envelope(100, late);
  // A publish while the broker is away: it waits for the connection.
  auto publishing = std::async(std::launch::async, [&] {
    auto sent = transport->publish(late, late_body);
    return std::make_pair(std::move(sent), Clock::now());
  });
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(publishing.wait_for(0s), std::future_status::timeout) << "a publish finished with the broker away";
  broker("start");
  const auto back = Clock::now();

  auto [sent, sent_at] = publishing.get();
  ASSERT_TRUE(sent) << "the publish made during the outage: " << sent.error().message();
  EXPECT_LT(sent_at - back, 15s) << "the publish took too long after the broker was back";

  auto late_got = waiting.get();
  ASSERT_TRUE(late_got) << "the receive that waited through the outage: " << late_got.error().message();
  ASSERT_EQ(late_got->size(), 1U) << "the receive that waited through the outage returned nothing";
  EXPECT_EQ(late_got->front().body, late_body);
  EXPECT_TRUE(transport->ack(late_got->front()));

  // The held delivery belonged to the old connection.
  auto acked = transport->ack(held);
  ASSERT_FALSE(acked) << "an ack of a delivery of the dropped connection succeeded";
  EXPECT_EQ(acked.error().code(), bq::Errc::not_found) << acked.error().message();

  // All three come back, the held one included.
  std::multiset<int> numbers;
  const auto deadline = Clock::now() + 20s;
  while (numbers.size() < 3 && Clock::now() < deadline) {
    auto got = transport->receive(q, 3, 1s);
    ASSERT_TRUE(got) << got.error().message();
    for (const bq::Delivery& d : *got) {
      auto decoded = bq::Envelope::decode(d.body);
      ASSERT_TRUE(decoded);
      numbers.insert(static_cast<int>(decoded->data().find("n")->as_int64()));
      EXPECT_TRUE(transport->ack(d));
    }
  }
  EXPECT_EQ(numbers, (std::multiset<int>{0, 1, 2})) << "the messages held or buffered across the restart";

  // And the connection serves as before.
  ASSERT_TRUE(transport->publish(q, envelope(7, q)));
  auto again = transport->receive(q, 1, 10s);
  ASSERT_TRUE(again) << again.error().message();
  ASSERT_EQ(again->size(), 1U);
  EXPECT_TRUE(transport->ack(again->front()));

  const std::lock_guard lock(log.mutex);
  bool dropped = false;
  bool restored = false;
  for (const auto& line : log.lines) {
    dropped = dropped || line.find("reconnecting") != std::string::npos;
    restored = restored || line.find("is back") != std::string::npos;
  }
  EXPECT_TRUE(dropped && restored) << "the log should tell of the drop and the reconnect";
}
