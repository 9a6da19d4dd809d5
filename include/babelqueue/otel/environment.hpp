// SPDX-License-Identifier: Apache-2.0
// Tracing configured by the standard OpenTelemetry environment variables,
// as every OpenTelemetry SDK reads them:
//
//   OTEL_SDK_DISABLED=true                      nothing is traced
//   OTEL_TRACES_EXPORTER=otlp|none              none: nothing is traced
//   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=URL      the traces URL, as is
//   OTEL_EXPORTER_OTLP_ENDPOINT=URL             the base URL: + "/v1/traces"
//   OTEL_EXPORTER_OTLP_[TRACES_]HEADERS=k=v,... request headers (values URL-encoded)
//   OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT=MS      one request's limit (10000)
//   OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE=PEM the CA bundle of an https endpoint
//   OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL        http/protobuf only (others: warned, not used)
//   OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES the resource
//   OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG the sampler (parentbased_always_on)
//   OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE
//
// Tracing is on when an endpoint variable is set or OTEL_TRACES_EXPORTER is
// otlp, unless disabled. A value that does not parse is reported through
// the log and its default is used, as the OpenTelemetry specification asks.
#pragma once

#include <babelqueue/log_sink.hpp>
#include <babelqueue/otel/otlp_exporter.hpp>
#include <babelqueue/otel/tracer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace babelqueue::otel {

/// Reads one environment variable; empty when it is not set.
using EnvironmentReader = std::function<std::optional<std::string>(const char* name)>;
/// The process environment.
EnvironmentReader process_environment();

/// What the OTEL_* variables ask for, before anything is built.
struct EnvironmentOptions {
  bool enabled = false;          ///< tracing is on (the rule in the file comment)
  TracerOptions tracer;          ///< its sink is left empty
  OtlpExporterOptions exporter;  ///< its resource is the tracer's; its log is left as it was
};

/// Reads the OTEL_* variables through read. A value that does not parse, or
/// a setting this SDK does not support, is reported to log as a warning and
/// its default is kept (an OTEL_TRACES_EXPORTER other than otlp or none turns
/// tracing off); a batch size larger than the queue is lowered to it.
EnvironmentOptions options_from_environment(const LogSink& log = stderr_log_sink(),
                                            const EnvironmentReader& read = process_environment());

/// A tracer whose sink is an OTLP exporter, both configured from the
/// environment; shut the exporter down (or destroy it) before exiting, so
/// the last spans are sent.
struct EnvironmentTracing {
  std::shared_ptr<Tracer> tracer;          ///< for the tracing Middleware; its sink is exporter
  std::shared_ptr<OtlpExporter> exporter;  ///< for shutdown() and stats()
};

/// The tracer and exporter options_from_environment() describes, the
/// exporter reporting to log. Empty when tracing is off.
std::optional<EnvironmentTracing> tracing_from_environment(const LogSink& log = stderr_log_sink(),
                                                           const EnvironmentReader& read = process_environment());

}  // namespace babelqueue::otel
