// SPDX-License-Identifier: Apache-2.0
// MetricsServer: serves a prometheus::Registry on http://ADDRESS/metrics in
// the Prometheus text format (prometheus-cpp's exposer, in threads of its
// own). For `babelqueue work --metrics ADDRESS`, and for an application
// that has no exposer of its own.
#pragma once

#include <memory>
#include <string>

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace babelqueue::metrics {

/// Serves one registry on /metrics from the moment it is made until it is
/// destroyed. It shares ownership of the registry, which lives at least as
/// long; whatever is registered there later is served too.
class MetricsServer {
 public:
  /// Listens on address ("127.0.0.1:9464"; port 0 takes a free one). An
  /// address that cannot be bound is an Errc::io Error naming it; a null
  /// registry is an Errc::invalid_argument Error.
  MetricsServer(const std::string& address, std::shared_ptr<prometheus::Registry> registry);
  /// Stops listening and ends its threads.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The port it listens on: the one the system chose for port 0.
  int port() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace babelqueue::metrics
