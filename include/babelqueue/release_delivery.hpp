// SPDX-License-Identifier: Apache-2.0
// ReleaseDelivery: what a handler or a middleware throws when a message was
// not handled and should simply come back later — not a failure. The Worker
// hands the message back to the broker after delay, its body unchanged: no
// retry is published, nothing is dead-lettered, no error hook runs. (A
// transport that counts deliveries — SQLite, SQS, memory — counts this one
// too, as it counts a redelivery after an expired lease.) The idempotency claim throws it for a duplicate delivery
// whose first copy is still being handled elsewhere.
//
// On transports without a native delay (Capabilities::native_delay false)
// the handler thread waits out the delay before the release, so a message
// whose holder still runs does not come back in a hot loop.
#pragma once

#include <chrono>
#include <exception>
#include <string>
#include <utility>

namespace babelqueue {

/// Thrown to hand a message back after delay, unhandled and not failed (this
/// header's opening comment gives the effect).
class ReleaseDelivery : public std::exception {
 public:
  /// Back after delay; reason is for the log.
  ReleaseDelivery(std::chrono::milliseconds delay, std::string reason) : delay_(delay), reason_(std::move(reason)) {}

  /// How long the broker keeps the message back; zero = at once.
  std::chrono::milliseconds delay() const noexcept { return delay_; }
  /// Why, for the worker's log.
  const char* what() const noexcept override { return reason_.c_str(); }

 private:
  std::chrono::milliseconds delay_;
  std::string reason_;
};

}  // namespace babelqueue
