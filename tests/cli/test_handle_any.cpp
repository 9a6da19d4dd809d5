// SPDX-License-Identifier: Apache-2.0
// Worker::handle_any: the catch-all handler `babelqueue work` is built on.
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

bq::WorkerOptions options() {
  bq::WorkerOptions o;
  o.default_queue = "orders";
  o.poll_timeout = 50ms;
  o.log = [](bq::LogLevel, std::string_view) {};
  return o;
}

std::vector<bq::Delivery> take_all(bq::Transport& transport, std::string_view queue) {
  std::vector<bq::Delivery> out;
  for (;;) {
    auto batch = transport.receive(queue, 100, 20ms);
    if (!batch || batch->empty()) return out;
    for (auto& d : *batch) {
      EXPECT_TRUE(transport.ack(d));
      out.push_back(std::move(d));
    }
  }
}

TEST(HandleAny, TakesEveryUrnWithoutAHandlerOfItsOwn) {
  bq::memory::Transport transport;
  bq::Worker worker(transport, options());
  std::vector<std::string> exact;
  std::vector<std::string> any;
  worker.handle("urn:a", [&](const bq::Message& m) { exact.emplace_back(m.urn()); });
  worker.handle_any([&](const bq::Message& m) -> bq::Result<void> {
    any.emplace_back(m.urn());
    return {};
  });
  for (const char* urn : {"urn:a", "urn:b", "urn:c", "urn:a"}) ASSERT_TRUE(worker.publish(urn, {}));
  EXPECT_EQ(worker.drain("orders").value(), 4U);
  EXPECT_EQ(exact, (std::vector<std::string>{"urn:a", "urn:a"}));
  EXPECT_EQ(any, (std::vector<std::string>{"urn:b", "urn:c"}));
  const auto m = worker.metrics().snapshot();
  EXPECT_EQ(m.succeeded, 4U);
  EXPECT_EQ(m.unknown_urn, 0U);
}

TEST(HandleAny, TheUnknownUrnStrategyAppliesOnlyWithoutIt) {
  bq::memory::Transport transport;
  auto o = options();
  o.unknown_urn = bq::UnknownUrnStrategy::dead_letter;
  o.dead_letter = true;
  {
    bq::Worker worker(transport, o);
    int calls = 0;
    worker.handle_any([&](const bq::Message&) -> bq::Result<void> {
      ++calls;
      return {};
    });
    ASSERT_TRUE(worker.publish("urn:x", {}));
    EXPECT_EQ(worker.drain("orders").value(), 1U);
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(take_all(transport, "orders.dlq").empty());
  }
  {
    bq::Worker worker(transport, o);
    ASSERT_TRUE(worker.publish("urn:x", {}));
    EXPECT_EQ(worker.drain("orders").value(), 1U);
    EXPECT_EQ(worker.metrics().snapshot().unknown_urn, 1U);
    EXPECT_EQ(take_all(transport, "orders.dlq").size(), 1U);
  }
}

TEST(HandleAny, ItsFailuresAreRetriedThenDeadLettered) {
  bq::memory::Transport transport;
  auto o = options();
  o.max_attempts = 2;
  o.dead_letter = true;
  bq::Worker worker(transport, o);
  std::vector<std::int64_t> attempts;
  worker.handle_any([&](const bq::Message& m) -> bq::Result<void> {
    attempts.push_back(m.attempts());
    return bq::unexpected(bq::Errc::io, "command exited with status 3");
  });
  ASSERT_TRUE(worker.publish("urn:any", bq::Value::object({{"n", 1}})));
  for (int i = 0; i < 3; ++i) (void)worker.drain("orders");
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{0, 1}));
  auto dlq = take_all(transport, "orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  auto block = bq::Envelope::decode(dlq[0].body).value().dead_letter().value();
  EXPECT_EQ(block.reason, "failed");
  EXPECT_EQ(block.error, "command exited with status 3");
}

TEST(HandleAny, ALaterCallReplacesTheEarlierOne) {
  bq::memory::Transport transport;
  bq::Worker worker(transport, options());
  int first = 0;
  int second = 0;
  worker.handle_any([&](const bq::Message&) -> bq::Result<void> {
    ++first;
    return {};
  });
  worker.handle_any([&](const bq::Message&) -> bq::Result<void> {
    ++second;
    return {};
  });
  ASSERT_TRUE(worker.publish("urn:x", {}));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST(HandleAny, PoisonNeverReachesIt) {
  bq::memory::Transport transport;
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(transport, o);
  int calls = 0;
  worker.handle_any([&](const bq::Message&) -> bq::Result<void> {
    ++calls;
    return {};
  });
  ASSERT_TRUE(transport.publish("orders", "not json"));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(calls, 0);
  auto dlq = take_all(transport, "orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(dlq[0].body, "not json");
}

}  // namespace
