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

struct RedriveOptions {
  std::string to_queue;  // empty = each message's original queue
  std::size_t max = 0;   // 0 = every message available now
  bool dry_run = false;
  std::function<bool(const Envelope&)> select;  // empty = all
  bool bypass = false;
  std::chrono::milliseconds wait{std::chrono::seconds(1)};  // per receive
};

struct RedriveItem {
  std::string message_id;
  std::string trace_id;
  std::string urn;
  std::string reason;  // dead_letter.reason
  std::string from;
  std::string to;  // empty when not redriven and no target is known
  bool redriven = false;
  bool bypassed = false;
  std::string note;  // why it was skipped, when it was
};

struct RedriveResult {
  std::size_t redriven = 0;
  std::size_t skipped = 0;
  std::vector<RedriveItem> items;
  // Set when a publish failed: the run stopped there, that message and
  // every later one were restored to the dead-letter queue.
  std::optional<ErrorInfo> error;
};

// Fails only when the dead-letter queue could not be read at all; a failed
// publish midway is reported in RedriveResult::error with what was done.
Result<RedriveResult> redrive(Transport& transport, std::string_view dead_letter_queue,
                              const RedriveOptions& options = {});

}  // namespace babelqueue
