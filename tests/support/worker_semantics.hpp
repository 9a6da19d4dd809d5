// SPDX-License-Identifier: Apache-2.0
// The runtime semantics suite (SPEC §6–§8): every behaviour of the Worker —
// success, failure, retries, dead letters, poison, unknown URNs, headers,
// backoff, concurrency, shutdown, typed messages, redrive — on a real
// transport, with every failure path keeping the message.
//
// Include it from exactly one .cpp of a test program and instantiate it:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, WorkerTest, testing::Values(SemanticsTarget{"sqlite", open_fn}),
//                            SemanticsTarget::name_of);
//
// open() must return a transport on which the suite's queues ("orders",
// "orders.dlq", ...) are empty: a fresh broker, or a fresh QueueNamespace
// (queue_namespace.hpp) over a shared one.
#pragma once

#include "fault_injecting_transport.hpp"

#include <babelqueue/redrive.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace babelqueue::test_support {

struct SemanticsTarget {
  std::string name;  // the test name suffix: letters, digits and '_'
  std::function<Result<std::unique_ptr<Transport>>()> open;

  static std::string name_of(const ::testing::TestParamInfo<SemanticsTarget>& info) { return info.param.name; }
};

inline void PrintTo(const SemanticsTarget& target, std::ostream* out) { *out << target.name; }

}  // namespace babelqueue::test_support

// In the global namespace so that INSTANTIATE_TEST_SUITE_P can name it.
namespace worker_semantics {

namespace bq = babelqueue;
using bq::test_support::FaultInjectingTransport;
using namespace std::chrono_literals;

class WorkerTest : public testing::TestWithParam<bq::test_support::SemanticsTarget> {
 protected:
  void SetUp() override {
    auto opened = GetParam().open();
    ASSERT_TRUE(opened) << opened.error().message();
    faulty_ = std::make_unique<FaultInjectingTransport>(std::move(*opened));
  }

  bq::WorkerOptions options() {
    bq::WorkerOptions o;
    o.default_queue = "orders";
    o.poll_timeout = 100ms;
    o.release_delay_on_error = 300ms;
    o.log = [this](bq::LogLevel, std::string_view m) {
      std::lock_guard lock(log_mutex_);
      logs_.emplace_back(m);
    };
    return o;
  }

  bq::Transport& transport() { return *faulty_; }
  FaultInjectingTransport& faulty() { return *faulty_; }

  // Takes every message of queue (acking it) and returns the deliveries.
  // The first receive waits longer: on a busy machine a broker's first
  // answer for a queue (Artemis attaches a link to it) can take more than
  // the 50 ms that show a queue drained.
  std::vector<bq::Delivery> take_all(std::string_view queue) {
    std::vector<bq::Delivery> out;
    for (bool first = true;; first = false) {
      auto batch = faulty_->inner().receive(queue, 100, first ? 500ms : 50ms);
      if (!batch || batch->empty()) return out;
      for (auto& d : *batch) {
        EXPECT_TRUE(faulty_->inner().ack(d));
        out.push_back(std::move(d));
      }
    }
  }

  std::string publish_raw(std::string_view queue, std::string body, bq::Headers headers = {}) {
    bq::PublishOptions o;
    o.headers = std::move(headers);
    EXPECT_TRUE(transport().publish(queue, body, o));
    return body;
  }

