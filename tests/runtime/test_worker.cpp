// SPDX-License-Identifier: Apache-2.0
// Runtime semantics (SPEC §6–§8, tests/support/worker_semantics.hpp) on the
// in-process memory broker and the SQLite file, and what only a transport
// with leases shows (SQLite).
#include "forwarding_transport.hpp"
#include "held_ahead_transport.hpp"
#include "worker_semantics.hpp"

#include <babelqueue/memory/transport.hpp>
#include <babelqueue/redrive.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace bq = babelqueue;
using bq::test_support::FaultInjectingTransport;
using namespace std::chrono_literals;

namespace {

// A fresh SQLite file per test, removed (with its WAL files) when the test
// program exits.
std::string temp_sqlite_url() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("bq-worker-tests-" + bq::uuid_v4());
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    return d;
  }();
  return "sqlite://" + (dir / (bq::uuid_v4() + ".db")).string() + "?visibility_timeout=1";
}

TEST(BackoffPolicy, GrowsToItsMaximum) {
  bq::BackoffPolicy p{100ms, 2.0, 1s, 0.0};
  EXPECT_EQ(p.delay_for(1), 100ms);
  EXPECT_EQ(p.delay_for(2), 200ms);
  EXPECT_EQ(p.delay_for(4), 800ms);
  EXPECT_EQ(p.delay_for(10), 1s);
  p.jitter = 0.5;
  for (int i = 0; i < 100; ++i) {
    EXPECT_GE(p.delay_for(2), 100ms);
    EXPECT_LE(p.delay_for(2), 300ms);
  }
}

// ---- crash safety on a transport with leases (SQLite) --------------------------------

// Two transports on one SQLite file (visibility timeout 1 s): the worker's
// and another process's.
struct TwoConsumers {
  TwoConsumers() {
    bq::sqlite::register_transport();
    const std::string url = temp_sqlite_url();
    other = bq::open_transport(url).value();
    bq::WorkerOptions o;
    o.default_queue = "orders";
    o.poll_timeout = 100ms;
    worker = std::make_unique<bq::Worker>(bq::open_transport(url).value(), o);
  }
  std::unique_ptr<bq::Transport> other;
  std::unique_ptr<bq::Worker> worker;
};

TEST(WorkerOnSqlite, AMessageOfACrashedConsumerComesBackWithItsDeliveryCounted) {
  TwoConsumers setup;
  auto& crashed = setup.other;
  bq::Worker& worker = *setup.worker;
  std::vector<std::int64_t> attempts;
  worker.handle("urn:a", [&](const bq::Message& m) { attempts.push_back(m.attempts()); });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  // A consumer takes the message and dies without settling it.
  ASSERT_EQ(crashed->receive("orders", 1, 1s).value().size(), 1U);
  EXPECT_EQ(worker.drain("orders").value(), 0U);  // reserved: invisible
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  // The second delivery counts as attempt 1: max(body 0, deliveries - 1).
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{1}));
}

TEST(WorkerOnSqlite, ALongHandlerKeepsItsMessageReserved) {
  TwoConsumers setup;
  auto& other = setup.other;
  bq::Worker& worker = *setup.worker;
  std::atomic<bool> started{false};
  worker.handle("urn:slow", [&](const bq::Message&) {
    started = true;
    std::this_thread::sleep_for(2500ms);
  });
  ASSERT_TRUE(worker.publish("urn:slow", {}));
  std::thread runner([&] { EXPECT_EQ(worker.drain("orders").value(), 1U); });
  while (!started) std::this_thread::sleep_for(5ms);
  // Well past the 1 s visibility timeout, nobody else can take it.
  auto stolen = other->receive("orders", 1, 2s).value();
  EXPECT_TRUE(stolen.empty());
  runner.join();
  EXPECT_TRUE(other->receive("orders", 1, 1500ms).value().empty());  // acked, not redelivered
}

bq::test_support::SemanticsTarget target(std::string name, std::function<std::string()> url) {
  return {std::move(name), [url] {
            bq::sqlite::register_transport();
            return bq::open_transport(url());
          }};
}

std::string memory_url() { return "memory://worker-" + bq::uuid_v4(); }

// The memory transport saying its client holds messages ahead: the Worker's
// handler threads receive for themselves (as on Artemis), no receive loop.
bq::test_support::SemanticsTarget held_ahead_target() {
  return {"memory_held_ahead", []() -> bq::Result<std::unique_ptr<bq::Transport>> {
            auto inner = bq::open_transport(memory_url());
            if (!inner) return bq::unexpected(inner.error());
            return std::unique_ptr<bq::Transport>(
                std::make_unique<bq::test_support::HeldAheadTransport>(std::move(*inner), 8));
          }};
}

// A held-ahead transport whose receive first runs a hook: here, stop() on
// the worker, so that the batch the receive brings lands after the stop.
class StopDuringReceive final : public bq::test_support::ForwardingTransport {
 public:
  using ForwardingTransport::ForwardingTransport;
  std::function<void()> hook;
  bq::Capabilities capabilities() const override {
    bq::Capabilities caps = inner().capabilities();
    caps.held_ahead = 8;
    return caps;
  }
  bq::Result<std::vector<bq::Delivery>> receive(std::string_view queue, std::size_t max,
                                                std::chrono::milliseconds wait) override {
    if (hook) std::exchange(hook, nullptr)();
    return inner().receive(queue, max, wait);
  }
};

TEST(WorkerWhereHandlersReceive, ABatchThatLandsAfterAStopIsHandedBackUnstarted) {
  StopDuringReceive transport(bq::open_transport(memory_url()).value());
  bq::WorkerOptions o;
  o.default_queue = "orders";
  o.concurrency = 2;
  bq::Worker worker(transport, o);
  std::atomic<int> calls{0};
  worker.handle("urn:a", [&](const bq::Message&) { ++calls; });
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(worker.publish("urn:a", {}));
  // The stop comes first, and run()'s thread reaches its shutdown while the
  // receive is still under way.
  transport.hook = [&] {
    worker.stop();
    std::this_thread::sleep_for(100ms);
  };
  auto summary = worker.run({"orders"}, {});
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->reason, bq::RunSummary::Reason::stopped);
  EXPECT_EQ(calls.load(), 0);
  // All three are back in the queue, none lost, none run.
  EXPECT_EQ(transport.inner().receive("orders", 10, 0ms).value().size(), 3U);
  // What the receive brought (the first receive asks for one message per
  // handler thread: WorkerOptions::prefetch_bytes) was handed back.
  const auto counts = worker.metrics().snapshot();
  EXPECT_EQ(counts.received, 2U);
  EXPECT_EQ(counts.released, counts.received);
}

INSTANTIATE_TEST_SUITE_P(Transports, WorkerTest,
                         testing::Values(target("memory", memory_url), held_ahead_target(),
                                         target("sqlite", temp_sqlite_url)),
                         bq::test_support::SemanticsTarget::name_of);

}  // namespace