// SPDX-License-Identifier: Apache-2.0
// Frame values at the ends of their types. A body whose attempts is the
// largest int64, a broker's delivery count as large, delays and deadlines of
// milliseconds::max(): every computation saturates, so such a message is
// given up (dead-lettered once) instead of wrapping around to a negative
// count and coming back for ever, and no deadline overflows. These tests run
// under UBSan in CI (label runtime), which fails any overflow.
#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/redrive.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <memory>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kTop = std::numeric_limits<std::int64_t>::max();
constexpr auto kForever = std::chrono::milliseconds::max();

std::string body_with_attempts(std::int64_t attempts, std::string_view queue = "orders") {
  bq::MakeOptions make;
  make.queue = std::string(queue);
  auto env = bq::Envelope::make("urn:a", bq::Object{{"n", 1}}, make).value();
  return env.encode_with_attempts(attempts).value();
}

std::string temp_sqlite_url() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("bq-limits-tests-" + bq::uuid_v4());
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    return d;
  }();
  return "sqlite://" + (dir / (bq::uuid_v4() + ".db")).string();
}

// A broker whose delivery count is as large as it gets.
class HugeDeliveryCount final : public bq::Transport {
 public:
  explicit HugeDeliveryCount(bq::Transport& inner, bq::AttemptsMerge merge) : inner_(inner), merge_(merge) {}
  bq::Capabilities capabilities() const override {
    auto caps = inner_.capabilities();
    caps.delivery_count = true;
    return caps;
  }
  bq::Result<void> publish(std::string_view q, std::string_view body, const bq::PublishOptions& o = {}) override {
    return inner_.publish(q, body, o);
  }
  bq::Result<std::vector<bq::Delivery>> receive(std::string_view q, std::size_t max,
                                                std::chrono::milliseconds wait) override {
    auto got = inner_.receive(q, max, wait);
    if (got) {
      for (auto& d : *got) {
        d.native_attempts = kTop;  // as a binding that read a count this large would say
        d.attempts_merge = merge_;
      }
    }
    return got;
  }
  bq::Result<void> ack(const bq::Delivery& d) override { return inner_.ack(d); }
  bq::Result<void> release(const bq::Delivery& d, std::chrono::milliseconds delay = {}) override {
    return inner_.release(d, delay);
  }
  void close(std::chrono::milliseconds deadline) override { inner_.close(deadline); }

 private:
  bq::Transport& inner_;
  bq::AttemptsMerge merge_;
};

bq::WorkerOptions dead_lettering() {
  bq::WorkerOptions options;
  options.default_queue = "orders";
  options.poll_timeout = 20ms;
  options.dead_letter = true;
  options.log = {};
  return options;
}

// The message is given up once: in the dead-letter queue with the largest
// attempts, the queue empty, the handler run once.
void expect_given_up_once(bq::Transport& transport, int runs, std::string_view reason = "failed") {
  EXPECT_EQ(runs, 1) << "a message at the top of the attempts range must not be retried";
  auto left = transport.receive("orders", 10, 50ms);
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty()) << "the message is still in its queue";
  auto dead = transport.receive("orders.dlq", 10, 200ms);
  ASSERT_TRUE(dead);
  ASSERT_EQ(dead->size(), 1U);
  auto env = bq::Envelope::decode(dead->front().body).value();
  EXPECT_EQ(env.attempts(), kTop);
  ASSERT_TRUE(env.dead_letter());
  EXPECT_EQ(env.dead_letter()->reason, reason);
}

}  // namespace

