// SPDX-License-Identifier: Apache-2.0
// RunLimits::idle_exit and the worker's own delayed retries: a batch job
// ends only when nothing of its own is still due, unless asked otherwise.
// A run whose receives keep failing ends, with the last error, at its
// idle_exit or unreachable_exit bound.
#include "fault_injecting_transport.hpp"

#include <babelqueue/memory/transport.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace bq = babelqueue;
using bq::test_support::FaultInjectingTransport;
using namespace std::chrono_literals;

namespace {

std::vector<std::int64_t> run_flaky(bool wait_for_own_delayed) {
  bq::memory::Transport transport;
  bq::WorkerOptions options;
  options.default_queue = "orders";
  options.poll_timeout = 20ms;
  options.retry_backoff = bq::BackoffPolicy{300ms, 2.0, 1s, 0.0};
  options.log = {};
  bq::Worker worker(transport, options);
  std::vector<std::int64_t> attempts;
  worker.handle("urn:a", [&](const bq::Message& m) -> bq::Result<void> {
    attempts.push_back(m.attempts());
    if (m.attempts() == 0) return bq::unexpected(bq::Errc::timeout, "first try fails");
    return {};
  });
  EXPECT_TRUE(worker.publish("urn:a", {}));
  bq::RunLimits limits;
  limits.idle_exit = 50ms;
  limits.idle_waits_for_own_delayed = wait_for_own_delayed;
  auto summary = worker.run({}, limits);
  EXPECT_TRUE(summary);
  EXPECT_EQ(summary->reason, bq::RunSummary::Reason::idle);
  return attempts;
}

}  // namespace

TEST(RunLimits, IdleExitWaitsForADelayedRetryOfItsOwn) {
  EXPECT_EQ(run_flaky(true), (std::vector<std::int64_t>{0, 1}));
}

TEST(RunLimits, IdleExitCanLeaveADelayedRetryBehindWhenAsked) {
  EXPECT_EQ(run_flaky(false), (std::vector<std::int64_t>{0}));
}

// ---- receives that keep failing ------------------------------------------------------

namespace {

struct FailingBroker {
  FailingBroker() : faulty(std::make_unique<bq::memory::Transport>()) {
    faulty.fail_next_receives(1000000, bq::Errc::connection);
  }
  bq::Worker worker() {
    bq::WorkerOptions options;
    options.default_queue = "orders";
    options.poll_timeout = 20ms;
    options.log = {};
    return bq::Worker(faulty, options);
  }
  FaultInjectingTransport faulty;
};

}  // namespace

// --idle-exit counts the time without a receive that brought a message,
// failures included; a run whose last receive failed does not call itself
// idle but fails with that error.
TEST(RunLimits, IdleExitEndsARunWhoseReceivesKeepFailingWithTheLastError) {
  FailingBroker broker;
  auto worker = broker.worker();
  bq::RunLimits limits;
  limits.idle_exit = 300ms;
  const auto start = std::chrono::steady_clock::now();
  auto summary = worker.run({}, limits);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(summary) << "a run that never reached its broker ended as idle";
  EXPECT_EQ(summary.error().code(), bq::Errc::connection);
  EXPECT_NE(summary.error().message().find("idle_exit"), std::string::npos) << summary.error().message();
  EXPECT_NE(summary.error().message().find("injected fault"), std::string::npos) << summary.error().message();
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 2s);
}

TEST(RunLimits, UnreachableExitEndsARunThatCannotReachItsBroker) {
  FailingBroker broker;
  auto worker = broker.worker();
  bq::RunLimits limits;
  limits.unreachable_exit = 400ms;
  const auto start = std::chrono::steady_clock::now();
  auto summary = worker.run({}, limits);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(summary);
  EXPECT_EQ(summary.error().code(), bq::Errc::connection);
  EXPECT_NE(summary.error().message().find("unreachable_exit"), std::string::npos) << summary.error().message();
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 2s);
}

// A failure burst shorter than the bound is ridden out: the messages are
// handled and the run then ends idle, not failed.
TEST(RunLimits, AShortOutageDoesNotEndTheRun) {
  FaultInjectingTransport faulty(std::make_unique<bq::memory::Transport>());
  bq::WorkerOptions options;
  options.default_queue = "orders";
  options.poll_timeout = 20ms;
  options.log = {};
  bq::Worker worker(faulty, options);
  int handled = 0;
  worker.handle("urn:a", [&](const bq::Message&) { ++handled; });
  ASSERT_TRUE(worker.publish("urn:a", {}));
  faulty.fail_next_receives(3, bq::Errc::connection);  // about 100 + 200 + 400 ms of backoff
  bq::RunLimits limits;
  limits.idle_exit = 1500ms;  // longer than the outage
  limits.unreachable_exit = 5s;
  auto summary = worker.run({}, limits);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ(summary->reason, bq::RunSummary::Reason::idle);
  EXPECT_EQ(handled, 1);
}
