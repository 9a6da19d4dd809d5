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

struct TracerOptions {
  /// The resource's service.name (OTEL_SERVICE_NAME).
  std::string service_name = "unknown_service";
  /// Further resource attributes (OTEL_RESOURCE_ATTRIBUTES).
  std::vector<Attribute> resource;
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

class Span {
 public:
  /// A span that records nothing and has no valid context.
  Span() = default;
  Span(Span&& other) noexcept;
  Span& operator=(Span&& other) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  /// Ends the span if end() was not called.
  ~Span();

  const SpanContext& context() const noexcept { return context_; }
  /// Sampled: what is set on it is exported. The setters below do nothing
  /// on a span that is not recording, so callers skip building attributes
  /// by testing this first.
  bool recording() const noexcept { return data_ != nullptr; }

  void set_name(std::string name);
  void set_attribute(std::string key, AttributeValue value);
  /// Status error with message, and the "exception" event
  /// (exception.message, exception.type when given) OpenTelemetry records.
  void set_error(std::string_view message, std::string_view exception_type = {});
  /// Records the end time (now, or the given Unix nanoseconds) and hands the
  /// span to the sink. Once; later calls do nothing.
  void end() noexcept;
  void end(std::uint64_t end_unix_nano) noexcept;

 private:
  friend class Tracer;
  SpanContext context_;
  std::unique_ptr<SpanData> data_;  ///< only while recording
  std::shared_ptr<SpanSink> sink_;
};

class Tracer {
 public:
  explicit Tracer(TracerOptions options = {});

  /// A new span of kind: a child of start.parent (same trace, its tracestate
  /// passed on) or a root. Recording when the sampler says so and there is a
  /// sink.
  Span start_span(SpanKind kind, const SpanStart& start = {}) const;
  Span start_span(std::string name, SpanKind kind, const SpanStart& start = {}) const;

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
  explicit ContextScope(const SpanContext& context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  SpanContext context_;
  const SpanContext* previous_;
};

}  // namespace babelqueue::otel