TEST(Saturating, Arithmetic) {
  EXPECT_EQ(bq::detail::next_attempts(kTop), kTop);
  EXPECT_EQ(bq::detail::next_attempts(41), 42);
  EXPECT_EQ(bq::detail::saturating_add(kTop, kTop), kTop);
  EXPECT_EQ(bq::detail::saturating_add(std::numeric_limits<std::int64_t>::min(), -1),
            std::numeric_limits<std::int64_t>::min());
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(bq::detail::saturating_after(now, kForever), std::chrono::steady_clock::time_point::max());
  EXPECT_EQ(bq::detail::saturating_after(now, 5ms), now + 5ms);
  EXPECT_EQ(bq::detail::saturating_seconds(1e300).count(), 9'200'000'000'000'000);
  EXPECT_EQ(bq::detail::saturating_seconds(std::numeric_limits<double>::quiet_NaN()).count(), 0);
  EXPECT_EQ(bq::detail::saturating_seconds(-3).count(), 0);
  EXPECT_EQ(bq::detail::saturating_seconds(1.5).count(), 1500);
}

TEST(TypeLimits, AFailingMessageWithTheLargestAttemptsIsDeadLetteredOnce) {
  bq::memory::Transport transport;
  ASSERT_TRUE(transport.publish("orders", body_with_attempts(kTop)));
  bq::Worker worker(transport, dead_lettering());
  int runs = 0;
  worker.handle("urn:a", [&](const bq::Message& m) -> bq::Result<void> {
    ++runs;
    EXPECT_EQ(m.attempts(), kTop);
    return bq::unexpected(bq::Errc::io, "fails");
  });
  ASSERT_TRUE(worker.drain("orders"));
  expect_given_up_once(transport, runs);
}

TEST(TypeLimits, AHandlersRetryOfTheLargestAttemptsIsDeadLetteredOnce) {
  bq::memory::Transport transport;
  ASSERT_TRUE(transport.publish("orders", body_with_attempts(kTop)));
  auto options = dead_lettering();
  options.retry_backoff = bq::BackoffPolicy{1ms, 1000.0, kForever, 0.0};
  bq::Worker worker(transport, options);
  int runs = 0;
  worker.handle("urn:a", [&](const bq::Message&) {
    ++runs;
    return bq::HandlerOutcome::retry(kForever, "later");
  });
  ASSERT_TRUE(worker.drain("orders"));
  expect_given_up_once(transport, runs);
}

TEST(TypeLimits, AnUnknownUrnOfTheLargestAttemptsIsDeadLetteredOnce) {
  bq::memory::Transport transport;
  ASSERT_TRUE(transport.publish("orders", body_with_attempts(kTop)));
  for (auto strategy : {bq::UnknownUrnStrategy::fail, bq::UnknownUrnStrategy::release}) {
    auto options = dead_lettering();
    options.unknown_urn = strategy;
    options.unknown_urn_release_delay = kForever;
    bq::Worker worker(transport, options);
    ASSERT_TRUE(worker.drain("orders"));
  }
  expect_given_up_once(transport, 1, "unknown_urn");
}

TEST(TypeLimits, TheLargestDeliveryCountOfABrokerIsDeadLetteredOnce) {
  for (auto merge : {bq::AttemptsMerge::max_with_body, bq::AttemptsMerge::authoritative}) {
    bq::memory::Transport inner;
    HugeDeliveryCount transport(inner, merge);
    ASSERT_TRUE(inner.publish("orders", body_with_attempts(0)));
    bq::Worker worker(transport, dead_lettering());
    int runs = 0;
    worker.handle("urn:a", [&](const bq::Message&) -> bq::Result<void> {
      ++runs;
      return bq::unexpected(bq::Errc::io, "fails");
    });
    ASSERT_TRUE(worker.drain("orders"));
    expect_given_up_once(inner, runs);
  }
}

// A dead letter of the largest attempts redrives as a fresh message.
TEST(TypeLimits, RedriveOfTheLargestAttemptsStartsAgainAtZero) {
  bq::memory::Transport transport;
  ASSERT_TRUE(transport.publish("orders", body_with_attempts(kTop)));
  bq::Worker worker(transport, dead_lettering());
  worker.handle("urn:a", [](const bq::Message&) -> bq::Result<void> { return bq::unexpected(bq::Errc::io, "x"); });
  ASSERT_TRUE(worker.drain("orders"));
  bq::RedriveOptions redrive;
  redrive.wait = 100ms;
  auto report = bq::redrive(transport, "orders.dlq", redrive);
  ASSERT_TRUE(report) << report.error().message();
  auto back = transport.receive("orders", 1, 200ms);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 1U);
  EXPECT_EQ(bq::Envelope::decode(back->front().body).value().attempts(), 0);
}

