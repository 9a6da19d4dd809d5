// SPDX-License-Identifier: Apache-2.0
// Store: where the transactional outbox (the family's ADR-0029, library
// babelqueue::outbox; docs/outbox.md) keeps messages between the caller's
// commit and the relay's publish. Each store also has a write function
// that takes the caller's own database handle inside the caller's open
// transaction (sqlite_store.hpp); this interface is the relay's side.
//
// A row is pending until mark_published(); claim() hands pending rows to
// one relay for a lease, so relays sharing a table do not publish the same
// row at the same time (a relay that dies leaves its rows to the others
// once the lease ends: they are published again — at least once).
//
// Thread-safety: a Store is used by one relay at a time.
#pragma once

#include <babelqueue/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

/// The transactional outbox and its relay (library babelqueue::outbox).
namespace babelqueue::outbox {

/// One pending message as the relay reads it.
struct Record {
  std::int64_t id = 0;        ///< the outbox row's id (not meta.id)
  std::string queue;          ///< where it goes
  std::string body;           ///< the envelope's bytes exactly as written
  std::int64_t attempts = 0;  ///< failed publishes so far
};

/// The relay's side of an outbox table.
class Store {
 public:
  virtual ~Store() = default;

  /// Up to limit pending rows that are due (no backoff running) and not
  /// claimed by another relay, oldest first, each now claimed for lease.
  virtual Result<std::vector<Record>> claim(std::size_t limit, std::chrono::milliseconds lease) = 0;

  /// Marks rows published (the transport confirmed them).
  virtual Result<void> mark_published(const std::vector<std::int64_t>& ids) = 0;

  /// Records a failed publish: attempts + 1, the error text, and no new try
  /// before retry_after has passed. The row stays pending.
  virtual Result<void> mark_failed(std::int64_t id, std::string_view error, std::chrono::milliseconds retry_after) = 0;

  /// Returns once rows may have been written, or after timeout. A store
  /// without a wake-up sleeps the timeout (the relay then polls).
  virtual Result<void> wait_for_rows(std::chrono::milliseconds timeout);

  /// The store's location with any password left out, for logs.
  virtual std::string describe() const = 0;
};

/// Whether name is a table name the stores accept: [A-Za-z_][A-Za-z0-9_]*,
/// at most 63 characters (it is written into SQL, never quoted from input).
bool valid_table_name(std::string_view name) noexcept;

/// The default table: babelqueue_outbox.
inline constexpr std::string_view kDefaultTable = "babelqueue_outbox";

}  // namespace babelqueue::outbox
