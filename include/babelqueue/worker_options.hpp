// SPDX-License-Identifier: Apache-2.0
// The options of a Worker: the family's defaults (default queue "default",
// 3 attempts, unknown-URN strategy "fail", dead-lettering off) plus what the
// other SDKs lack: concurrency, prefetch, retry backoff, a shutdown deadline,
// hooks, a logger and metrics.
#pragma once

#include <babelqueue/backoff.hpp>  // BackoffPolicy, here since the Worker's options use it
#include <babelqueue/dead_letter.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/log_sink.hpp>  // LogLevel, LogSink, stderr_log_sink
#include <babelqueue/middleware.hpp>
#include <babelqueue/transport.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue {

/// What happens to a message whose URN has no handler.
enum class UnknownUrnStrategy {
  fail,         ///< a handler failure: retried up to max_attempts, then dead-lettered (unknown_urn) or dropped
  drop,         ///< "delete": acknowledged and gone (logged)
  release,      ///< back to its queue after unknown_urn_release_delay, bounded by max_attempts
  dead_letter,  ///< straight to the dead-letter queue (unknown_urn); without dead-lettering it degrades to drop
};

/// The strategy's name as the family spells it ("fail", "delete", ...).
std::string_view to_string(UnknownUrnStrategy strategy) noexcept;
/// Accepts the family's names: fail, delete, release, dead_letter.
std::optional<UnknownUrnStrategy> unknown_urn_strategy_from_string(std::string_view name) noexcept;

/// What WorkerHooks::on_error receives. Views are valid during the call only.
struct ErrorEvent {
  std::string_view queue;           ///< the queue the message came from
  const Envelope* envelope;         ///< the failed message
  std::string_view error;           ///< what() of the exception, or the error's message
  std::string_view exception_type;  ///< the exception's type, or the error code's name
  bool will_retry;                  ///< false when the message is dead-lettered or dropped next
};

/// What WorkerHooks::on_dead_letter receives. Views are valid during the call only.
struct DeadLetterEvent {
  std::string_view queue;              ///< the queue the message came from
  std::string_view dead_letter_queue;  ///< where it went
  const DeadLetter* block;             ///< the dead_letter block written into it
  std::string_view body;               ///< what was published to the dead-letter queue
};

/// What WorkerHooks::on_poison receives: a message that is not an acceptable
/// envelope. Views are valid during the call only.
struct PoisonEvent {
  std::string_view queue;   ///< the queue it came from
  std::string_view body;    ///< the original bytes
  Rejection reason;         ///< why it is not acceptable
  std::string_view detail;  ///< the decoder's words for it
  bool dead_lettered;       ///< false: dropped (dead-lettering off) or left to the broker's policy
};

/// Callbacks the Worker calls from its handler threads; an empty one is not called.
struct WorkerHooks {
  std::function<void(const ErrorEvent&)> on_error;             ///< a handler failed
  std::function<void(const DeadLetterEvent&)> on_dead_letter;  ///< a message was dead-lettered
  std::function<void(const PoisonEvent&)> on_poison;           ///< a message was not an acceptable envelope
};

