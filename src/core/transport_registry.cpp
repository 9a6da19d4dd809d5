// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace babelqueue {
namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; });
  return text;
}

Result<std::unique_ptr<Transport>> open_memory_transport(const Url& url) {
  if (!url.path.empty() || url.port || !url.user.empty()) {
    return unexpected(Errc::invalid_argument,
                      "memory:// takes only a broker name: memory://NAME, not " + url.redacted());
  }
  memory::Transport::Options options;
  UrlOptionReader read(url);
  read.duration("visibility_timeout", options.visibility_timeout, {});
  if (auto done = read.finish(); !done) return unexpected(done.error());
  return std::unique_ptr<Transport>(
      std::make_unique<memory::Transport>(memory::Transport::shared_broker(url.host), options));
}

// The scheme table. A function-local static, so it exists before the first
// registration whatever the order of static initialisation, and the library
// itself runs no code at load time.
class Registry {
 public:
  Registry() { factories_.emplace("memory", open_memory_transport); }

  void add(std::string scheme, TransportFactory factory) {
    const std::lock_guard lock(mutex_);
    factories_.insert_or_assign(lowercase(std::move(scheme)), std::move(factory));
  }

  std::vector<std::string> schemes() const {
    const std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    names.reserve(factories_.size());
    for (const auto& entry : factories_) names.push_back(entry.first);
    return names;  // std::map keeps them sorted
  }

  // A copy, so the factory runs without the lock: opening may take seconds
  // (a connection) and may itself register schemes.
  std::optional<TransportFactory> find(std::string_view scheme) const {
    const std::lock_guard lock(mutex_);
    const auto it = factories_.find(scheme);
    if (it == factories_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, TransportFactory, std::less<>> factories_;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void register_transport(std::string scheme, TransportFactory factory) {
  if (scheme.empty() || !factory)
    throw Error(Errc::invalid_argument, "register_transport needs a scheme and a factory");
  registry().add(std::move(scheme), std::move(factory));
}

std::vector<std::string> registered_schemes() { return registry().schemes(); }

Result<std::unique_ptr<Transport>> open_transport(std::string_view url_text) {
  auto url = Url::parse(url_text);
  if (!url) return unexpected(url.error());
  auto factory = registry().find(url->scheme);
  if (!factory) {
    std::string known;
    for (const std::string& scheme : registered_schemes()) known += (known.empty() ? "" : ", ") + scheme;
    return unexpected(Errc::unsupported, "no transport for " + url->scheme + ":// in this program (it has: " + known +
                                             "); link the transport's library and call its register_transport()");
  }
  auto transport = (*factory)(*url);
  // Whatever a factory (or the library under it) says, no credential of the
  // URL is shown.
  if (!transport) return unexpected(transport.error().code(), redact_secrets(transport.error().message(), url_text));
  if (!*transport) return unexpected(Errc::internal, "the " + url->scheme + ":// factory returned nothing");
  return transport;
}

}  // namespace babelqueue
