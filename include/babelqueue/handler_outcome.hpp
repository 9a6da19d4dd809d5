// SPDX-License-Identifier: Apache-2.0
// HandlerOutcome: what a handler decides for its message, beyond "done" and
// "failed".
//
//   worker.handle("urn:babel:orders:created", [&](const Message& m) -> HandlerOutcome {
//     if (!inventory.reachable()) return HandlerOutcome::retry(std::chrono::seconds(30));
//     if (order_is_malformed(m)) return HandlerOutcome::dead_letter("order has no lines");
//     if (already_shipped(m)) return HandlerOutcome::drop("shipped already");
//     ship(m);
//     return HandlerOutcome::ack();
//   });
//
// - ack: done; the message is acknowledged.
// - retry(delay): run it again after delay (zero: at once, or after the
//   Worker's retry_backoff when set), as a failure does — attempts + 1, and
//   at max_attempts it is dead-lettered (dropped without dead-lettering).
// - dead_letter(reason): it will fail the same way every time: to the
//   dead-letter queue now, reason "failed" and `reason` as the block's error;
//   dropped (and logged) when dead-lettering is off.
// - drop(reason): acknowledged without running again, logged.
//
// Handlers that prefer exceptions throw OutcomeException(outcome); that is
// also how a returned outcome travels through the middleware. Errors say the
// same by their retriability: a returned or thrown babelqueue error that is
// not retriable (ErrorInfo::retriable()) is a dead_letter outcome, any other
// failure a retry.
//
// Thread-safety: plain values.
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <utility>

namespace babelqueue {

/// What a handler decides for its message (this header's opening comment
/// gives each outcome's effect).
class HandlerOutcome {
 public:
  /// The four outcomes.
  enum class Kind { ack, retry, dead_letter, drop };

  /// Done: the message is acknowledged.
  static HandlerOutcome ack() { return HandlerOutcome(Kind::ack, {}, {}); }
  /// Run it again after delay, as a failure does (attempts + 1).
  static HandlerOutcome retry(std::chrono::milliseconds delay = {}, std::string reason = "retry requested") {
    return HandlerOutcome(Kind::retry, delay, std::move(reason));
  }
  /// To the dead-letter queue now, with reason as the block's error.
  static HandlerOutcome dead_letter(std::string reason) {
    return HandlerOutcome(Kind::dead_letter, {}, std::move(reason));
  }
  /// Acknowledged without running again, and logged with reason.
  static HandlerOutcome drop(std::string reason) { return HandlerOutcome(Kind::drop, {}, std::move(reason)); }

  /// Which outcome it is.
  Kind kind() const noexcept { return kind_; }
  /// retry: how long to wait; never negative.
  std::chrono::milliseconds delay() const noexcept { return delay_; }
  /// Why, for the log and (dead_letter) the dead-letter block's error.
  const std::string& reason() const noexcept { return reason_; }

 private:
  HandlerOutcome(Kind kind, std::chrono::milliseconds delay, std::string reason)
      : kind_(kind), delay_(std::max(delay, std::chrono::milliseconds(0))), reason_(std::move(reason)) {}

  Kind kind_;
  std::chrono::milliseconds delay_;
  std::string reason_;
};

/// The thrown form of a HandlerOutcome.
class OutcomeException : public std::exception {
 public:
  explicit OutcomeException(HandlerOutcome outcome) : outcome_(std::move(outcome)) {}  ///< throws this outcome
  const HandlerOutcome& outcome() const noexcept { return outcome_; }                  ///< the outcome thrown
  const char* what() const noexcept override { return outcome_.reason().c_str(); }     ///< the outcome's reason

 private:
  HandlerOutcome outcome_;
};

}  // namespace babelqueue