/// How a Worker runs (docs/runtime.md gives each field's effect).
struct WorkerOptions {
  std::string default_queue = "default";  ///< the queue of a handler registered without one
  /// Total deliveries of a failing message: attempts 0 .. max_attempts-1 run
  /// the handler; the dead-letter copy carries attempts = max_attempts.
  std::int64_t max_attempts = 3;
  UnknownUrnStrategy unknown_urn = UnknownUrnStrategy::fail;  ///< a message whose URN has no handler
  std::chrono::milliseconds unknown_urn_release_delay{
      std::chrono::seconds(5)};  ///< UnknownUrnStrategy::release's pause
  bool dead_letter = false;      ///< failed and poison messages go to the dead-letter queue (else dropped)
  /// The dead-letter queue; empty = the transport's name for it (queue + ".dlq").
  std::string dead_letter_queue;
  /// How long one receive waits for a message.
  std::chrono::milliseconds poll_timeout{std::chrono::seconds(1)};
  /// Handler threads.
  std::size_t concurrency = 1;
  /// Messages received ahead of the handlers; they stay reserved (their
  /// leases kept) until a handler takes them. 0 = max(concurrency,
  /// Capabilities::default_prefetch): 16, 256 on SQLite, so one receive
  /// fetches a batch; on a transport that holds messages ahead of receive()
  /// anyway (Capabilities::held_ahead, e.g. Artemis's credit window), up to
  /// 32 per handler thread, no more than it holds.
  std::size_t prefetch = 0;
  /// Bytes of bodies received ahead of the handlers, as well as prefetch
  /// messages: the worker receives again only once the bodies it holds
  /// unstarted are no more than half of it, and asks for no more messages
  /// than fit in what is left at the size of the last batch received (at
  /// least one; the worker's first receive asks for one per handler thread,
  /// to learn it). Big messages then wait at the broker, not in memory, and
  /// do not outlive their leases in the buffer. 0: no byte bound.
  std::size_t prefetch_bytes = std::size_t{64} << 20U;
  /// Off by default: retries are republished at once, as in the family. On:
  /// retries are delayed with the transport's native delay; retry n (1 for
  /// the first) waits retry_backoff->delay_for(n).
  std::optional<BackoffPolicy> retry_backoff;
  /// The pause after a receive that failed with a retriable error (a broker
  /// restarting), growing per consecutive failure and reset by a success.
  BackoffPolicy receive_error_backoff{std::chrono::milliseconds(100), 2.0, std::chrono::seconds(5), 0.0};
  /// When the publish that follows a failure (retry, dead-letter) fails, the
  /// original is released for redelivery after this delay (where the
  /// transport has native delay), so a broker that rejects publishes does not
  /// make the handler run in a hot loop.
  std::chrono::milliseconds release_delay_on_error{std::chrono::seconds(1)};
  /// On stop, how long in-flight handlers may run before their messages are
  /// released back to the broker.
  std::chrono::milliseconds shutdown_deadline{std::chrono::seconds(30)};
  /// Where the transport supports it (Capabilities::extendable_lease), a
  /// running handler's message is kept reserved by extending its lease by
  /// this much every third of it; zero = the transport's own lease length
  /// (Capabilities::lease). Turned off when both are zero.
  std::chrono::milliseconds lease_extension{0};
  /// Where the transport settles a batch of acks in one round trip
  /// (Capabilities::batch_ack, e.g. SQS), the acks of handled messages are
  /// gathered: a batch of Capabilities::ack_batch_size (10; 256 on SQLite)
  /// is sent at once, a smaller one once its first
  /// ack has waited this long (at most a quarter of the transport's lease),
  /// and whatever is pending when a run ends is sent before run() returns.
  /// Zero sends every ack at once, on its own.
  std::chrono::milliseconds ack_linger{20};
  DecodeOptions decode;  ///< limits of the decoder for received bodies
  WorkerHooks hooks;     ///< callbacks on errors, dead letters and poison
  /// Around every handler and every publish, the first listed outermost
  /// (middleware.hpp): idempotency, payload schemas, your own. Worker::use()
  /// adds more.
  std::vector<std::shared_ptr<Middleware>> middleware;
  /// Where the worker logs; an empty function silences it.
  LogSink log = stderr_log_sink();

  /// Errc::invalid_argument naming the first field out of its range and the
  /// range: default_queue not empty; max_attempts 1 to 1000000; concurrency
  /// 1 to 4096; prefetch 0 (automatic) to 1000000; poll_timeout, the delays,
  /// deadlines and lingers not negative; both backoff policies valid
  /// (BackoffPolicy::check). The Worker's constructor runs it.
  Result<void> check() const;
};

}  // namespace babelqueue
