// SPDX-License-Identifier: Apache-2.0
// The CLI's tracing (babelqueue::otel): on when the OTEL_* variables ask for
// it (docs/observability.md). publish, work and redrive then export their
// spans to the OTLP endpoint, and report what the exporter could not send.
#pragma once

#include <babelqueue/middleware.hpp>
#include <babelqueue/otel/environment.hpp>
#include <babelqueue/otel/middleware.hpp>

#include <memory>
#include <optional>
#include <string>

namespace babelqueue::cli {

class Tracing {
 public:
  // Reads the environment; problems with it are printed as warnings.
  Tracing();
  // finish().
  ~Tracing();
  Tracing(const Tracing&) = delete;
  Tracing& operator=(const Tracing&) = delete;

  bool enabled() const noexcept { return setup_.has_value(); }
  // The tracing middleware, to add first; null when tracing is off.
  std::shared_ptr<Middleware> middleware() const { return middleware_; }
  // The tracer; null when tracing is off.
  std::shared_ptr<const otel::Tracer> tracer() const;

  // Sends the spans still queued (at most 5 s) and prints one line with
  // what was exported, dropped and failed. Once; later calls do nothing.
  void finish();

 private:
  std::optional<otel::EnvironmentTracing> setup_;
  std::shared_ptr<Middleware> middleware_;
  bool finished_ = false;
};

}  // namespace babelqueue::cli
