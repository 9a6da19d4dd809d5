// SPDX-License-Identifier: Apache-2.0
// Message: what a handler receives — the decoded envelope plus where it came
// from and its out-of-band headers.
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/transport.hpp>

#include <string_view>

namespace babelqueue {

/// What a handler receives: the decoded envelope, the queue and the
/// out-of-band headers, all valid during the handler's call only.
class Message {
 public:
  /// A view of these; each must outlive the Message.
  Message(const Envelope& envelope, std::string_view queue, const Headers& headers) noexcept
      : envelope_(envelope), queue_(queue), headers_(headers) {}

  const Envelope& envelope() const noexcept { return envelope_; }              ///< the decoded envelope
  std::string_view urn() const noexcept { return envelope_.urn(); }            ///< its URN
  std::string_view trace_id() const noexcept { return envelope_.trace_id(); }  ///< its trace_id
  std::string_view id() const noexcept { return envelope_.id(); }              ///< its meta.id
  std::int64_t attempts() const noexcept { return envelope_.attempts(); }      ///< deliveries before this one
  /// The queue the message was consumed from.
  std::string_view queue() const noexcept { return queue_; }
  const Headers& headers() const noexcept { return headers_; }  ///< the out-of-band headers
  /// The value of an out-of-band header, empty when absent.
  std::string_view header(std::string_view name) const noexcept {
    auto it = headers_.find(name);
    return it == headers_.end() ? std::string_view() : std::string_view(it->second);
  }
  /// True when the message is a replay from a dead-letter queue redriven with
  /// bypass (the bq-replay-bypass header is set): skip external side effects.
  bool is_replay() const noexcept { return !header(kReplayBypassHeader).empty(); }

 private:
  const Envelope& envelope_;
  std::string_view queue_;
  const Headers& headers_;
};

/// Runs effect unless the message is a replay (the family's ADR-0027): for side effects
/// that must not happen twice (charging a card, sending an e-mail) when an
/// operator redrives a dead-letter queue with bypass.
template <class F>
void bypass_external_effects(const Message& message, F&& effect) {
  if (!message.is_replay()) std::forward<F>(effect)();
}

}  // namespace babelqueue
