// SPDX-License-Identifier: Apache-2.0
// BackoffPolicy (babelqueue/backoff.hpp): growth, cap, jitter, and attempt
// numbers far past anything real.
#include <babelqueue/backoff.hpp>
#include <babelqueue/worker_options.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace bq = babelqueue;
using namespace std::chrono_literals;

TEST(Backoff, GrowsByTheMultiplierUpToTheCap) {
  const bq::BackoffPolicy policy{100ms, 2.0, 5s, 0.0};
  EXPECT_EQ(policy.delay_for(1), 100ms);
  EXPECT_EQ(policy.delay_for(2), 200ms);
  EXPECT_EQ(policy.delay_for(3), 400ms);
  EXPECT_EQ(policy.delay_for(6), 3200ms);
  EXPECT_EQ(policy.delay_for(7), 5s);
  EXPECT_EQ(policy.delay_for(100), 5s);
  const bq::BackoffPolicy gentle{1000ms, 1.5, 1min, 0.0};
  EXPECT_EQ(gentle.delay_for(3), 2250ms);
}

TEST(Backoff, OddInputsGiveSaneDelays) {
  EXPECT_EQ((bq::BackoffPolicy{100ms, 2.0, 5s, 0.0}.delay_for(0)), 100ms);   // n below 1 counts as 1
  EXPECT_EQ((bq::BackoffPolicy{100ms, 2.0, 5s, 0.0}.delay_for(-7)), 100ms);  // n below 1 counts as 1
  EXPECT_EQ((bq::BackoffPolicy{100ms, 0.5, 5s, 0.0}.delay_for(10)), 100ms);  // never shrinks
  EXPECT_EQ((bq::BackoffPolicy{100ms, std::nan(""), 5s, 0.0}.delay_for(10)), 100ms);
  EXPECT_EQ((bq::BackoffPolicy{10s, 2.0, 5s, 0.0}.delay_for(1)), 5s);  // the cap wins over initial
  EXPECT_EQ((bq::BackoffPolicy{0ms, 2.0, 5s, 0.5}.delay_for(9)), 0ms);
  EXPECT_EQ((bq::BackoffPolicy{-5ms, 2.0, 5s, 0.0}.delay_for(3)), 0ms);
  EXPECT_EQ((bq::BackoffPolicy{100ms, 2.0, -1s, 0.0}.delay_for(3)), 0ms);
}

TEST(Backoff, HugeAttemptNumbersSaturateAtTheCap) {
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ((bq::BackoffPolicy{100ms, 2.0, 5s, 0.0}.delay_for(huge)), 5s);
  EXPECT_EQ((bq::BackoffPolicy{100ms, 1.0, 5s, 0.0}.delay_for(huge)), 100ms);  // and returns at once
  EXPECT_EQ((bq::BackoffPolicy{100ms, 1e300, 5s, 0.0}.delay_for(3)), 5s);
  const bq::BackoffPolicy widest{1ms, 10.0, std::chrono::milliseconds::max(), 0.0};
  EXPECT_EQ(widest.delay_for(huge), std::chrono::milliseconds::max());
  const bq::BackoffPolicy widest_jittered{1ms, 10.0, std::chrono::milliseconds::max(), 1.0};
  for (int i = 0; i < 100; ++i) EXPECT_GE(widest_jittered.delay_for(huge), 0ms);
}

TEST(Backoff, JitterStaysWithinItsFraction) {
  const bq::BackoffPolicy policy{1000ms, 2.0, 1min, 0.25};
  std::set<std::int64_t> seen;
  for (int i = 0; i < 500; ++i) {
    const auto delay = policy.delay_for(2);  // nominal 2000 ms
    EXPECT_GE(delay, 1500ms);
    EXPECT_LE(delay, 2500ms);
    seen.insert(delay.count());
  }
  EXPECT_GT(seen.size(), 50U) << "jitter should spread the delays";
  EXPECT_EQ(policy.nominal_delay(2), 2000ms);
  // Jitter beyond 0..1 is clamped: never negative, at most twice the delay.
  const bq::BackoffPolicy wild{1000ms, 2.0, 1min, 7.0};
  for (int i = 0; i < 200; ++i) {
    EXPECT_GE(wild.delay_for(1), 0ms);
    EXPECT_LE(wild.delay_for(1), 2000ms);
  }
  EXPECT_EQ((bq::BackoffPolicy{1000ms, 2.0, 1min, -3.0}.delay_for(1)), 1000ms);
  EXPECT_EQ((bq::BackoffPolicy{1000ms, 2.0, 1min, std::nan("")}.delay_for(1)), 1000ms);
}

TEST(Backoff, TheWorkersReceivePauseKeepsItsOldShape) {
  const bq::WorkerOptions options;
  EXPECT_EQ(options.receive_error_backoff.delay_for(1), 100ms);
  EXPECT_EQ(options.receive_error_backoff.delay_for(2), 200ms);
  EXPECT_EQ(options.receive_error_backoff.delay_for(7), 5s);
}
