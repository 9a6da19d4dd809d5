// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/idempotency/memory_store.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <map>
#include <mutex>

namespace babelqueue::idempotency {

namespace {

Result<std::unique_ptr<Store>> open_memory_store(const Url& url) {
  if (!url.host.empty() || !url.path.empty()) {
    return unexpected(Errc::invalid_argument,
                      "memory:// takes no host or path (a store of its own): " + url.redacted());
  }
  MemoryStore::Options options;
  UrlOptionReader read(url);
  read.duration("ttl", options.ttl, {});
  if (auto done = read.finish(); !done) return unexpected(done.error());
  return std::unique_ptr<Store>(std::make_unique<MemoryStore>(options));
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, StoreFactory, std::less<>> factories{{"memory", &open_memory_store}};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_store_scheme(std::string scheme, StoreFactory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[std::move(scheme)] = std::move(factory);
}

std::vector<std::string> store_schemes() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& entry : r.factories) out.push_back(entry.first);
  return out;
}

Result<std::unique_ptr<Store>> open_store(std::string_view text) {
  auto url = Url::parse(text);
  if (!url) return unexpected(url.error());
  StoreFactory factory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(url->scheme);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& scheme : store_schemes()) known += (known.empty() ? "" : ", ") + scheme + "://";
    return unexpected(Errc::invalid_argument,
                      "no idempotency store for " + url->scheme + ":// in this program (it has " + known + ")");
  }
  auto store = factory(*url);
  // No credential of the URL in what a store's factory says.
  if (!store) return unexpected(store.error().code(), redact_secrets(store.error().message(), text));
  return store;
}

}  // namespace babelqueue::idempotency