// A body just under the decode size limit fails and is dead-lettered: its
// dead-letter copy (the body plus the block) is over the limit, and redrive
// still reads it and puts the original back, which a consumer decodes. A
// dead letter whose body without the block is over the limit stays, saying
// why.
TEST(TypeLimits, ADeadLetterOverTheDecodeLimitRedrivesWhenItsOriginalFits) {
  const std::size_t limit = bq::DecodeOptions{}.max_bytes;
  bq::memory::Transport transport;
  std::string body = body_with_attempts(0);
  const std::string pad(limit - body.size() - 200, 'x');
  bq::MakeOptions make;
  make.queue = "orders";
  body = bq::Envelope::make("urn:a", bq::Object{{"pad", pad}}, make).value().body();
  ASSERT_LT(body.size(), limit);
  ASSERT_TRUE(transport.publish("orders", body));
  bq::Worker worker(transport, dead_lettering());
  worker.handle("urn:a", [](const bq::Message&) -> bq::Result<void> {
    return bq::unexpected(bq::Errc::io, std::string(400, 'e'));  // a long error: the block outgrows the margin
  });
  ASSERT_TRUE(worker.drain("orders"));
  auto dead = transport.peek("orders.dlq", 1);
  ASSERT_TRUE(dead);
  ASSERT_EQ(dead->size(), 1U);
  ASSERT_GT(dead->front().body.size(), limit) << "the dead-letter copy should be over the limit";

  bq::RedriveOptions redrive;
  redrive.wait = 100ms;
  auto report = bq::redrive(transport, "orders.dlq", redrive);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->redriven, 1U);
  auto back = transport.receive("orders", 1, 200ms);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 1U);
  auto decoded = bq::Envelope::decode(back->front().body);
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_FALSE(decoded->has_dead_letter());

  // An original over the limit (made by a producer without one): it stays.
  const std::string too_big(
      bq::Envelope::make("urn:a", bq::Object{{"pad", std::string(limit, 'x')}}, make).value().body());
  auto original = bq::Envelope::decode(too_big, bq::DecodeOptions{.max_bytes = too_big.size()});
  ASSERT_TRUE(original);
  ASSERT_TRUE(transport.publish(
      "orders.dlq",
      original->encode_dead_letter(bq::DeadLetter::make(bq::DeadLetterReason::failed, "orders", 3)).value()));
  report = bq::redrive(transport, "orders.dlq", redrive);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->redriven, 0U);
  ASSERT_EQ(report->items.size(), 1U);
  EXPECT_NE(report->items[0].note.find("too large to redrive"), std::string::npos) << report->items[0].note;
  EXPECT_EQ(transport.peek("orders.dlq", 1)->size(), 1U);
}

// Delays of "never" on the transports with native delay and no limit of
// their own: the message waits (delayed), nothing overflows.
TEST(TypeLimits, DelaysOfForeverWaitOnEveryTransportWithoutOverflow) {
  bq::sqlite::register_transport();
  std::vector<std::unique_ptr<bq::Transport>> transports;
  transports.push_back(std::make_unique<bq::memory::Transport>());
  transports.push_back(bq::open_transport(temp_sqlite_url()).value());
  for (auto& transport : transports) {
    bq::PublishOptions later;
    later.delay = kForever;
    ASSERT_TRUE(transport->publish("q", body_with_attempts(0, "q"), later));
    ASSERT_TRUE(transport->publish("q", body_with_attempts(0, "q")));
    auto got = transport->receive("q", 10, 50ms);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 1U);
    ASSERT_TRUE(transport->extend(got->front(), kForever));
    ASSERT_TRUE(transport->release(got->front(), kForever));
    auto none = transport->receive("q", 10, 50ms);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    auto stats = transport->stats("q");
    if (stats) {
      EXPECT_EQ(stats->delayed, 2);
    }
    // A receive that may wait for ever returns as soon as a message is there.
    ASSERT_TRUE(transport->publish("q", body_with_attempts(0, "q")));
    auto ready = transport->receive("q", 1, kForever);
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->size(), 1U);
  }
}

// Handing a message back for ever, and a worker whose every duration is at
// its largest: the run still stops when asked.
TEST(TypeLimits, AWorkerWithEveryDurationAtItsLargestStops) {
  bq::memory::Transport transport;
  bq::WorkerOptions options;
  options.default_queue = "orders";
  options.poll_timeout = 20ms;
  options.shutdown_deadline = kForever;
  options.lease_extension = kForever;
  options.release_delay_on_error = kForever;
  options.unknown_urn_release_delay = kForever;
  options.ack_linger = kForever;
  options.log = {};
  bq::Worker worker(transport, options);
  std::atomic<int> runs{0};
  worker.handle("urn:a", [&](const bq::Message&) {
    ++runs;
    throw bq::ReleaseDelivery(kForever, "not now");
  });
  ASSERT_TRUE(transport.publish("orders", body_with_attempts(0)));
  bq::RunLimits limits;
  limits.idle_exit = kForever;
  limits.unreachable_exit = kForever;
  std::thread stopper([&] {
    while (runs.load() == 0) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);
    worker.stop();
  });
  const auto start = std::chrono::steady_clock::now();
  auto summary = worker.run({}, limits);
  stopper.join();
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(worker.metrics().snapshot().released, 1U);
}
