// SPDX-License-Identifier: Apache-2.0
// The retry tiers' pure scheduler, without a broker: which tier and topic a
// delay parks on, when a parked record is due, the order records leave in,
// and when their partitions are paused and resumed.
#include "retry_tiers.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;
using bq::kafka::detail::ParkedRecord;
using bq::kafka::detail::PartitionKey;
using bq::kafka::detail::RetrySchedule;
using bq::kafka::detail::RetryTiers;
using bq::kafka::detail::wait_before_due;

namespace {

using TimePoint = RetrySchedule::TimePoint;
const TimePoint kStart{std::chrono::hours(1)};

ParkedRecord record(std::int64_t offset, TimePoint due) {
  ParkedRecord parked;
  parked.offset = offset;
  parked.value = "value-" + std::to_string(offset);
  parked.original_topic = "orders";
  parked.due = due;
  return parked;
}

std::vector<std::int64_t> offsets(const std::deque<ParkedRecord>& records) {
  std::vector<std::int64_t> out;
  for (const ParkedRecord& r : records) out.push_back(r.offset);
  return out;
}

const PartitionKey kRetry0{"orders.retry.1", 0};
const PartitionKey kRetry1{"orders.retry.1", 1};

}  // namespace

TEST(RetryTiers, ChoosesTheSmallestTierCoveringTheDelay) {
  const RetryTiers tiers({1s, 5s, 30s}, "{topic}.retry.{n}");
  EXPECT_EQ(tiers.size(), 3U);
  EXPECT_EQ(tiers.longest(), 30s);
  EXPECT_EQ(tiers.tier_for("orders", 1ms).value(), 0U);
  EXPECT_EQ(tiers.tier_for("orders", 1s).value(), 0U);
  EXPECT_EQ(tiers.tier_for("orders", 1001ms).value(), 1U);
  EXPECT_EQ(tiers.tier_for("orders", 30s).value(), 2U);
  auto too_long = tiers.tier_for("orders", 31s);
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code(), bq::Errc::invalid_argument) << "never shortened to the largest tier";
  EXPECT_NE(too_long.error().message().find("30000 ms"), std::string::npos) << too_long.error().message();
}

TEST(RetryTiers, WithoutTiersADelayIsUnsupported) {
  const RetryTiers none({}, "{topic}.retry.{n}");
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.longest(), 0ms);
  auto refused = none.tier_for("orders", 1s);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::unsupported);
  EXPECT_NE(refused.error().message().find("orders"), std::string::npos);
}

TEST(RetryTiers, NamesTopicsByPattern) {
  const RetryTiers by_number({500ms, 5s}, "{topic}.retry.{n}");
  EXPECT_EQ(by_number.topic("orders", 0), "orders.retry.1");
  EXPECT_EQ(by_number.topic("orders", 1), "orders.retry.2");
  const RetryTiers by_delay({500ms, 5s}, "retry-{delay_ms}ms-{topic}");
  EXPECT_EQ(by_delay.topic("orders", 1), "retry-5000ms-orders");
  const RetryTiers literal({1s}, "{topic}.{x}.{n}");
  EXPECT_EQ(literal.topic("a.b", 0), "a.b.{x}.1") << "an unknown placeholder is kept as written";
}

TEST(RetryTiers, ARecordIsDueAtItsTimestampPlusTheTierHeldWithinTheTier) {
  const std::int64_t now = 1'700'000'000'000;
  EXPECT_EQ(wait_before_due(now, now, 5s), 5s) << "parked just now";
  EXPECT_EQ(wait_before_due(now - 2000, now, 5s), 3s) << "parked 2 s ago";
  EXPECT_EQ(wait_before_due(now - 60000, now, 5s), 0ms) << "overdue: at once, never in the past";
  EXPECT_EQ(wait_before_due(now + 60000, now, 5s), 5s) << "a clock ahead of ours: never longer than the tier";
  EXPECT_EQ(wait_before_due(std::nullopt, now, 5s), 5s) << "no timestamp: the whole tier";
}

TEST(RetrySchedule, PausesAPartitionOnlyForItsFirstRecordNotDue) {
  RetrySchedule schedule;
  EXPECT_TRUE(schedule.park(kRetry0, record(10, kStart + 1s), kStart));
  EXPECT_TRUE(schedule.paused(kRetry0));
  EXPECT_FALSE(schedule.park(kRetry0, record(11, kStart + 2s), kStart)) << "paused already";
  EXPECT_FALSE(schedule.park(kRetry1, record(3, kStart), kStart)) << "due at once: no pause";
  EXPECT_FALSE(schedule.paused(kRetry1));
  EXPECT_EQ(schedule.waiting(kRetry0), 2U);
  EXPECT_EQ(schedule.waiting(kRetry1), 1U);
}