  std::unique_ptr<FaultInjectingTransport> faulty_;
  std::mutex log_mutex_;
  std::vector<std::string> logs_;
};

inline bq::Envelope decode(std::string_view body) { return bq::Envelope::decode(body).value(); }

// ---- success and failure ---------------------------------------------------------

TEST_P(WorkerTest, SuccessAcksEveryMessage) {
  bq::Worker worker(transport(), options());
  std::vector<std::int64_t> seen;
  worker.handle("urn:babel:orders:created",
                [&](const bq::Message& m) { seen.push_back(m.envelope().data()["order_id"].as_int64()); });
  for (int i = 1; i <= 3; ++i)
    ASSERT_TRUE(worker.publish("urn:babel:orders:created", bq::Value::object({{"order_id", i}})));
  EXPECT_EQ(worker.drain("orders").value(), 3U);
  EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_TRUE(take_all("orders").empty());
  EXPECT_EQ(worker.metrics().snapshot().succeeded, 3U);
}

TEST_P(WorkerTest, HandlerThrowsRetriesThenDeadLettersWithTheCause) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  std::vector<std::int64_t> attempts;
  worker.handle("urn:babel:orders:created", [&](const bq::Message& m) {
    attempts.push_back(m.attempts());
    throw std::runtime_error("payment gateway timeout");
  });
  const std::string id = worker.publish("urn:babel:orders:created", bq::Value::object({{"order_id", 1042}})).value();
  for (int i = 0; i < 5; ++i) (void)worker.drain("orders");
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{0, 1, 2}));
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  auto env = decode(dlq[0].body);
  EXPECT_EQ(env.id(), id);
  EXPECT_EQ(env.attempts(), 3);
  EXPECT_EQ(env.data_json(), R"({"order_id":1042})");
  auto block = env.dead_letter().value();
  EXPECT_EQ(block.reason, "failed");
  EXPECT_EQ(block.error, "payment gateway timeout");
  EXPECT_EQ(block.exception, "std::runtime_error");
  EXPECT_EQ(block.original_queue, "orders");
  EXPECT_EQ(block.attempts, 3);
  EXPECT_EQ(block.lang, "cpp");
  EXPECT_TRUE(take_all("orders").empty());
}

