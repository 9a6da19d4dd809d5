// SPDX-License-Identifier: Apache-2.0
// One histogram series observed without a lock: a relaxed atomic counter per
// bucket and the sum in integer nanoseconds. prometheus-cpp's Histogram
// takes a mutex and searches its buckets on every observation, which on a
// memory-transport consume loop costs more than the rest of the metrics
// (docs/adr/0045). Values are whole units of a resolution the series is made
// with (nanoseconds for durations, milliseconds for the end-to-end latency,
// whose sum in nanoseconds could overflow after a few million old messages).
//
// A collect reads each counter once; the count it reports is the sum of the
// buckets it read, so _count and the +Inf bucket always agree, and the sum
// can miss only an observation that is being made while it reads.
//
// Thread-safety: observe and collect from any thread.
#pragma once

#include <prometheus/client_metric.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace babelqueue::metrics {

class AtomicHistogram {
 public:
  /// The buckets' upper bounds in seconds, strictly rising (the caller
  /// checked; +Inf is added), and how many units an observation's value
  /// counts per second.
  AtomicHistogram(const std::vector<double>& bounds_seconds, std::int64_t units_per_second);
  AtomicHistogram(const AtomicHistogram&) = delete;
  AtomicHistogram& operator=(const AtomicHistogram&) = delete;

  /// Counts one observation of value units.
  void observe(std::int64_t value) noexcept {
    buckets_[bucket_of(value)].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
  }

  /// The bucket value counts in: the number of bounds below it.
  std::size_t bucket_of(std::int64_t value) const noexcept {
    // Every bound below the power of two that starts a positive value's
    // octave is below the value: start there, and step over the few bounds
    // inside the octave (a scan of every bound cost as much as the rest of
    // observe). Zero and below scan from the first bound.
    std::size_t bucket = 0;
    if (value > 0) {
      bucket = below_octave_[static_cast<std::size_t>(64 - __builtin_clzll(static_cast<std::uint64_t>(value)))];
    }
    while (bucket < bound_count_ && value > bounds_[bucket]) ++bucket;
    return bucket;
  }

  /// What prometheus-cpp's Histogram::Collect gives: cumulative buckets with
  /// their bounds (+Inf last), count and sum in seconds.
  prometheus::ClientMetric collect() const;

  /// The upper bounds in seconds, as given.
  const std::vector<double>& bounds() const noexcept { return bounds_seconds_; }

 private:
  std::vector<double> bounds_seconds_;
  double units_per_second_;
  std::unique_ptr<std::int64_t[]> bounds_;  // each bound, rounded down to whole units
  std::size_t bound_count_;
  // below_octave_[w]: how many bounds are below 2^(w-1), the least value of
  // w significant bits (w from 1 to 63).
  std::array<std::size_t, 64> below_octave_{};
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bound_count_ + 1, not cumulative
  std::atomic<std::int64_t> sum_{0};                       // in units
};

}  // namespace babelqueue::metrics
