// SPDX-License-Identifier: Apache-2.0
// OtlpExporter: a SpanSink that sends spans to an OpenTelemetry collector
// over OTLP/HTTP, protobuf-encoded (docs/adr/0026), with libcurl.
//
// It batches like OpenTelemetry's BatchSpanProcessor, and never holds a
// handler up: on_end() puts the span in a bounded queue and returns; one
// background thread sends batches of up to max_export_batch_size spans,
// when a batch is full or schedule_delay has passed. When the queue is full
// (a slow, stalled or stopped collector) a span is dropped and counted; a
// batch the collector refuses or that does not arrive within timeout is
// counted as failed. Memory is bounded by max_queue_size spans plus the
// batch being sent.
//
// Thread-safety: on_end() and stats() from any thread; force_flush() and
// shutdown() from any thread too, each call waiting for its own work.
#pragma once

#include <babelqueue/log_sink.hpp>
#include <babelqueue/otel/span_sink.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue::otel {

/// Where an OtlpExporter sends spans and how it batches them;
/// options_from_environment() fills it from the OTEL_* variables.
struct OtlpExporterOptions {
  /// The traces URL, path included (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
  /// OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces").
  std::string endpoint = "http://localhost:4318/v1/traces";
  /// Extra request headers (OTEL_EXPORTER_OTLP_HEADERS): an API key.
  std::vector<std::pair<std::string, std::string>> headers;
  /// A CA bundle (PEM) for an https endpoint (OTEL_EXPORTER_OTLP_CERTIFICATE);
  /// empty = the system's.
  std::string ca_file;
  /// One request's limit (OTEL_EXPORTER_OTLP_TIMEOUT).
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  /// Spans waiting to be sent, at most (OTEL_BSP_MAX_QUEUE_SIZE); a span
  /// that finds the queue full is dropped and counted. At least 1.
  std::size_t max_queue_size = 2048;
  /// Spans in one request, at most (OTEL_BSP_MAX_EXPORT_BATCH_SIZE); a full
  /// batch is sent at once. At least 1, and no more than max_queue_size.
  std::size_t max_export_batch_size = 512;
  /// A batch that is not full is sent once this has passed since the
  /// previous export (OTEL_BSP_SCHEDULE_DELAY).
  std::chrono::milliseconds schedule_delay{std::chrono::seconds(5)};
  /// The service.name of the resource every exported span belongs to
  /// (OTEL_SERVICE_NAME).
  std::string service_name = "unknown_service";
  /// The resource's further attributes (OTEL_RESOURCE_ATTRIBUTES); a
  /// service.name among them is left out, service_name wins. The exporter
  /// adds telemetry.sdk.name, telemetry.sdk.language and telemetry.sdk.version.
  std::vector<Attribute> resource;
  /// Where a collector that stops (or starts again) accepting spans is
  /// reported: once per change, not once per batch.
  LogSink log = stderr_log_sink();
};

/// What the exporter did so far.
struct OtlpExporterStats {
  std::uint64_t exported = 0;  ///< spans the collector accepted
  std::uint64_t dropped = 0;   ///< spans not queued: the queue was full, or after shutdown
  std::uint64_t failed = 0;    ///< spans of batches the collector refused or that timed out
  std::uint64_t requests = 0;  ///< export requests sent
  std::size_t queued = 0;      ///< spans waiting now
};

/// A SpanSink that batches spans and sends them to an OTLP/HTTP collector
/// from a thread of its own (the file comment has the details). Safe to use
/// from every thread.
class OtlpExporter final : public SpanSink {
 public:
  /// Starts the background thread. Errc::invalid_argument Error for an empty
  /// endpoint, a zero queue or batch size, or a batch larger than the queue.
  explicit OtlpExporter(OtlpExporterOptions options);
  /// shutdown(timeout).
  ~OtlpExporter() override;
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  /// Queues span for a batch and returns at once, never waiting for the
  /// collector; when the queue is full, or after shutdown(), the span is
  /// dropped and counted (OtlpExporterStats::dropped).
  void on_end(SpanData&& span) noexcept override;

  /// Sends every span queued before the call; true when all of them were
  /// exported (or failed) within deadline.
  bool force_flush(std::chrono::milliseconds deadline);
  /// Sends what is queued (up to deadline, a request in progress is then
  /// aborted) and stops the thread; later spans are dropped. Idempotent.
  void shutdown(std::chrono::milliseconds deadline);

  /// The counts so far, and the spans queued now: one consistent snapshot.
  OtlpExporterStats stats() const;
  /// The options it was made with.
  const OtlpExporterOptions& options() const noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace babelqueue::otel