TEST(RetrySchedule, TakesDueRecordsInOrderAndADueOneWaitsBehindOneThatIsNot) {
  RetrySchedule schedule;
  (void)schedule.park(kRetry0, record(1, kStart + 1s), kStart);
  (void)schedule.park(kRetry0, record(2, kStart + 3s), kStart);
  (void)schedule.park(kRetry0, record(3, kStart + 2s), kStart);  // due earlier, but behind 2
  (void)schedule.park(kRetry1, record(7, kStart + 1s), kStart);
  EXPECT_TRUE(schedule.take_due(kStart).empty());

  auto due = schedule.take_due(kStart + 2500ms);
  ASSERT_EQ(due.size(), 2U);
  EXPECT_EQ(offsets(due[kRetry0]), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(offsets(due[kRetry1]), (std::vector<std::int64_t>{7}));
  EXPECT_EQ(schedule.waiting(kRetry0), 2U);

  due = schedule.take_due(kStart + 3s);
  EXPECT_EQ(offsets(due[kRetry0]), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(schedule.waiting(kRetry0), 0U);
}

TEST(RetrySchedule, ARecordNotReinjectedGoesBackFirstAndWaitsAgain) {
  RetrySchedule schedule;
  (void)schedule.park(kRetry0, record(1, kStart), kStart);
  (void)schedule.park(kRetry0, record(2, kStart), kStart);
  auto due = schedule.take_due(kStart);
  ASSERT_EQ(offsets(due[kRetry0]), (std::vector<std::int64_t>{1, 2}));
  // Parked while the due ones were out: stays behind them.
  (void)schedule.park(kRetry0, record(3, kStart), kStart);
  // Record 1 was not confirmed: it and 2 go back ahead of 3, 1 waits a second.
  schedule.put_back(kRetry0, std::move(due[kRetry0]), kStart + 1s);
  EXPECT_EQ(schedule.waiting(kRetry0), 3U);
  EXPECT_TRUE(schedule.take_due(kStart + 500ms).empty()) << "1 is not due, and 2 and 3 wait behind it";
  auto again = schedule.take_due(kStart + 1s);
  EXPECT_EQ(offsets(again[kRetry0]), (std::vector<std::int64_t>{1, 2, 3}));
  schedule.put_back(kRetry1, {}, kStart);  // nothing to put back: nothing changes
  EXPECT_EQ(schedule.waiting(kRetry1), 0U);
}

TEST(RetrySchedule, AfterReinjectionPausesWhatWaitsAndResumesWhatIsEmpty) {
  RetrySchedule schedule;
  EXPECT_TRUE(schedule.park(kRetry0, record(1, kStart + 1s), kStart));
  (void)schedule.park(kRetry1, record(5, kStart), kStart);  // due at once, not paused
  (void)schedule.park(kRetry1, record(6, kStart + 5s), kStart);

  (void)schedule.take_due(kStart);  // takes 5; 6 still waits on partition 1
  auto changes = schedule.update_pauses();
  EXPECT_TRUE(changes.resume.empty());
  EXPECT_EQ(changes.pause, (std::vector<PartitionKey>{kRetry1})) << "partition 0 is paused already";
  EXPECT_TRUE(schedule.paused(kRetry1));

  (void)schedule.take_due(kStart + 1s);  // takes 1: partition 0 is empty
  changes = schedule.update_pauses();
  EXPECT_EQ(changes.resume, (std::vector<PartitionKey>{kRetry0}));
  EXPECT_TRUE(changes.pause.empty());
  EXPECT_FALSE(schedule.paused(kRetry0));

  changes = schedule.update_pauses();
  EXPECT_TRUE(changes.resume.empty() && changes.pause.empty()) << "nothing changed: nothing to do";
}

TEST(RetrySchedule, ARevokedPartitionForgetsItsRecordsAndEveryPauseIsForgotten) {
  RetrySchedule schedule;
  (void)schedule.park(kRetry0, record(1, kStart + 1s), kStart);
  (void)schedule.park(kRetry0, record(2, kStart + 1s), kStart);
  (void)schedule.park(kRetry1, record(9, kStart + 1s), kStart);
  EXPECT_EQ(schedule.drop(kRetry0), 2U);
  EXPECT_EQ(schedule.drop(kRetry0), 0U);
  EXPECT_EQ(schedule.waiting(kRetry0), 0U);
  EXPECT_EQ(schedule.waiting(kRetry1), 1U);
  schedule.forget_pauses();
  EXPECT_FALSE(schedule.paused(kRetry0));
  EXPECT_FALSE(schedule.paused(kRetry1));
  // The consumer unassigned everything: partition 1, still holding a record,
  // is paused again at the next round, and parking on 0 pauses it afresh.
  EXPECT_EQ(schedule.update_pauses().pause, (std::vector<PartitionKey>{kRetry1}));
  EXPECT_TRUE(schedule.park(kRetry0, record(3, kStart + 1s), kStart));
}
