// SPDX-License-Identifier: Apache-2.0
// SpanSink: where a Tracer hands each recorded span when it ends. The OTLP
// exporter (otlp_exporter.hpp) is one; an application that already runs
// opentelemetry-cpp writes its own that feeds its span processor
// (docs/observability.md), and a test may keep the spans in memory.
//
// Thread-safety: on_end() is called from every thread that ends a span
// (handler threads, publishing threads) at once, and on the handler's path:
// it must be thread-safe and must not block (queue the span and return).
#pragma once

#include <babelqueue/otel/span_data.hpp>

namespace babelqueue::otel {

/// Where a Tracer hands each recorded span when it ends. The Tracer and every
/// recording Span share ownership of it, so it lives until the last of them.
class SpanSink {
 public:
  virtual ~SpanSink() = default;
  /// Takes a span that has just ended (only recorded ones: sampled, on a
  /// tracer with a sink); the sink may move from it. Called on the thread
  /// that ended the span, from many threads at once: it must be thread-safe,
  /// quick, and must not block.
  virtual void on_end(SpanData&& span) noexcept = 0;
};

}  // namespace babelqueue::otel
