// SPDX-License-Identifier: Apache-2.0
// Internal: one libpq connection for a store, used by one call at a time,
// re-established when the server dropped it; results freed by RAII; libpq's
// errors turned into the SDK's (connection, auth, broker).
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/url.hpp>

#include <libpq-fe.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::postgres_detail {

struct ResultDeleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using QueryResult = std::unique_ptr<PGresult, ResultDeleter>;

class Connection {
 public:
  /// Connects to conninfo (a libpq string or URI).
  static Result<std::unique_ptr<Connection>> open(std::string conninfo);
  ~Connection();

  /// Runs sql with text parameters ($1, $2, ...), retrying once on a fresh
  /// connection when the server had dropped this one. The result of a
  /// command or a query; the server's error otherwise.
  Result<QueryResult> exec(const std::string& sql, const std::vector<std::string>& params = {});

  /// The lock held around a sequence of exec() calls that must not
  /// interleave with another thread's (exec() takes it itself).
  std::recursive_mutex& mutex() noexcept { return mutex_; }

  /// The connection string with any password left out.
  std::string describe() const;

  PGconn* raw() noexcept { return conn_; }

 private:
  explicit Connection(std::string conninfo) : conninfo_(std::move(conninfo)) {}
  Result<void> connect();
  std::string conninfo_;
  PGconn* conn_ = nullptr;
  std::recursive_mutex mutex_;
};

/// Whether name may be interpolated into SQL as a table name.
bool valid_identifier(std::string_view name) noexcept;

/// The libpq connection string (key='value' pairs) of a postgresql:// URL:
/// its host, port, user, password, database, and every query parameter
/// except those named in own (the store's: table, ttl, ...).
std::string conninfo_of(const Url& url, const std::vector<std::string_view>& own);

}  // namespace babelqueue::postgres_detail
