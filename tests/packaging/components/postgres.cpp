// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed babelqueue::postgres alone: a store URL is read
// and a server that is not there is a connection error, never a crash.
#include <babelqueue/postgres/idempotency_store.hpp>

#include <iostream>

int main() {
  namespace pg = babelqueue::postgres;
  auto url = babelqueue::Url::parse("postgresql://u:p@127.0.0.1:1/db?table=seen&ttl=1h&connect_timeout=2");
  if (!url) return 1;
  auto options = pg::IdempotencyStore::options_from_url(*url);
  if (!options || options->table != "seen" || options->ttl != std::chrono::hours(1)) return 1;
  auto store = pg::IdempotencyStore::open(*options);
  if (store || store.error().code() != babelqueue::Errc::connection) return 1;
  std::cout << "postgres: ok\n";
  return 0;
}
