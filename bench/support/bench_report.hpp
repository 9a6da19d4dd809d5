// SPDX-License-Identifier: Apache-2.0
// The figures a broker benchmark prints, in one format for all of them: a
// median of rounds, a rate line and a ratio line with its target.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace babelqueue::bench {

// The median of the rounds; 0 when nothing was measured (--only).
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// "NAME   12345 msg/s"; nothing when not measured.
inline void line(const char* name, double value) {
  if (value <= 0) return;
  std::printf("%-48s %10.0f msg/s\n", name, value);
}

// "NAME   0.95x  (target >= 0.90x: met)"; nothing when a side was not measured.
inline void ratio(const char* name, double value, double target) {
  if (!(value > 0) || !std::isfinite(value)) return;
  std::printf("%-48s %9.2fx  (target >= %.2fx: %s)\n", name, value, target, value >= target ? "met" : "NOT met");
}

}  // namespace babelqueue::bench
