// SPDX-License-Identifier: Apache-2.0
// Worker: publishes envelopes and consumes queues, routing each message to
// the handler registered for its URN.
//
// Semantics (SPEC §6–§8, docs/runtime.md's outcome table):
// - a handler that returns normally (or an ok Result) acks the message;
// - a handler that throws (or returns an error) fails it: attempts+1, then a
//   republish to the same queue while attempts < max_attempts, else the
//   dead-letter queue (reason failed / unknown_urn) when dead-lettering is on,
//   else the message is dropped (logged); an error that is not retriable
//   (ErrorInfo::retriable) skips the retries;
// - a handler may decide instead (HandlerOutcome): retry after a delay,
//   dead-letter now with a reason, or drop;
// - a handler (or a middleware) that throws ReleaseDelivery hands the
//   message back unhandled, after its delay, its body unchanged;
// - poison (not JSON, not an acceptable envelope, rejected by the
//   transport's schema-version gate) never reaches a handler and is never
//   retried: it goes to the dead-letter queue with reason poison, bytes kept;
// - the original is acked only after the republish or dead-letter publish
//   succeeded; when that publish fails, the original is released instead, so
//   nothing is lost unless the user chose to drop it.
//
// Thread-safety: register handlers before run(); publish(), stop() and
// metrics() may be called from any thread at any time. One run() at a time.
#pragma once

#include <babelqueue/detail/handler_adapter.hpp>
#include <babelqueue/handler_outcome.hpp>
#include <babelqueue/message.hpp>
#include <babelqueue/middleware.hpp>
#include <babelqueue/publish_params.hpp>
#include <babelqueue/release_delivery.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/typed_message.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/worker_options.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace babelqueue {

/// Counters of what a worker did, updated as it goes.
struct WorkerMetricsSnapshot {
  std::uint64_t received = 0;       ///< deliveries taken from the transport
  std::uint64_t succeeded = 0;      ///< handled and acked
  std::uint64_t failed = 0;         ///< handler failures (including unknown URNs under "fail")
  std::uint64_t retried = 0;        ///< republished with attempts+1
  std::uint64_t dead_lettered = 0;  ///< published to a dead-letter queue (any reason)
  std::uint64_t poison = 0;         ///< poison messages seen
  std::uint64_t unknown_urn = 0;    ///< messages with no handler
  std::uint64_t dropped = 0;        ///< acked without being handled or dead-lettered, by choice
  std::uint64_t released = 0;       ///< handed back to the broker for redelivery
  std::uint64_t settle_errors = 0;  ///< ack / release / publish calls that failed
  std::uint64_t lease_expired = 0;  ///< received, then not run: the lease ended before a handler was free
};

/// The worker's counters, updated as it runs (atomics, read from any thread).
class WorkerMetrics {
 public:
  /// The counters now.
  WorkerMetricsSnapshot snapshot() const noexcept;

 private:
  friend class Worker;
  std::atomic<std::uint64_t> received{0}, succeeded{0}, failed{0}, retried{0}, dead_lettered{0}, poison{0},
      unknown_urn{0}, dropped{0}, released{0}, settle_errors{0}, lease_expired{0};
};

/// When run() returns by itself.
struct RunLimits {
  /// Stop after this many messages were received (0 = no limit).
  std::size_t max_messages = 0;
  /// Stop once no message arrived for this long and none is in flight
  /// (zero = at the first empty poll). The time counts from the last receive
  /// that brought a message, whatever happened since: empty receives and
  /// failing ones alike. When the last receive failed (the broker is
  /// unreachable, the file locked or damaged), run() does not end as idle —
  /// it could not see that the queue is empty — but fails with that error.
  std::optional<std::chrono::milliseconds> idle_exit;
  /// Fail once no receive has succeeded for this long (every one failed with
  /// a retriable error: the broker is down, unreachable or refusing): run()
  /// returns the last error, naming the bound. Empty = retry for ever (with
  /// WorkerOptions::receive_error_backoff between tries).
  std::optional<std::chrono::milliseconds> unreachable_exit;
  /// With idle_exit: a retry or release this run sent back with a delay
  /// counts as work still to do until it is due, so a batch job meant to
  /// empty its queue does not end with its own retries left behind. False:
  /// idle as soon as the queue looks empty (drain() does that).
  bool idle_waits_for_own_delayed = true;
};

/// What run() did, and why it returned.
struct RunSummary {
  std::size_t processed = 0;  ///< deliveries settled (any outcome)
  /// stop() was called, RunLimits::idle_exit passed, or max_messages were received.
  enum class Reason { stopped, idle, max_messages };
  Reason reason = Reason::stopped;  ///< why run() returned
};

