// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed babelqueue::outbox alone: a message written in
// a transaction of an in-memory SQLite database is published by the relay.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/outbox/relay.hpp>
#include <babelqueue/outbox/sqlite_store.hpp>

#include <sqlite3.h>

#include <filesystem>
#include <iostream>

int main() {
  namespace outbox = babelqueue::outbox;
  const auto file = std::filesystem::temp_directory_path() / ("bq-outbox-pkg-" + babelqueue::uuid_v4() + ".db");
  sqlite3* db = nullptr;
  if (sqlite3_open(file.c_str(), &db) != SQLITE_OK || !outbox::migrate(db)) return 1;
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  if (!outbox::write(db, "urn:shop:orders:created", babelqueue::Value::object({{"order_id", 1}}))) return 1;
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto store = outbox::SqliteStore::open(file);
  if (!store) return 1;
  babelqueue::memory::Transport broker;
  outbox::Relay relay(broker, **store);
  auto result = relay.drain();
  std::filesystem::remove(file);
  if (!result || result->published != 1) return 1;
  std::cout << "outbox: ok\n";
  return 0;
}
