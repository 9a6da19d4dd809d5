// SPDX-License-Identifier: Apache-2.0
// BackoffPolicy: how long to wait before the next try, for every reconnect
// loop of the transports and for the Worker (delayed retries, receive errors).
//
// Try n (1 for the first retry) waits min(max, initial * multiplier^(n-1)),
// then varied by +/- jitter: the result is uniform in
// [(1 - jitter) * d, (1 + jitter) * d], so clients that failed together do
// not come back together.
//
// Thread-safety: a plain value; delay_for may run on any thread at once (each
// thread draws from its own random generator).
#pragma once

#include <babelqueue/result.hpp>

#include <chrono>
#include <cstdint>
#include <string_view>

namespace babelqueue {

/// Exponential backoff with jitter: attempt n waits initial * multiplier^(n-1),
/// at most max, spread by jitter (delay_for).
struct BackoffPolicy {
  std::chrono::milliseconds initial{1000};  ///< the first delay
  double multiplier = 2.0;                  ///< below 1 (or not a number) counts as 1: the delay never shrinks
  std::chrono::milliseconds max{std::chrono::minutes(5)};  ///< the longest delay
  double jitter = 0.2;                                     ///< fraction of the delay, clamped to 0..1

  /// The delay before try n, jitter included. n below 1 counts as 1; any n,
  /// however large, gives at most (1 + jitter) * max, never an overflow.
  std::chrono::milliseconds delay_for(std::int64_t retry) const;

  /// The same without jitter: min(max, initial * multiplier^(n-1)).
  std::chrono::milliseconds nominal_delay(std::int64_t retry) const;

  /// Errc::invalid_argument naming the field (under `name`, e.g.
  /// "WorkerOptions::retry_backoff") when a value is out of its range:
  /// initial and max not negative, max not below initial, multiplier a number
  /// from 1, jitter from 0 to 1. delay_for() copes with any value; this is
  /// for whoever sets them, so a typo is not silently clamped.
  Result<void> check(std::string_view name = "BackoffPolicy") const;
};

}  // namespace babelqueue
