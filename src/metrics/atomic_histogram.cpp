// SPDX-License-Identifier: Apache-2.0
#include "atomic_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace babelqueue::metrics {

namespace {

// A bound in seconds as the largest whole number of units n with
// n / units_per_second <= bound: prometheus-cpp's rule (value <= le) on the
// seconds a value was given in, to the last unit even where bound * units is
// not exact in binary.
std::int64_t bound_in_units(double seconds, double units_per_second) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  const double estimate = std::floor(seconds * units_per_second);
  if (estimate >= 9e18) return kMax;
  if (estimate <= -9e18) return kMin;
  auto n = static_cast<std::int64_t>(estimate);
  // Beyond 2^52 a double no longer tells neighbouring units apart.
  if (std::fabs(estimate) >= 4503599627370496.0) return n;
  while (static_cast<double>(n + 1) / units_per_second <= seconds) ++n;
  while (static_cast<double>(n) / units_per_second > seconds) --n;
  return n;
}

}  // namespace

AtomicHistogram::AtomicHistogram(const std::vector<double>& bounds_seconds, std::int64_t units_per_second)
    : bounds_seconds_(bounds_seconds),
      units_per_second_(static_cast<double>(units_per_second)),
      bounds_(std::make_unique<std::int64_t[]>(bounds_seconds.size())),
      bound_count_(bounds_seconds.size()),
      buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_seconds.size() + 1)) {
  for (std::size_t i = 0; i < bound_count_; ++i) bounds_[i] = bound_in_units(bounds_seconds_[i], units_per_second_);
  // Rounding to units can make neighbouring bounds equal, never reorder them.
  for (std::size_t width = 1; width < below_octave_.size(); ++width) {
    const std::int64_t octave_start = std::int64_t{1} << (width - 1);
    below_octave_[width] = static_cast<std::size_t>(
        std::lower_bound(bounds_.get(), bounds_.get() + bound_count_, octave_start) - bounds_.get());
  }
}

prometheus::ClientMetric AtomicHistogram::collect() const {
  prometheus::ClientMetric metric;
  auto& h = metric.histogram;
  h.bucket.reserve(bound_count_ + 1);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bound_count_; ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    prometheus::ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    b.upper_bound = i < bound_count_ ? bounds_seconds_[i] : std::numeric_limits<double>::infinity();
    h.bucket.push_back(b);
  }
  h.sample_count = cumulative;
  h.sample_sum = static_cast<double>(sum_.load(std::memory_order_relaxed)) / units_per_second_;
  return metric;
}

}  // namespace babelqueue::metrics
