// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/backoff.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace babelqueue {
namespace {

using std::chrono::milliseconds;

// 2^63: the first double that does not fit an int64, so casting anything
// below it is defined.
constexpr double kInt64Limit = 9223372036854775808.0;

milliseconds clamp_non_negative(milliseconds value) { return std::max(value, milliseconds(0)); }

}  // namespace

milliseconds BackoffPolicy::nominal_delay(std::int64_t retry) const {
  const milliseconds first = clamp_non_negative(initial);
  const milliseconds cap = clamp_non_negative(max);
  if (first >= cap) return cap;
  if (first.count() == 0) return first;
  // pow instead of a loop: a huge retry number costs nothing and gives
  // infinity, which the comparison below turns into the cap.
  const double growth = multiplier >= 1.0 ? multiplier : 1.0;  // NaN compares false: 1
  const double exponent = static_cast<double>(std::max<std::int64_t>(retry, 1) - 1);
  const double grown = static_cast<double>(first.count()) * std::pow(growth, exponent);
  if (!(grown < static_cast<double>(cap.count()))) return cap;
  return milliseconds(static_cast<std::int64_t>(grown));
}

milliseconds BackoffPolicy::delay_for(std::int64_t retry) const {
  const milliseconds nominal = nominal_delay(retry);
  const double spread = std::clamp(std::isnan(jitter) ? 0.0 : jitter, 0.0, 1.0);
  if (spread == 0.0 || nominal.count() == 0) return nominal;
  thread_local std::minstd_rand random{std::random_device{}()};
  std::uniform_real_distribution<double> factor(1.0 - spread, 1.0 + spread);
  const double delay = static_cast<double>(nominal.count()) * factor(random);
  if (delay >= kInt64Limit) return milliseconds::max();
  return milliseconds(static_cast<std::int64_t>(std::max(0.0, delay)));
}

Result<void> BackoffPolicy::check(std::string_view name) const {
  const std::string field(name);
  auto bad = [&](std::string_view what, const std::string& value, std::string_view expected) -> Result<void> {
    return unexpected(Errc::invalid_argument,
                      field + "." + std::string(what) + " is " + value + ", expected " + std::string(expected));
  };
  if (initial.count() < 0) return bad("initial", std::to_string(initial.count()) + " ms", "0 ms or more");
  if (max.count() < 0) return bad("max", std::to_string(max.count()) + " ms", "0 ms or more");
  if (max < initial) {
    return bad("max", std::to_string(max.count()) + " ms",
               "at least initial (" + std::to_string(initial.count()) + " ms)");
  }
  if (!(multiplier >= 1.0) || !std::isfinite(multiplier))
    return bad("multiplier", std::to_string(multiplier), "a number from 1");
  if (!(jitter >= 0.0 && jitter <= 1.0)) return bad("jitter", std::to_string(jitter), "a fraction from 0 to 1");
  return {};
}

}  // namespace babelqueue
