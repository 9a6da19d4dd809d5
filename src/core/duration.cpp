// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/duration.hpp>

#include <cstdint>
#include <limits>
#include <optional>

namespace babelqueue {
namespace {

using std::chrono::milliseconds;

constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max();

// Fraction digits beyond this many change the value by less than 4
// microseconds of an hour; they are read and ignored, which keeps the
// arithmetic below in 64 bits.
constexpr int kFractionDigits = 9;
constexpr std::int64_t kMaxUnitMs = 9'000'000'000;  // 10^9 * this < 2^63

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

struct Unit {
  std::string_view suffix;
  std::int64_t ms;
};

// Longest suffix first, so "ms" is not read as "m" followed by junk.
constexpr Unit kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};

// digits[.digits] times unit_ms, rounded half up to whole milliseconds;
// nullopt for junk or a value beyond int64 milliseconds.
std::optional<std::int64_t> to_milliseconds(std::string_view number, std::int64_t unit_ms) {
  const std::size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && fraction.empty())) return std::nullopt;
  std::int64_t value = 0;
  for (const char c : whole) {
    if (!is_digit(c)) return std::nullopt;
    const std::int64_t digit = c - '0';
    if (value > (kMaxMs - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (value > kMaxMs / unit_ms) return std::nullopt;
  value *= unit_ms;
  // The fraction as numerator / 10^k (k <= 9): numerator * unit_ms stays
  // below 10^9 * kMaxUnitMs < 2^63.
  std::int64_t numerator = 0;
  std::int64_t denominator = 1;
  int digits = 0;
  for (const char c : fraction) {
    if (!is_digit(c)) return std::nullopt;
    if (digits++ < kFractionDigits) {
      numerator = numerator * 10 + (c - '0');
      denominator *= 10;
    }
  }
  const std::int64_t part = (numerator * unit_ms + denominator / 2) / denominator;
  if (value > kMaxMs - part) return std::nullopt;
  return value + part;
}

std::string unit_name(milliseconds unit) {
  if (unit == std::chrono::seconds(1)) return "seconds";
  if (unit == milliseconds(1)) return "milliseconds";
  if (unit == std::chrono::minutes(1)) return "minutes";
  if (unit == std::chrono::hours(1)) return "hours";
  return "units of " + format_duration(unit);
}

}  // namespace

std::string format_duration(milliseconds duration) {
  std::int64_t ms = duration.count();
  std::string sign;
  if (ms < 0) {
    if (ms == std::numeric_limits<std::int64_t>::min()) return std::to_string(ms) + "ms";
    sign = "-";
    ms = -ms;
  }
  if (ms != 0 && ms % 3'600'000 == 0) return sign + std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return sign + std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return sign + std::to_string(ms / 1000) + "s";
  return sign + std::to_string(ms) + "ms";
}

std::string describe(const DurationRule& rule) {
  const bool whole_seconds = rule.step == std::chrono::seconds(1);
  std::string text = whole_seconds ? "a duration in whole seconds (5s, 2m, or a number of "
                                   : "a duration (500ms, 5s, 2m, or a number of ";
  text += unit_name(rule.unit) + ")";
  if (rule.step > milliseconds(1) && !whole_seconds) text += " in steps of " + format_duration(rule.step);
  if (rule.max == milliseconds::max()) return text + " of at least " + format_duration(rule.min);
  return text + " between " + format_duration(rule.min) + " and " + format_duration(rule.max);
}

Result<milliseconds> parse_duration(std::string_view text, const DurationRule& rule) {
  std::string_view number = text;
  std::int64_t unit_ms = rule.unit.count();
  if (!number.empty() && !is_digit(number.back())) {
    unit_ms = 0;
    for (const Unit& unit : kUnits) {
      if (number.size() > unit.suffix.size() && number.substr(number.size() - unit.suffix.size()) == unit.suffix) {
        number.remove_suffix(unit.suffix.size());
        unit_ms = unit.ms;
        break;
      }
    }
  }
  std::optional<std::int64_t> ms;
  if (unit_ms > 0 && unit_ms <= kMaxUnitMs) ms = to_milliseconds(number, unit_ms);
  const bool in_bounds = ms && *ms >= rule.min.count() && *ms <= rule.max.count() &&
                         (rule.step.count() <= 1 || *ms % rule.step.count() == 0);
  if (!in_bounds) {
    return unexpected(Errc::invalid_argument, "'" + std::string(text) + "' is not " + describe(rule));
  }
  return milliseconds(*ms);
}

}  // namespace babelqueue
