// SPDX-License-Identifier: Apache-2.0
// open_store(url): an idempotency store by URL, for programs that take the
// store as configuration (the CLI's `work --idempotency URL`).
//
//   memory://                          a MemoryStore of its own (memory://?ttl=168h)
//   sqlite:///var/lib/app/seen.db      babelqueue::sqlite (register_idempotency_store())
//   redis://host:6379/0                babelqueue::redis (register_idempotency_store())
//
// memory:// is always there; a library registers its scheme when the
// program calls its register_idempotency_store().
#pragma once

#include <babelqueue/idempotency/store.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/url.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::idempotency {

/// Opens a store from its URL.
using StoreFactory = std::function<Result<std::unique_ptr<Store>>(const Url& url)>;

/// Registers factory for scheme; a later registration replaces it. Thread-safe.
void register_store_scheme(std::string scheme, StoreFactory factory);

/// Opens the store url names. Errc::invalid_argument for a URL that does not
/// parse or whose scheme no library registered (the message lists those
/// that are), or the factory's error.
Result<std::unique_ptr<Store>> open_store(std::string_view url);

/// The schemes registered, sorted.
std::vector<std::string> store_schemes();

}  // namespace babelqueue::idempotency
