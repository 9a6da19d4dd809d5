// SPDX-License-Identifier: Apache-2.0
// One duration syntax for every option of every transport:
//
//   500ms  5s  2m  1h   a number with a unit (ms, s, m, h)
//   30  1.5             a bare number, in the unit the option documents
//                       (seconds for timeouts, as the Python SDK writes them)
//
// The number is decimal digits with an optional fraction ("0.25s", "1.5");
// no sign, no exponent, no spaces. The value is rounded to the nearest
// millisecond, then checked against the option's bounds. A value beyond what
// int64 milliseconds hold is an error, never a wrapped number.
//
// Thread-safety: plain functions over values.
#pragma once

#include <babelqueue/result.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace babelqueue {

/// What one option accepts.
struct DurationRule {
  /// What a bare number means: std::chrono::seconds(1) or milliseconds(1).
  std::chrono::milliseconds unit{std::chrono::seconds(1)};
  std::chrono::milliseconds min{0};                             ///< the shortest accepted
  std::chrono::milliseconds max{std::chrono::hours(24 * 365)};  ///< the longest accepted
  /// The value must be a whole multiple of this: seconds(1) for an option the
  /// broker takes in whole seconds (SQS, AMQP heartbeat).
  std::chrono::milliseconds step{1};
};

/// Reads text under rule. Errc::invalid_argument whose message is
/// "'TEXT' is not <describe(rule)>" (the text is quoted as given).
Result<std::chrono::milliseconds> parse_duration(std::string_view text, const DurationRule& rule = {});

/// What rule accepts, for error messages: "a duration (500ms, 5s, 2m, or a
/// number of seconds) between 1ms and 1h"; "a duration in whole seconds (5s,
/// 2m, or a number of seconds) between 0s and 20s".
std::string describe(const DurationRule& rule);

/// The shortest exact spelling in the syntax above: 1500ms, 5s, 2m, 1h, 90s.
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace babelqueue
