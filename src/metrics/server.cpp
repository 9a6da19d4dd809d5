// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/metrics/server.hpp>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <exception>

namespace babelqueue::metrics {

MetricsServer::MetricsServer(const std::string& address, std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  if (!registry_) throw Error(Errc::invalid_argument, "MetricsServer needs a registry");
  try {
    // One thread: a scrape is small and rare.
    exposer_ = std::make_unique<prometheus::Exposer>(address, 1);
  } catch (const std::exception& e) {
    throw Error(Errc::io, "cannot serve metrics on " + address + ": " + e.what());
  }
  exposer_->RegisterCollectable(registry_);
}

MetricsServer::~MetricsServer() = default;

int MetricsServer::port() const {
  const auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace babelqueue::metrics
