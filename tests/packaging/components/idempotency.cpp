// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed babelqueue::idempotency alone: a memory store
// remembers an id, and says so.
#include <babelqueue/idempotency/memory_store.hpp>

#include <iostream>

int main() {
  babelqueue::idempotency::MemoryStore store;
  if (!store.remember("0190b7c5-1c2d-7e5f-8a9b-0c1d2e3f4a5b")) return 1;
  auto seen = store.seen("0190b7c5-1c2d-7e5f-8a9b-0c1d2e3f4a5b");
  if (!seen || !*seen) return 1;
  std::cout << "idempotency: ok\n";
  return 0;
}
