// SPDX-License-Identifier: Apache-2.0
// Relay: publishes what an outbox Store holds (the family's ADR-0029;
// docs/outbox.md). Each claimed row's bytes go to its queue verbatim —
// never decoded or re-encoded, no headers added — through Transport::publish.
//
//   - a row is marked published only after the transport confirmed it; the
//     confirmed rows of a batch are marked together at its end;
//   - a failed publish marks its row failed (attempts + 1, the error text)
//     and puts off its next try by min(backoff_step × attempts, backoff_cap);
//     the rest of the batch goes on: one bad row never blocks the others;
//   - at least once: a relay killed between a publish and its mark leaves
//     the row claimed until the lease ends, then another pass publishes it
//     again. Consumers deduplicate on meta.id (docs/idempotency.md).
//
// Thread-safety: one thread drives a Relay; run() stops when stop is set
// from any thread.
#pragma once

#include <babelqueue/outbox/store.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>

namespace babelqueue::outbox {

/// How a relay reads and retries.
struct RelayOptions {
  std::size_t batch_size = 100;                 ///< rows claimed per pass
  std::chrono::milliseconds backoff_step{50};   ///< a failed row waits step × its attempts ...
  std::chrono::milliseconds backoff_cap{5000};  ///< ... at most this long
  std::chrono::milliseconds lease{30000};       ///< how long claimed rows stay this relay's
  std::chrono::milliseconds idle_wait{500};     ///< run(): the longest wait for new rows
};

/// What relaying did.
struct RelayResult {
  std::size_t published = 0;  ///< rows confirmed and marked published
  std::size_t failed = 0;     ///< publishes that failed (rows kept pending)
  /// Adds another result's counts.
  RelayResult& operator+=(const RelayResult& other) noexcept {
    published += other.published;
    failed += other.failed;
    return *this;
  }
};

/// Moves an outbox's rows to the broker.
class Relay {
 public:
  /// Both are borrowed and must outlive the relay.
  Relay(Transport& transport, Store& store, RelayOptions options = {});

  /// One pass: claims up to batch_size rows and publishes each. An error
  /// only when the store fails (the rows published before it are marked).
  Result<RelayResult> flush();

  /// Passes until one claims nothing, or max_passes of them.
  Result<RelayResult> drain(std::size_t max_passes = 10000);

  /// Passes until stop is set: after a pass that claimed nothing it waits
  /// for new rows (Store::wait_for_rows, at most idle_wait). on_pass, when
  /// set, gets each pass's counts. A store error is retried after idle_wait
  /// (a database that restarts) unless stop is set.
  Result<RelayResult> run(const std::atomic<bool>& stop,
                          const std::function<void(const RelayResult&, const ErrorInfo*)>& on_pass = {});

 private:
  Transport& transport_;
  Store& store_;
  RelayOptions options_;
};

}  // namespace babelqueue::outbox
