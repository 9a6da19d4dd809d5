// SPDX-License-Identifier: Apache-2.0
// RunLimits::idle_exit and the worker's own delayed retries: a batch job
// ends only when nothing of its own is still due, unless asked otherwise.
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace bq = babelqueue;
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
