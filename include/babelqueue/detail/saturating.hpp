// SPDX-License-Identifier: Apache-2.0
// Arithmetic that stops at the ends of its type instead of overflowing: for
// counts, sizes, delays and deadlines that come from a message (its
// `attempts`, a broker's delivery count) or from a user (a delay of
// milliseconds::max(), an option of 1e300 seconds). Not part of the stable
// API.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

namespace babelqueue::detail {

// a + b, held to the range of int64.
constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

// One more failed delivery: attempts + 1, staying at the largest count
// (which is past any max_attempts, so the message is given up, not retried).
constexpr std::int64_t next_attempts(std::int64_t attempts) noexcept { return saturating_add(attempts, 1); }

// when + delay on a clock whose resolution may be finer than milliseconds,
// held to the clock's range (time_point::max() is "never").
template <class Clock, class Duration>
constexpr std::chrono::time_point<Clock, Duration> saturating_after(std::chrono::time_point<Clock, Duration> when,
                                                                    std::chrono::milliseconds delay) noexcept {
  using TimePoint = std::chrono::time_point<Clock, Duration>;
  if (delay.count() <= 0) return when;
  // The room left before the clock's end, in milliseconds (rounded down).
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(TimePoint::max() - when);
  if (delay >= room) return TimePoint::max();
  return when + std::chrono::duration_cast<Duration>(delay);
}

// A number of seconds as milliseconds, held to [0, max]; NaN is 0.
inline std::chrono::milliseconds saturating_seconds(double seconds) noexcept {
  constexpr double kLargest = 9.2e15;  // milliseconds: below int64's end, exactly representable around it
  const double ms = seconds * 1000.0;
  if (!(ms > 0.0)) return std::chrono::milliseconds(0);
  if (ms >= kLargest) return std::chrono::milliseconds(static_cast<std::int64_t>(kLargest));
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
}

}  // namespace babelqueue::detail