/// Consumes queues through a Transport and runs the handler of each message's
/// URN, with the family's retries, dead-lettering and poison handling
/// (docs/runtime.md); publishes envelopes too.
class Worker {
 public:
  /// A handler fails by throwing or by returning an error Result, or decides
  /// its message's fate with a HandlerOutcome.
  using Handler = MessageHandler;

  /// The worker borrows transport, which must outlive it. Options out of
  /// their range (WorkerOptions::check) throw Error(Errc::invalid_argument)
  /// naming the field.
  explicit Worker(Transport& transport, WorkerOptions options = {});
  /// The worker owns transport.
  explicit Worker(std::unique_ptr<Transport> transport, WorkerOptions options = {});
  /// Stops a run() in progress on another thread and waits until it has
  /// returned (in-flight handlers get the shutdown deadline), so destroying a
  /// running Worker is safe. A run() that has not started yet when the
  /// destructor runs is the caller's to prevent: join the thread that calls
  /// run(), or destroy the Worker only after it has started.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Routes messages whose URN is exactly urn to handler; a later
  /// registration for the same URN replaces the earlier one.
  /// handler(const Message&) returns void (done unless it throws),
  /// Result<void> (an error fails it: retried when the error is retriable,
  /// dead-lettered at once when not) or a HandlerOutcome (handler_outcome.hpp:
  /// ack, retry after a delay, dead-letter now, drop). Move-only callables
  /// are accepted. The Message and everything it refers to live only during
  /// the call: copy what must outlive it.
  template <class F>
  void handle(std::string urn, F&& handler) {
    add_handler(std::move(urn), detail::make_handler(std::forward<F>(handler)));
  }

  /// The catch-all: handles every message whose URN has no handler of its own
  /// (routers, bridges, the CLI's `work`). The unknown-URN strategy applies
  /// only when there is neither. A later call replaces the earlier one.
  void handle_any(Handler handler);

  /// A typed handler: handler(const T&) or handler(const T&, const Message&),
  /// T read from data with T::from_value; it returns what an untyped handler
  /// may. A payload T::from_value rejects (throws) is an invalid payload:
  /// dead-lettered at once with its bytes, never retried.
  template <TypedMessage T, class F>
  void handle(F&& handler) {
    add_handler(std::string(T::urn), detail::make_typed_handler<T>(std::forward<F>(handler)));
  }

  /// Adds a middleware inside those of WorkerOptions::middleware and earlier
  /// use() calls (middleware.hpp gives the order). Before the first run() or
  /// publish(): afterwards it is an Errc::invalid_argument Error.
  void use(std::shared_ptr<Middleware> middleware);

  /// Builds, encodes and publishes an envelope (through the publish side of
  /// the middleware); returns its meta.id.
  Result<std::string> publish(std::string_view urn, const Value& data, const PublishParams& params = {});
  /// The same for a typed message, its envelope made by
  /// Envelope::make(message): written by its write_data, else its to_value().
  template <PublishableMessage T>
  Result<std::string> publish(const T& message, const PublishParams& params = {}) {
    return publish_made(Envelope::make(message, make_options(params)), nullptr, params);
  }

  /// Consumes queues (empty = the default queue) until stop() or a limit.
  /// Fails only when the worker itself cannot go on (a non-retriable
  /// transport error such as refused credentials, or a second run()).
  Result<RunSummary> run(std::vector<std::string> queues = {}, RunLimits limits = {});

  /// Processes messages of queue until it is empty or max were handled
  /// (0 = no limit): for tests and one-shot jobs. Returns how many. A retry
  /// it sent back with a delay is not waited for (run() with idle_exit is).
  /// Receive errors that can be retried are retried (with the backoff) until
  /// a receive succeeds: a failing receive is not an empty queue.
  Result<std::size_t> drain(std::string_view queue = {}, std::size_t max = 0);

  /// Asks run() to stop: no new receives, buffered messages are released,
  /// in-flight handlers get the shutdown deadline. Returns at once; safe from
  /// any thread. A stop() before run() makes that run() return at once.
  void stop() noexcept;

  const WorkerMetrics& metrics() const noexcept;  ///< its counters
  const WorkerOptions& options() const noexcept;  ///< the options it runs with
  Transport& transport() noexcept;                ///< the transport it consumes and publishes through

 private:
  void add_handler(std::string urn, Handler handler);
  /// What Envelope::make writes for params: the queue (params' or the
  /// default one) and the trace.
  MakeOptions make_options(const PublishParams& params) const;
  /// Publishes an envelope just made (or returns the error of making it);
  /// data: what it was made from, when there was a Value, for the
  /// middleware (PublishRequest::data).
  Result<std::string> publish_made(Result<Envelope> made, const Value* data, const PublishParams& params);
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace babelqueue
