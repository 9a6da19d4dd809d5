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

class MetricsServer {
 public:
  /// Listens on address ("127.0.0.1:9464"; port 0 takes a free one). An
  /// address that cannot be bound is an Errc::io Error naming it.
  MetricsServer(const std::string& address, std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// The port it listens on.
  int port() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace babelqueue::metrics