TEST_P(WorkerTest, AnErrorResultIsAFailureToo) {
  bq::Worker worker(transport(), options());
  int calls = 0;
  worker.handle("urn:a", [&](const bq::Message&) -> bq::Result<void> {
    if (++calls == 1) return bq::unexpected(bq::Errc::broker, "downstream said no");
    return {};
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  (void)worker.drain("orders");
  (void)worker.drain("orders");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(worker.metrics().snapshot().retried, 1U);
  EXPECT_EQ(worker.metrics().snapshot().succeeded, 1U);
}

TEST_P(WorkerTest, WithoutDeadLetteringAnExhaustedMessageIsDroppedAndLogged) {
  auto o = options();
  o.max_attempts = 2;
  bq::Worker worker(transport(), o);
  int calls = 0;
  worker.handle("urn:a", [&](const bq::Message&) {
    ++calls;
    throw std::runtime_error("no");
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  for (int i = 0; i < 3; ++i) (void)worker.drain("orders");
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(take_all("orders").empty());
  EXPECT_TRUE(take_all("orders.dlq").empty());
  EXPECT_EQ(worker.metrics().snapshot().dropped, 1U);
}

TEST_P(WorkerTest, AnEmptyLogSinkSilencesTheWorker) {
  auto o = options();
  o.max_attempts = 1;
  o.log = {};  // the drop below logs a warning: with no sink it is skipped
  bq::Worker worker(transport(), o);
  worker.handle("urn:a", [](const bq::Message&) { throw std::runtime_error("no"); });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  for (int i = 0; i < 2; ++i) (void)worker.drain("orders");
  EXPECT_EQ(worker.metrics().snapshot().dropped, 1U);
}

TEST_P(WorkerTest, NonStandardExceptionsAreIsolated) {
  auto o = options();
  o.max_attempts = 1;
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  int ok = 0;
  worker.handle("urn:bad", [](const bq::Message&) { throw 42; });
  worker.handle("urn:good", [&](const bq::Message&) { ++ok; });
  ASSERT_TRUE(worker.publish("urn:bad", {}));
  ASSERT_TRUE(worker.publish("urn:good", {}));
  EXPECT_EQ(worker.drain("orders").value(), 2U);
  EXPECT_EQ(ok, 1);
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(decode(dlq[0].body).dead_letter()->exception, "int");
}

// ---- the publish that follows a failure can fail too: nothing is lost -------

TEST_P(WorkerTest, RetryPublishFailureKeepsTheMessage) {
  bq::Worker worker(transport(), options());
  int calls = 0;
  worker.handle("urn:a", [&](const bq::Message&) {
    if (++calls == 1) throw std::runtime_error("first try fails");
  });
  ASSERT_TRUE(worker.publish("urn:a", bq::Value::object({{"n", 1}})));
  faulty().fail_next_publishes(1, bq::Errc::connection, "orders");
  (void)worker.drain("orders");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(faulty().injected_failures(), 1U);
  EXPECT_EQ(worker.metrics().snapshot().released, 1U);
  // The original is back in the queue after the release delay, unchanged
  // (attempts still 0), and gets its retry.
  std::this_thread::sleep_for(400ms);
  auto back = faulty().inner().receive("orders", 10, 200ms).value();
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(decode(back[0].body).attempts(), 0);
  ASSERT_TRUE(faulty().inner().release(back[0]));
  (void)worker.drain("orders");
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(take_all("orders").empty());
}

TEST_P(WorkerTest, DeadLetterPublishFailureKeepsTheMessage) {
  auto o = options();
  o.max_attempts = 1;
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  worker.handle("urn:a", [](const bq::Message&) { throw std::runtime_error("always"); });
  const std::string id = worker.publish("urn:a", {}).value();
  faulty().fail_next_publishes(1, bq::Errc::connection, "orders.dlq");
  (void)worker.drain("orders");
  EXPECT_TRUE(take_all("orders.dlq").empty());
  std::this_thread::sleep_for(400ms);
  auto back = faulty().inner().receive("orders", 10, 200ms).value();
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(decode(back[0].body).id(), id);
  ASSERT_TRUE(faulty().inner().release(back[0]));
  (void)worker.drain("orders");
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(decode(dlq[0].body).id(), id);
}

TEST_P(WorkerTest, PoisonDeadLetterPublishFailureKeepsTheBytes) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  publish_raw("orders", "definitely not json");
  faulty().fail_next_publishes(1, bq::Errc::connection, "orders.dlq");
  (void)worker.drain("orders");
  EXPECT_TRUE(take_all("orders.dlq").empty());
  std::this_thread::sleep_for(400ms);
  auto back = take_all("orders");
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(back[0].body, "definitely not json");
}

// ---- poison -----------------------------------------------------------------------

TEST_P(WorkerTest, PoisonNeverReachesAHandlerAndKeepsItsBytes) {
  auto o = options();
  o.dead_letter = true;
  std::vector<std::string> hooked;
  o.hooks.on_poison = [&](const bq::PoisonEvent& e) { hooked.emplace_back(bq::to_string(e.reason)); };
  bq::Worker worker(transport(), o);
  int calls = 0;
  worker.handle("urn:babel:orders:created", [&](const bq::Message&) { ++calls; });
  const std::string not_json = publish_raw("orders", "{\"job\":");
  const std::string array = publish_raw("orders", "[1,2,3]");
  const std::string v2 = publish_raw(
      "orders",
      R"({"job":"urn:babel:orders:created","trace_id":"t","data":{},"meta":{"schema_version":2},"attempts":0})");
  const std::string no_urn = publish_raw("orders", R"({"trace_id":"t","data":{},"meta":{"schema_version":1}})");
  EXPECT_EQ(worker.drain("orders").value(), 4U);
  EXPECT_EQ(calls, 0);
  // A transport that projects meta.schema_version onto the broker (Artemis,
  // Kafka, ...) rejects the v2 message at its gate, before decoding; the
  // others reject it when the body is decoded.
  ASSERT_EQ(hooked.size(), 4U);
  if (hooked[2] == "schema_version_gate") hooked[2] = "unsupported_schema_version";
  EXPECT_EQ(hooked,
            (std::vector<std::string>{"invalid_json", "not_an_object", "unsupported_schema_version", "missing_urn"}));
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 4U);
  std::vector<std::string> bodies;
  for (const auto& d : dlq) {
    bodies.push_back(d.body);
    if (transport().capabilities().headers) {
      EXPECT_EQ(d.headers.at("bq-dead-letter-reason"), "poison");
    }
  }
  // Not an object: forwarded byte for byte (the reason rides in a header).
  EXPECT_NE(std::find(bodies.begin(), bodies.end(), not_json), bodies.end());
  EXPECT_NE(std::find(bodies.begin(), bodies.end(), array), bodies.end());
  // Objects keep every byte and gain the block before their closing brace.
  for (const std::string& original : {v2, no_urn}) {
    const std::string head = original.substr(0, original.size() - 1);
    auto it = std::find_if(bodies.begin(), bodies.end(), [&](const std::string& b) { return b.rfind(head, 0) == 0; });
    ASSERT_NE(it, bodies.end()) << original;
    auto block = decode(*it).dead_letter().value();
    EXPECT_EQ(block.reason, "poison");
    EXPECT_EQ(block.lang, "cpp");
  }
  EXPECT_TRUE(take_all("orders").empty());
}

TEST_P(WorkerTest, PoisonWithoutDeadLetteringIsAckedAndReported) {
  auto o = options();
  int hooked = 0;
  o.hooks.on_poison = [&](const bq::PoisonEvent& e) {
    ++hooked;
    EXPECT_FALSE(e.dead_lettered);
    EXPECT_EQ(e.body, "garbage");
  };
  bq::Worker worker(transport(), o);
  publish_raw("orders", "garbage");
  (void)worker.drain("orders");
  EXPECT_TRUE(take_all("orders").empty());
  if (transport().capabilities().broker_dead_letter_policy) {
    // Released to the broker's own dead-letter policy, which moves it after
    // its redelivery limit: reported on each delivery until then.
    EXPECT_GE(hooked, 1);
    EXPECT_EQ(worker.metrics().snapshot().poison, static_cast<std::uint64_t>(hooked));
  } else {
    EXPECT_EQ(hooked, 1);
    EXPECT_EQ(worker.metrics().snapshot().poison, 1U);
  }
}

// ---- unknown URNs ----------------------------------------------------------------

TEST_P(WorkerTest, UnknownUrnFailRetriesThenDeadLettersAsUnknownUrn) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  ASSERT_TRUE(worker.publish("urn:nobody:handles:this", {}));
  for (int i = 0; i < 4; ++i) (void)worker.drain("orders");
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  auto env = decode(dlq[0].body);
  EXPECT_EQ(env.attempts(), 3);
  EXPECT_EQ(env.dead_letter()->reason, "unknown_urn");
  EXPECT_EQ(worker.metrics().snapshot().unknown_urn, 3U);
}

TEST_P(WorkerTest, UnknownUrnDeleteAcks) {
  auto o = options();
  o.dead_letter = true;
  o.unknown_urn = bq::UnknownUrnStrategy::drop;
  bq::Worker worker(transport(), o);
  ASSERT_TRUE(worker.publish("urn:nobody", {}));
  (void)worker.drain("orders");
  EXPECT_TRUE(take_all("orders").empty());
  EXPECT_TRUE(take_all("orders.dlq").empty());
}

TEST_P(WorkerTest, UnknownUrnReleaseIsDelayedAndBounded) {
  auto o = options();
  o.dead_letter = true;
  o.unknown_urn = bq::UnknownUrnStrategy::release;
  o.unknown_urn_release_delay = 300ms;
  bq::Worker worker(transport(), o);
  ASSERT_TRUE(worker.publish("urn:nobody", {}));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  // Released with a delay: not there at once, there after the delay.
  EXPECT_TRUE(faulty().inner().receive("orders", 1, 0ms).value().empty());
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(worker.drain("orders").value(), 1U);  // third delivery: attempts exhausted
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(decode(dlq[0].body).dead_letter()->reason, "unknown_urn");
}

TEST_P(WorkerTest, UnknownUrnDeadLetterGoesStraightThereOrIsDeletedWithoutADlq) {
  auto o = options();
  o.dead_letter = true;
  o.unknown_urn = bq::UnknownUrnStrategy::dead_letter;
  {
    bq::Worker worker(transport(), o);
    ASSERT_TRUE(worker.publish("urn:nobody", {}));
    (void)worker.drain("orders");
  }
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(decode(dlq[0].body).attempts(), 0);
  EXPECT_EQ(decode(dlq[0].body).dead_letter()->reason, "unknown_urn");
  o.dead_letter = false;
  bq::Worker worker(transport(), o);
  ASSERT_TRUE(worker.publish("urn:nobody", {}));
  (void)worker.drain("orders");
  EXPECT_TRUE(take_all("orders").empty());
  EXPECT_TRUE(take_all("orders.dlq").empty());
}

// ---- headers, backoff, attempts from the broker ---------------------------------------

TEST_P(WorkerTest, OutOfBandHeadersSurviveRetriesAndDeadLetters) {
  if (!transport().capabilities().headers) GTEST_SKIP() << "no headers";
  auto o = options();
  o.dead_letter = true;
  o.max_attempts = 2;
  bq::Worker worker(transport(), o);
  std::vector<std::string> seen;
  worker.handle("urn:a", [&](const bq::Message& m) {
    seen.emplace_back(m.header("traceparent"));
    throw std::runtime_error("x");
  });
  bq::PublishParams p;
  p.headers["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  ASSERT_TRUE(worker.publish("urn:a", {}, p));
  for (int i = 0; i < 3; ++i) (void)worker.drain("orders");
  EXPECT_EQ(seen, (std::vector<std::string>(2, p.headers["traceparent"])));
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(dlq[0].headers.at("traceparent"), p.headers["traceparent"]);
}

TEST_P(WorkerTest, BackoffDelaysTheRetry) {
  auto o = options();
  o.retry_backoff = bq::BackoffPolicy{300ms, 2.0, 10s, 0.0};
  bq::Worker worker(transport(), o);
  int calls = 0;
  worker.handle("urn:a", [&](const bq::Message&) {
    if (++calls == 1) throw std::runtime_error("x");
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  (void)worker.drain("orders");
  EXPECT_TRUE(faulty().inner().receive("orders", 1, 0ms).value().empty());
  std::this_thread::sleep_for(450ms);
  (void)worker.drain("orders");
  EXPECT_EQ(calls, 2);
}

// ---- concurrency and shutdown ----------------------------------------------------------

TEST_P(WorkerTest, ConcurrentHandlersTakeEachMessageOnce) {
  auto o = options();
  o.concurrency = 4;
  bq::Worker worker(transport(), o);
  std::mutex m;
  std::multiset<std::int64_t> seen;
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  worker.handle("urn:a", [&](const bq::Message& msg) {
    const int now = ++running;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    std::this_thread::sleep_for(2ms);
    --running;
    std::lock_guard lock(m);
    seen.insert(msg.envelope().data()["n"].as_int64());
  });
  constexpr int kCount = 200;
  for (int i = 0; i < kCount; ++i) ASSERT_TRUE(worker.publish("urn:a", bq::Value::object({{"n", i}})));
  EXPECT_EQ(worker.drain("orders").value(), static_cast<std::size_t>(kCount));
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kCount));
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(seen.count(i), 1U);
  EXPECT_GE(peak.load(), 2);
}

TEST_P(WorkerTest, StopLetsAnInFlightHandlerFinish) {
  auto o = options();
  bq::Worker worker(transport(), o);
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  worker.handle("urn:slow", [&](const bq::Message&) {
    started = true;
    std::this_thread::sleep_for(300ms);
    finished = true;
  });
  ASSERT_TRUE(worker.publish("urn:slow", {}));
  std::thread runner([&] { EXPECT_TRUE(worker.run({"orders"})); });
  while (!started) std::this_thread::sleep_for(5ms);
  worker.stop();
  runner.join();
  EXPECT_TRUE(finished);
  EXPECT_TRUE(take_all("orders").empty());  // acked
}

TEST_P(WorkerTest, ShutdownDeadlineReleasesAHandlerThatRunsTooLong) {
  auto o = options();
  o.shutdown_deadline = 100ms;
  bq::Worker worker(transport(), o);
  std::atomic<bool> started{false};
  worker.handle("urn:stuck", [&](const bq::Message&) {
    started = true;
    std::this_thread::sleep_for(800ms);
  });
  const std::string id = worker.publish("urn:stuck", {}).value();
  std::thread runner([&] { EXPECT_TRUE(worker.run({"orders"})); });
  while (!started) std::this_thread::sleep_for(5ms);
  worker.stop();
  runner.join();
  // Released at the deadline, and the late handler did not ack it.
  auto back = take_all("orders");
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(decode(back[0].body).id(), id);
  EXPECT_EQ(worker.metrics().snapshot().succeeded, 0U);
}

TEST_P(WorkerTest, RunStopsWhenIdleOrAtMaxMessages) {
  bq::Worker worker(transport(), options());
  worker.handle("urn:a", [](const bq::Message&) {});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(worker.publish("urn:a", {}));
  bq::RunLimits limits;
  limits.max_messages = 3;
  auto first = worker.run({"orders"}, limits).value();
  EXPECT_EQ(first.reason, bq::RunSummary::Reason::max_messages);
  EXPECT_EQ(first.processed, 3U);
  limits.max_messages = 0;
  limits.idle_exit = 200ms;
  auto second = worker.run({"orders"}, limits).value();
  EXPECT_EQ(second.reason, bq::RunSummary::Reason::idle);
  EXPECT_EQ(second.processed, 2U);
}

TEST_P(WorkerTest, ReceiveErrorsAreRetriedAndFatalOnesEndTheRun) {
  bq::Worker worker(transport(), options());
  int calls = 0;
  worker.handle("urn:a", [&](const bq::Message&) { ++calls; });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  faulty().fail_next_receives(2, bq::Errc::connection);
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(calls, 1);
  faulty().fail_next_receives(1, bq::Errc::auth);
  auto fatal = worker.drain("orders");
  ASSERT_FALSE(fatal);
  EXPECT_EQ(fatal.error().code(), bq::Errc::auth);
}

// ---- typed messages -----------------------------------------------------------------------

struct OrderCreated {
  static constexpr std::string_view urn = "urn:babel:orders:created";
  std::int64_t order_id = 0;
  bq::Value to_value() const { return bq::Value::object({{"order_id", order_id}}); }
  static OrderCreated from_value(const bq::Value& v) { return {v["order_id"].as_int64()}; }
};

TEST_P(WorkerTest, TypedHandlersAndPublish) {
  bq::Worker worker(transport(), options());
  std::int64_t got = 0;
  worker.handle<OrderCreated>([&](const OrderCreated& o, const bq::Message& m) {
    got = o.order_id;
    EXPECT_EQ(m.urn(), OrderCreated::urn);
  });
  ASSERT_TRUE(worker.publish(OrderCreated{1042}));
  (void)worker.drain("orders");
  EXPECT_EQ(got, 1042);
}

TEST_P(WorkerTest, AOneArgumentTypedHandlerAndAMoveOnlyHandlerWork) {
  bq::Worker worker(transport(), options());
  std::int64_t got = 0;
  worker.handle<OrderCreated>([&](const OrderCreated& o) { got = o.order_id; });
  auto owned = std::make_unique<int>(7);
  int seen = 0;
  worker.handle("urn:a", [owned = std::move(owned), &seen](const bq::Message&) { seen = *owned; });
  ASSERT_TRUE(worker.publish(OrderCreated{5}));
  ASSERT_TRUE(worker.publish("urn:a", {}));
  EXPECT_EQ(worker.drain("orders").value(), 2U);
  EXPECT_EQ(got, 5);
  EXPECT_EQ(seen, 7);
}

// A typed message whose payload does not convert fails the same way every
// time: dead-lettered at once with its bytes, the handler never runs.
struct StrictOrder {
  static constexpr std::string_view urn = "urn:babel:orders:strict";
  std::int64_t order_id = 0;
  bq::Value to_value() const { return bq::Value::object({{"order_id", order_id}}); }
  static StrictOrder from_value(const bq::Value& v) { return {v["order_id"].as_int64()}; }  // throws on a string
};

TEST_P(WorkerTest, ATypedPayloadThatDoesNotConvertIsDeadLetteredAtOnce) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  int runs = 0;
  worker.handle<StrictOrder>([&](const StrictOrder&) { ++runs; });
  ASSERT_TRUE(worker.publish("urn:babel:orders:strict", bq::Value::object({{"order_id", "not a number"}})));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(runs, 0);
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  auto dead = decode(dlq[0].body);
  EXPECT_EQ(dead.data_json(), R"({"order_id":"not a number"})");
  EXPECT_NE(dead.dead_letter()->error.value_or("").find("invalid payload"), std::string::npos);
  EXPECT_TRUE(take_all("orders").empty());
}

// ---- what a handler decides (handler_outcome.hpp; docs/runtime.md's outcome table) -----------

TEST_P(WorkerTest, OutcomeRetryWaitsItsDelayAndCountsAnAttempt) {
  auto o = options();
  bq::Worker worker(transport(), o);
  std::vector<std::int64_t> attempts;
  worker.handle("urn:a", [&](const bq::Message& m) {
    attempts.push_back(m.attempts());
    return m.attempts() == 0 ? bq::HandlerOutcome::retry(400ms, "inventory not reachable") : bq::HandlerOutcome::ack();
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  if (transport().capabilities().native_delay) {
    EXPECT_TRUE(faulty().inner().receive("orders", 1, 0ms).value().empty()) << "the retry came back early";
    std::this_thread::sleep_for(550ms);
  }
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(worker.metrics().snapshot().retried, 1U);
}

TEST_P(WorkerTest, OutcomeRetryIsBoundedByMaxAttempts) {
  auto o = options();
  o.dead_letter = true;
  o.max_attempts = 2;
  bq::Worker worker(transport(), o);
  int runs = 0;
  worker.handle("urn:a", [&](const bq::Message&) {
    ++runs;
    return bq::HandlerOutcome::retry();
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  for (int i = 0; i < 3; ++i) (void)worker.drain("orders");
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(take_all("orders.dlq").size(), 1U);
}

TEST_P(WorkerTest, OutcomeDeadLetterGoesThereNowWithItsReason) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  int runs = 0;
  worker.handle("urn:a", [&](const bq::Message&) {
    ++runs;
    return bq::HandlerOutcome::dead_letter("the order has no lines");
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(runs, 1);
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  auto block = decode(dlq[0].body).dead_letter().value();
  EXPECT_EQ(block.reason, "failed");
  EXPECT_EQ(block.error.value_or(""), "the order has no lines");
  EXPECT_EQ(block.attempts, 1);
}

TEST_P(WorkerTest, OutcomeDeadLetterWithoutADeadLetterQueueIsDroppedAndLogged) {
  bq::Worker worker(transport(), options());
  worker.handle("urn:a", [](const bq::Message&) { return bq::HandlerOutcome::dead_letter("bad"); });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_TRUE(take_all("orders").empty());
  EXPECT_TRUE(take_all("orders.dlq").empty());
  EXPECT_EQ(worker.metrics().snapshot().dropped, 1U);
  std::lock_guard lock(log_mutex_);
  EXPECT_TRUE(std::any_of(logs_.begin(), logs_.end(), [](const std::string& l) {
    return l.find("dropped") != std::string::npos && l.find("bad") != std::string::npos;
  }));
}

TEST_P(WorkerTest, OutcomeDropAcksWithoutRunningAgain) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  int runs = 0;
  worker.handle("urn:a", [&](const bq::Message&) {
    ++runs;
    return bq::HandlerOutcome::drop("shipped already");
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(worker.drain("orders").value(), 0U);
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(take_all("orders.dlq").empty());
  EXPECT_EQ(worker.metrics().snapshot().dropped, 1U);
}

TEST_P(WorkerTest, AThrownOutcomeIsTheSameDecision) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  worker.handle("urn:a",
                [](const bq::Message&) { throw bq::OutcomeException(bq::HandlerOutcome::dead_letter("thrown")); });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(decode(dlq[0].body).dead_letter()->error.value_or(""), "thrown");
}

TEST_P(WorkerTest, AnErrorThatIsNotRetriableRunsOnceReturnedOrThrown) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  int returned = 0;
  int thrown = 0;
  worker.handle("urn:returned", [&](const bq::Message&) -> bq::Result<void> {
    ++returned;
    return bq::unexpected(bq::Errc::invalid_argument, "the amount is negative");
  });
  worker.handle("urn:thrown", [&](const bq::Message&) {
    ++thrown;
    throw bq::Error(bq::Errc::auth, "the card was refused");
  });
  ASSERT_TRUE(worker.publish("urn:returned", {}));
  ASSERT_TRUE(worker.publish("urn:thrown", {}));
  for (int i = 0; i < 3; ++i) (void)worker.drain("orders");
  EXPECT_EQ(returned, 1);
  EXPECT_EQ(thrown, 1);
  EXPECT_EQ(take_all("orders.dlq").size(), 2U);
}

TEST_P(WorkerTest, RetriabilityDecidedAtTheOriginOverridesTheCode) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport(), o);
  std::vector<std::int64_t> attempts;
  worker.handle("urn:a", [&](const bq::Message& m) -> bq::Result<void> {
    attempts.push_back(m.attempts());
    if (m.attempts() == 0) {
      return bq::unexpected(bq::ErrorInfo(bq::Errc::not_found, "the replica has not caught up", /*retriable=*/true));
    }
    return {};
  });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  for (int i = 0; i < 2; ++i) (void)worker.drain("orders");
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{0, 1}));
  EXPECT_TRUE(take_all("orders.dlq").empty());
}

// ---- redrive ---------------------------------------------------------------------------------

TEST_P(WorkerTest, RedriveMovesDeadLettersBackAndRestoresTheRest) {
  auto o = options();
  o.dead_letter = true;
  o.max_attempts = 1;
  bq::Worker worker(transport(), o);
  bool fixed = false;
  std::vector<bool> replays;
  worker.handle("urn:a", [&](const bq::Message& m) {
    replays.push_back(m.is_replay());
    if (!fixed) throw std::runtime_error("bug");
  });
  const std::string id1 = worker.publish("urn:a", bq::Value::object({{"n", 1.50}})).value();
  const std::string id2 = worker.publish("urn:a", bq::Value::object({{"n", 2}})).value();
  publish_raw("orders", "not an envelope");
  (void)worker.drain("orders");
  ASSERT_EQ(worker.metrics().snapshot().dead_lettered, 3U);

  // A dry run changes nothing.
  bq::RedriveOptions dry;
  dry.dry_run = true;
  dry.wait = 100ms;
  auto planned = bq::redrive(transport(), "orders.dlq", dry).value();
  EXPECT_EQ(planned.redriven, 0U);
  EXPECT_EQ(planned.skipped, 3U);

  bq::RedriveOptions real;
  real.bypass = true;
  real.wait = 100ms;
  real.select = [&](const bq::Envelope& e) { return e.id() == id1; };
  auto result = bq::redrive(transport(), "orders.dlq", real).value();
  EXPECT_EQ(result.redriven, 1U);
  EXPECT_EQ(result.skipped, 2U);
  EXPECT_FALSE(result.error);
  auto back = faulty().inner().receive("orders", 10, 200ms).value();
  ASSERT_EQ(back.size(), 1U);
  auto env = decode(back[0].body);
  EXPECT_EQ(env.id(), id1);
  EXPECT_EQ(env.attempts(), 0);
  EXPECT_FALSE(env.has_dead_letter());
  EXPECT_EQ(env.data_json(), R"({"n":1.5})");
  if (transport().capabilities().headers) {
    EXPECT_EQ(back[0].headers.at("bq-replay-bypass"), "1");
  }
  ASSERT_TRUE(faulty().inner().release(back[0]));
  fixed = true;
  (void)worker.drain("orders");
  if (transport().capabilities().headers) {
    EXPECT_EQ(replays.back(), true);
  }

  // A failed publish restores everything that was taken.
  faulty().fail_next_publishes(1, bq::Errc::connection, "orders");
  bq::RedriveOptions all;
  all.wait = 100ms;
  // The run fails (not a success holding an error), and the four-argument
  // form still tells what was done before it stopped.
  bq::RedriveResult progress;
  auto failed = bq::redrive(transport(), "orders.dlq", all, progress);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), bq::Errc::connection);
  EXPECT_TRUE(failed.error().retriable());
  EXPECT_NE(failed.error().message().find("stopped after 0 redriven"), std::string::npos) << failed.error().message();
  ASSERT_TRUE(progress.error);
  EXPECT_EQ(progress.items.size(), 2U);
  faulty().fail_next_publishes(1, bq::Errc::connection, "orders");
  EXPECT_EQ(bq::redrive(transport(), "orders.dlq", all).error().code(), bq::Errc::connection)
      << "the three-argument form fails too";
  EXPECT_EQ(take_all("orders.dlq").size(), 2U);
  (void)id2;
}

}  // namespace worker_semantics

using worker_semantics::WorkerTest;
