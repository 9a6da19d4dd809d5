// SPDX-License-Identifier: Apache-2.0
#include "tick_clock.hpp"

#if BQ_METRICS_TICK_CLOCK_TSC
#include <cpuid.h>
#endif

namespace babelqueue::metrics {

namespace {

struct Rate {
  bool tsc = false;
  double ns_per_tick = 1.0;
};

#if BQ_METRICS_TICK_CLOCK_TSC
// CPUID leaf 0x80000007, EDX bit 8: the counter runs at a constant rate in
// every power state and on every core.
bool invariant_tsc() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000U, nullptr) < 0x80000007U) return false;
  if (__get_cpuid(0x80000007U, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1U << 8)) != 0;
}
#endif

Rate measure() {
  Rate rate;
#if BQ_METRICS_TICK_CLOCK_TSC
  if (!invariant_tsc()) return rate;
  using Steady = std::chrono::steady_clock;
  const auto t0 = Steady::now();
  const std::uint64_t c0 = __rdtsc();
  auto t1 = t0;
  while (t1 - t0 < std::chrono::milliseconds(2)) t1 = Steady::now();
  const std::uint64_t c1 = __rdtsc();
  if (c1 <= c0) return rate;
  rate.tsc = true;
  rate.ns_per_tick = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) /
                     static_cast<double>(c1 - c0);
#endif
  return rate;
}

}  // namespace

TickClock::TickClock() {
  static const Rate rate = measure();
  tsc_ = rate.tsc;
  ns_per_tick_ = rate.ns_per_tick;
}

}  // namespace babelqueue::metrics
