// SPDX-License-Identifier: Apache-2.0
// The clock the metrics middleware times a handler with: the x86 time-stamp
// counter where it runs at a constant rate on every core (the CPU says so:
// invariant TSC), else the steady clock. Reading the counter costs a few
// nanoseconds; a steady_clock::now() through the vDSO costs several times
// that, and a handler is timed with two reads per message (docs/adr/0045).
//
// The counter's rate is measured once per process against the steady clock
// over 2 ms (to about 1e-5); a duration is a difference of two reads times
// that rate, so the counter's own origin never matters.
//
// Thread-safety: every member from any thread.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define BQ_METRICS_TICK_CLOCK_TSC 1
#else
#define BQ_METRICS_TICK_CLOCK_TSC 0
#endif

namespace babelqueue::metrics {

class TickClock {
 public:
  /// Measures the rate (once per process) or settles on the steady clock.
  TickClock();

  /// A reading: counter ticks, or steady-clock nanoseconds.
  std::uint64_t now() const noexcept {
#if BQ_METRICS_TICK_CLOCK_TSC
    if (tsc_) return __rdtsc();
#endif
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }

  /// A reading in nanoseconds from the counter's origin (the steady clock's,
  /// without the counter): only differences and offsets mean anything.
  std::int64_t to_ns(std::uint64_t at) const noexcept {
    return static_cast<std::int64_t>(static_cast<double>(at) * ns_per_tick_);
  }

  /// The nanoseconds from reading start to reading end; 0 if end is earlier
  /// (counters of two cores a few ticks apart).
  std::int64_t nanoseconds(std::uint64_t start, std::uint64_t end) const noexcept {
    if (end <= start) return 0;
    return static_cast<std::int64_t>(static_cast<double>(end - start) * ns_per_tick_);
  }

 private:
  bool tsc_ = false;
  double ns_per_tick_ = 1.0;
};

}  // namespace babelqueue::metrics
