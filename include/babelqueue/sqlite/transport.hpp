// SPDX-License-Identifier: Apache-2.0
// Transport: the embedded, durable transport — a queue in one SQLite
// file, so the SDK works with no broker at all (library babelqueue::sqlite).
//
// URL: sqlite://PATH[?visibility_timeout=DURATION&busy_timeout=DURATION
//                    &poll_interval=DURATION&synchronous=normal|full]
//   sqlite://queue.db, sqlite://data/queue.db  a path relative to the working directory
//   sqlite:///var/lib/app/queue.db             an absolute path (three slashes)
// Durations are 500ms, 5s, 2m, 1h or a bare number of seconds (duration.hpp):
// visibility_timeout 1ms to 1 year, busy_timeout 0 to 24h, poll_interval 1ms
// to 1h. Unknown parameters are errors, so a misspelt one is never silently
// ignored (url_options.hpp).
//
// Guarantees (docs/transports/sqlite.md explains how):
//   - Every state change (publish, claim, ack or a batch of acks, release,
//     extend) is one committed transaction, so killing any process at any moment loses
//     nothing: a message is either in the file or was never acknowledged as
//     published; a reservation held by a dead process simply expires after
//     the visibility timeout and the message is received again.
//   - Several threads and several processes may publish and consume the same
//     file at once (WAL mode, busy timeout, short BEGIN IMMEDIATE write
//     transactions, bounded retry on SQLITE_BUSY).
//   - Each queue is first in, first out by the time a message became
//     available (published, released, or its reservation expired), then by
//     insertion order.
//   - Delivery::native_attempts is the number of earlier deliveries of the
//     stored message (a release or an expired reservation counts), like SQS's
//     ApproximateReceiveCount - 1; the runtime merges it with the body's
//     attempts by max().
//   - A token whose lease was lost (its reservation expired and another
//     consumer received the message) settles nothing: ack, release and extend
//     answer Errc::not_found.
//   - PublishOptions::dedup_id and ordering_key are ignored: one file has one
//     order and no deduplication window.
//
// Thread-safety: all methods are thread-safe. The transport holds one SQLite
// connection guarded by a mutex: SQLite admits one writer per file at a time
// and nearly every operation writes, so threads of one process queue on the
// mutex (a fair, immediate hand-over) instead of sleeping in SQLite's busy
// handler. Waiting in receive() happens outside that mutex.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <memory>
#include <string>

/// The SQLite transport and idempotency store (library babelqueue::sqlite).
namespace babelqueue::sqlite {

/// The embedded, durable transport: sqlite:// in one file, no broker (this
/// header's opening comment gives the URL and the guarantees).
class Transport final : public babelqueue::Transport {
 public:
  /// How hard each commit is pushed to the disk (PRAGMA synchronous).
  enum class Synchronous {
    normal,  ///< survives any process crash; a power cut may lose the last commits (never corrupts)
    full,    ///< also survives a power cut, at the cost of an fsync per commit
  };

  /// The file and its behaviour; the URL parameters of the same names set them.
  struct Options {
    /// The database file; created (with its schema) when missing. The
    /// directory must exist.
    std::string path;
    /// A received message not settled within this time can be received again
    /// (by this or any other process). Must be positive.
    std::chrono::milliseconds visibility_timeout{std::chrono::seconds(30)};
    /// How long one statement waits for another connection's write lock
    /// before the operation fails with Errc::timeout.
    std::chrono::milliseconds busy_timeout{std::chrono::seconds(5)};
    /// The longest pause between two looks at an empty queue while receive()
    /// waits; pauses start at 5 ms and double up to this. Messages published
    /// through this same transport wake a waiting receive() at once.
    std::chrono::milliseconds poll_interval{50};
    Synchronous synchronous = Synchronous::normal;  ///< how hard each commit is pushed to the disk
  };

  /// Opens (and creates, when missing) the database. Errors: Errc::io naming
  /// the path when the file cannot be opened or is not a SQLite database (or
  /// is corrupt), Errc::unsupported when a newer SDK wrote its schema,
  /// Errc::timeout when other connections kept it locked beyond busy_timeout,
  /// Errc::invalid_argument for bad options.
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from a sqlite:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// One transaction: either every message is published or none is.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  using babelqueue::Transport::ack_batch;
  /// One transaction for the whole batch; a delivery whose lease was lost is
  /// reported (Errc::not_found) without holding back the others.
  Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override;
  /// ready: receivable now (expired reservations included); reserved: held
  /// under a live lease; delayed: published or released with a delay that has
  /// not passed.
  Result<QueueStats> stats(std::string_view queue) override;
  /// The ready rows, oldest first, read without a lease.
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  /// Wakes blocked receive() calls (they answer Errc::closed), waits up to
  /// deadline for an operation in progress, then closes the connection.
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

 private:
  class State;
  explicit Transport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers the sqlite:// scheme with open_transport(). Call it once, from
/// any thread, before opening sqlite:// URLs; calling it again is harmless.
void register_transport();

/// The options by their short name: babelqueue::sqlite::Options.
using Options = Transport::Options;

}  // namespace babelqueue::sqlite
