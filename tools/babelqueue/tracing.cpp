// SPDX-License-Identifier: Apache-2.0
#include "tracing.hpp"

#include "support.hpp"

#include <chrono>

namespace babelqueue::cli {

namespace {

// How long the last spans may take to reach the collector when a command ends.
constexpr std::chrono::seconds kFinishDeadline{5};

}  // namespace

Tracing::Tracing() {
  setup_ = otel::tracing_from_environment([](LogLevel level, std::string_view message) {
    if (level < LogLevel::warning) return;
    Console::instance().line("babelqueue " + std::string(to_string(level)) + ": tracing: " + std::string(message));
  });
  if (setup_) middleware_ = std::make_shared<otel::Middleware>(setup_->tracer);
}

Tracing::~Tracing() { finish(); }

std::shared_ptr<const otel::Tracer> Tracing::tracer() const { return setup_ ? setup_->tracer : nullptr; }

void Tracing::finish() {
  if (!setup_ || finished_) return;
  finished_ = true;
  setup_->exporter->shutdown(kFinishDeadline);
  const otel::OtlpExporterStats stats = setup_->exporter->stats();
  Console::instance().line("babelqueue: tracing: " + std::to_string(stats.exported) + " spans exported to " +
                           setup_->exporter->options().endpoint + ", " + std::to_string(stats.dropped) + " dropped, " +
                           std::to_string(stats.failed) + " failed");
}

}  // namespace babelqueue::cli
