// SPDX-License-Identifier: Apache-2.0
// open_transport(url): opens any transport built into the program by URL, so
// tools, tests and services choose a broker by configuration.
//
// Each transport library registers its schemes with register_transport(); a
// program calls the library's registration function once (for example
// babelqueue::sqlite::register_transport()) — no static initialisers, so
// nothing depends on link order. memory:// is always registered.
//
// Thread-safety: registering and opening may happen from any thread.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/url.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue {

/// Opens a transport from its URL.
using TransportFactory = std::function<Result<std::unique_ptr<Transport>>(const Url& url)>;

/// Makes scheme (e.g. "redis", "rediss") open with factory. Registering a
/// scheme again replaces its factory. Schemes are case-insensitive. Throws
/// Error (Errc::invalid_argument) for an empty scheme or an empty factory.
/// The factory runs outside the registry's lock, on the thread that calls
/// open_transport().
void register_transport(std::string scheme, TransportFactory factory);

/// The factory of a transport class T that has the usual pair
/// `static Result<Options> options_from_url(const Url&)` and
/// `static Result<std::unique_ptr<T>> open(Options)`: what each transport
/// library registers for its schemes.
template <class T>
TransportFactory url_factory() {
  return [](const Url& url) -> Result<std::unique_ptr<Transport>> {
    auto options = T::options_from_url(url);
    if (!options) return unexpected(options.error());
    auto transport = T::open(std::move(*options));
    if (!transport) return unexpected(transport.error());
    return std::unique_ptr<Transport>(std::move(*transport));
  };
}

/// The schemes that can be opened, sorted.
std::vector<std::string> registered_schemes();

/// Opens a transport. Errc::invalid_argument for a malformed URL,
/// Errc::unsupported for a scheme this program does not contain (the message
/// lists the schemes it does), else whatever the transport reports.
Result<std::unique_ptr<Transport>> open_transport(std::string_view url);

}  // namespace babelqueue
