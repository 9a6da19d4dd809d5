// SPDX-License-Identifier: Apache-2.0
// Redrive (the family's ADR-0026): move messages from a dead-letter queue back to where they
// failed, after the cause was fixed.
//
// The dead-letter queue is drained first (every message held reserved), then
// each message is, in order: restored to the dead-letter queue when it cannot
// be decoded, is not selected, or this is a dry run; otherwise reset
// (dead_letter block removed, attempts 0, every other byte kept) and published
// to its target (to_queue, else dead_letter.original_queue, else meta.queue),
// and its dead-letter copy acknowledged only after that publish succeeded. A
// failed publish restores the message and every one not yet processed.
//
// With bypass, redriven messages carry the bq-replay-bypass header
// (the family's ADR-0027), so handlers can skip external side effects on the replay.
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue {

/// What redrive() moves, and where.
struct RedriveOptions {
  std::string to_queue;                                     ///< empty = each message's original queue
  std::size_t max = 0;                                      ///< 0 = every message available now
  bool dry_run = false;                                     ///< report what would be redriven, move nothing
  std::function<bool(const Envelope&)> select;              ///< empty = all
  bool bypass = false;                                      ///< redriven messages carry the bq-replay-bypass header
  std::chrono::milliseconds wait{std::chrono::seconds(1)};  ///< per receive
};

/// One message redrive() looked at.
struct RedriveItem {
  std::string message_id;  ///< meta.id
  std::string trace_id;    ///< trace_id
  std::string urn;         ///< the URN
  std::string reason;      ///< dead_letter.reason
  std::string from;        ///< the dead-letter queue
  std::string to;          ///< empty when not redriven and no target is known
  bool redriven = false;   ///< published to `to` and taken off the dead-letter queue
  bool bypassed = false;   ///< published with the bq-replay-bypass header
  std::string note;        ///< why it was skipped, when it was
};

/// What redrive() did.
struct RedriveResult {
  std::size_t redriven = 0;        ///< messages moved
  std::size_t skipped = 0;         ///< messages left on the dead-letter queue
  std::vector<RedriveItem> items;  ///< each message, in the order read
  /// Set in the progress of a run that stopped at a failed publish (the
  /// same error the run returns).
  std::optional<ErrorInfo> error;
};

/// Fails when the dead-letter queue could not be read at all, and when a
/// publish failed midway: the run stopped there, that message and every
/// later one were restored to the dead-letter queue, and the error (the
/// publish's code, retriability and broker details) says how many were
/// redriven before it. A success means every message was handled.
Result<RedriveResult> redrive(Transport& transport, std::string_view dead_letter_queue,
                              const RedriveOptions& options = {});

/// The same, filling progress with what was done whether the run succeeded
/// or not, so a caller can report each message of a run that stopped.
Result<RedriveResult> redrive(Transport& transport, std::string_view dead_letter_queue, const RedriveOptions& options,
                              RedriveResult& progress);

}  // namespace babelqueue
