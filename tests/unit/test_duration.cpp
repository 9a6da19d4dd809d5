// SPDX-License-Identifier: Apache-2.0
// The one duration syntax of every option (babelqueue/duration.hpp).
#include <babelqueue/duration.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

std::chrono::milliseconds parsed(const std::string& text, const bq::DurationRule& rule = {}) {
  auto value = bq::parse_duration(text, rule);
  EXPECT_TRUE(value) << text << ": " << (value ? "" : value.error().message());
  return value ? *value : std::chrono::milliseconds(-1);
}

bool refused(const std::string& text, const bq::DurationRule& rule = {}) {
  auto value = bq::parse_duration(text, rule);
  if (value) return false;
  EXPECT_EQ(value.error().code(), bq::Errc::invalid_argument) << text;
  return true;
}

constexpr bq::DurationRule kMillis{.unit = 1ms};

}  // namespace

TEST(Duration, ReadsEveryUnit) {
  EXPECT_EQ(parsed("500ms"), 500ms);
  EXPECT_EQ(parsed("5s"), 5s);
  EXPECT_EQ(parsed("2m"), 2min);
  EXPECT_EQ(parsed("1h"), 1h);
  EXPECT_EQ(parsed("0s"), 0ms);
  EXPECT_EQ(parsed("0ms"), 0ms);
}

TEST(Duration, ABareNumberIsInTheKeysUnit) {
  EXPECT_EQ(parsed("30"), 30s);  // the Python SDK's visibility_timeout=30
  EXPECT_EQ(parsed("20"), 20s);  // and wait_time=20
  EXPECT_EQ(parsed("250", kMillis), 250ms);
  EXPECT_EQ(parsed("5s", kMillis), 5s);  // a unit overrides the key's
  EXPECT_EQ(parsed("2", {.unit = 1min}), 2min);
}

TEST(Duration, DecimalsRoundToTheNearestMillisecond) {
  EXPECT_EQ(parsed("1.5"), 1500ms);
  EXPECT_EQ(parsed("0.3"), 300ms);
  EXPECT_EQ(parsed("0.01"), 10ms);
  EXPECT_EQ(parsed("0.0005"), 1ms);  // half up
  EXPECT_EQ(parsed("0.0004"), 0ms);
  EXPECT_EQ(parsed("1.25s"), 1250ms);
  EXPECT_EQ(parsed("1.5m"), 90s);
  EXPECT_EQ(parsed("0.5h"), 30min);
  EXPECT_EQ(parsed("2.6ms"), 3ms);
  EXPECT_EQ(parsed("0.1234567890123s"), 123ms);  // digits past the ninth are ignored
}

TEST(Duration, RefusesJunk) {
  for (const char* text :
       {"",   "abc", "5x",  "5 s",  " 5s",   "5s ", "-1", "-5s", "+5s", "1e3",  "1e3s", "inf",   "nan", "0x10",
        ".5", "5.",  "5.s", "1..5", "1.2.3", "s",   "ms", "h",   "5S",  "5sec", "5ss",  "5msms", "5,5", "1_000"}) {
    EXPECT_TRUE(refused(text)) << text;
  }
}

TEST(Duration, ChecksTheBounds) {
  const bq::DurationRule rule{.min = 1ms, .max = 1h};
  EXPECT_EQ(parsed("1ms", rule), 1ms);
  EXPECT_EQ(parsed("1h", rule), 1h);
  EXPECT_EQ(parsed("3600", rule), 1h);
  EXPECT_TRUE(refused("0", rule));
  EXPECT_TRUE(refused("0.0004", rule));  // rounds to 0 ms, below the minimum
  EXPECT_TRUE(refused("3600.001", rule));
  EXPECT_TRUE(refused("61m", rule));
  // The default rule: 0 to a year.
  EXPECT_EQ(parsed("8760h"), 8760h);
  EXPECT_TRUE(refused("8761h"));
}

TEST(Duration, AStepAcceptsOnlyWholeMultiples) {
  const bq::DurationRule whole_seconds{.max = 20s, .step = 1s};
  EXPECT_EQ(parsed("20", whole_seconds), 20s);
  EXPECT_EQ(parsed("2000ms", whole_seconds), 2s);
  EXPECT_EQ(parsed("0", whole_seconds), 0s);
  EXPECT_TRUE(refused("1.5", whole_seconds));
  EXPECT_TRUE(refused("500ms", whole_seconds));
  EXPECT_TRUE(refused("21", whole_seconds));
}

TEST(Duration, OverflowIsAnErrorNotAWrappedNumber) {
  const bq::DurationRule unbounded{.max = std::chrono::milliseconds::max()};
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(parsed(std::to_string(max) + "ms", unbounded).count(), max);
  EXPECT_TRUE(refused("9223372036854775808ms", unbounded));  // int64 max + 1
  EXPECT_TRUE(refused("9223372036854775807s", unbounded));   // fits as seconds, not as ms
  EXPECT_TRUE(refused("9223372036854775807", unbounded));    // a bare number of seconds
  EXPECT_TRUE(refused("2562047788016h", unbounded));         // just past int64 ms
  EXPECT_EQ(parsed("2562047788015h", unbounded), 2562047788015h);
  EXPECT_TRUE(refused("99999999999999999999999999999999", unbounded));
  EXPECT_TRUE(refused("9223372036854775807.9ms", unbounded));  // the rounding carries it over
}

TEST(Duration, TheErrorQuotesTheTextAndSaysWhatIsAccepted) {
  auto value = bq::parse_duration("abc", {.min = 1ms, .max = 1h});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().message(),
            "'abc' is not a duration (500ms, 5s, 2m, or a number of seconds) between 1ms and 1h");
}

TEST(Duration, DescribesItsRule) {
  EXPECT_EQ(bq::describe({.min = 1ms, .max = 1h}),
            "a duration (500ms, 5s, 2m, or a number of seconds) between 1ms and 1h");
  EXPECT_EQ(bq::describe({.unit = 1ms, .min = 0ms, .max = 90s}),
            "a duration (500ms, 5s, 2m, or a number of milliseconds) between 0s and 90s");
  EXPECT_EQ(bq::describe({.max = 20s, .step = 1s}),
            "a duration in whole seconds (5s, 2m, or a number of seconds) between 0s and 20s");
  EXPECT_EQ(bq::describe({.min = 1ms, .max = std::chrono::milliseconds::max()}),
            "a duration (500ms, 5s, 2m, or a number of seconds) of at least 1ms");
}

TEST(Duration, FormatsTheShortestExactSpelling) {
  EXPECT_EQ(bq::format_duration(0ms), "0s");
  EXPECT_EQ(bq::format_duration(1ms), "1ms");
  EXPECT_EQ(bq::format_duration(1500ms), "1500ms");
  EXPECT_EQ(bq::format_duration(5s), "5s");
  EXPECT_EQ(bq::format_duration(90s), "90s");
  EXPECT_EQ(bq::format_duration(2min), "2m");
  EXPECT_EQ(bq::format_duration(1h), "1h");
  EXPECT_EQ(bq::format_duration(-5s), "-5s");
  EXPECT_EQ(bq::format_duration(std::chrono::milliseconds::min()), "-9223372036854775808ms");
  // What format_duration writes reads back to the same value.
  for (const auto d : {1ms, 1500ms, 5000ms, 90000ms, 120000ms, 3600000ms, 43200000ms}) {
    EXPECT_EQ(parsed(bq::format_duration(d), {.max = std::chrono::milliseconds::max()}), d);
  }
}
