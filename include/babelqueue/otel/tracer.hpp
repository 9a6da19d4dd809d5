// SPDX-License-Identifier: Apache-2.0
// Tracer and Span: the small span model of babelqueue::otel. A Tracer starts
// spans (random ids, its sampler's decision) and hands each recorded one to
// its SpanSink when it ends; the SDK's middleware uses it, and so may an
// application for spans of its own.
//
// The current span context of a thread (ContextScope) is how a span becomes
// the parent of the next: the tracing middleware makes the consumer span
// current while the handler runs, so a publish from inside the handler is
// its child, in the same trace.
//
// Thread-safety: a Tracer is shared by every thread. A Span belongs to the
// thread that uses it.
#pragma once

#include <babelqueue/otel/sampler.hpp>
#include <babelqueue/otel/span_data.hpp>
#include <babelqueue/otel/span_sink.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::otel {

/// What a Tracer is made with. The Tracer itself only keeps service_name
/// and resource (Tracer::options(), for a sink of your own); an OtlpExporter
/// exports the ones in its own OtlpExporterOptions.
struct TracerOptions {
  /// The resource's service.name (OTEL_SERVICE_NAME).
  std::string service_name = "unknown_service";
  /// Further resource attributes (OTEL_RESOURCE_ATTRIBUTES).
  std::vector<Attribute> resource;
  /// Which new spans are recorded; parentbased_always_on by default.
  Sampler sampler;
  /// Where ended, recorded spans go; null records nothing (every span is
  /// then a non-recording one whose context still propagates).
  std::shared_ptr<SpanSink> sink;
};

/// How a span starts.
struct SpanStart {
  /// Its parent; empty for a root span.
  std::optional<SpanContext> parent;
  /// A root span's trace id; empty for a random one. Ignored with a parent.
  std::optional<TraceId> trace_id;
  /// When it started (Unix nanoseconds), for a span recorded after the fact;
  /// 0 = now.
  std::uint64_t start_unix_nano = 0;
};

/// A started span: a recording one (sampled, with a sink) collects what is
/// set on it and goes to the sink when it ends; a non-recording one only
/// carries its context. Move-only, for one thread at a time.
class Span {
 public:
  /// A span that records nothing and has no valid context.
  Span() = default;
  /// Takes other's span over; other then records nothing. Assigning first
  /// ends the span assigned to.
  ///@{
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  ///@}
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  /// Ends the span if end() was not called.
  ~Span();

  /// Its ids, sampled flag and tracestate: what its children and a
  /// traceparent take. Valid for every span a Tracer started, recording or not.
  const SpanContext& context() const noexcept { return context_; }
  /// Sampled: what is set on it is exported. The setters below do nothing
  /// on a span that is not recording, so callers skip building attributes
  /// by testing this first.
  bool recording() const noexcept { return data_ != nullptr; }

  /// Names it ("process <urn>").
  void set_name(std::string name);
  /// Sets attribute key; a key set before keeps its place with the new value.
  void set_attribute(std::string key, AttributeValue value);
  /// Status error with message, and the "exception" event
  /// (exception.message, exception.type when given) OpenTelemetry records.
  void set_error(std::string_view message, std::string_view exception_type = {});
  /// Records the end time (now, or the given Unix nanoseconds) and hands the
  /// span to the sink, on this thread. Once; later calls do nothing.
  ///@{
  void end() noexcept;
  void end(std::uint64_t end_unix_nano) noexcept;
  ///@}

 private:
  friend class Tracer;
  SpanContext context_;
  std::unique_ptr<SpanData> data_;  ///< only while recording
  std::shared_ptr<SpanSink> sink_;
};

/// Starts spans: random ids (unique, never all zero; not secret), the
/// sampler's decision, and each recorded span handed to the sink when it
/// ends. Its options are fixed once made, so one is shared by every thread.
class Tracer {
 public:
  /// A tracer with these options; the default one has no sink, so it
  /// records nothing but still makes contexts that propagate.
  explicit Tracer(TracerOptions options = {});

  /// A new span of kind, unnamed or named name: a child of start.parent
  /// (same trace, its tracestate passed on) when that is valid, else a
  /// root. Recording when the sampler says so and there is a sink.
  ///@{
  Span start_span(SpanKind kind, const SpanStart& start = {}) const;
  Span start_span(std::string name, SpanKind kind, const SpanStart& start = {}) const;
  ///@}

  /// Whether a span started with this parent (null or invalid: a root span
  /// in trace_id) would record: its sampler samples it and there is a sink.
  /// start_span decides the same way; a caller asks first to skip work only a
  /// recording span needs.
  bool records(const SpanContext* parent, const TraceId& trace_id) const noexcept;

  /// The options it was made with.
  const TracerOptions& options() const noexcept { return options_; }

 private:
  TracerOptions options_;
};

/// The span context current on this thread: the innermost live ContextScope's,
/// empty when there is none.
std::optional<SpanContext> current_span_context();

/// Makes a span context current on this thread until it is destroyed; scopes
/// nest. An application that runs its own tracing library (opentelemetry-cpp)
/// opens one with that library's active span context before it publishes, so
/// our producer span joins its trace.
class ContextScope {
 public:
  /// Makes a copy of context current on this thread. Destroy scopes on the
  /// thread that made them, the innermost first (as local variables are).
  explicit ContextScope(const SpanContext& context);
  /// Makes the context that was current before it current again.
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  SpanContext context_;
  const SpanContext* previous_;
};

}  // namespace babelqueue::otel
