// SPDX-License-Identifier: Apache-2.0
// SpanData: a finished span as the SDK records it, in OpenTelemetry's model
// (the fields an OTLP export carries), so a sink can export it as is or hand
// it to another tracing library (docs/observability.md shows
// opentelemetry-cpp).
#pragma once

#include <babelqueue/otel/trace_context.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace babelqueue::otel {

/// A span's role, OpenTelemetry's span kinds. The values are OTLP's.
enum class SpanKind : std::uint8_t { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 };
/// A span's status, with OTLP's values: unset unless something failed (the
/// SDK never sets ok), error with a message when it did.
enum class StatusCode : std::uint8_t { unset = 0, ok = 1, error = 2 };

/// An attribute's value: OTLP's string, 64-bit integer, double and bool.
using AttributeValue = std::variant<std::string, std::int64_t, double, bool>;

/// One key-value attribute of a span, a span event or a resource.
struct Attribute {
  std::string key;       ///< its name ("messaging.system")
  AttributeValue value;  ///< its typed value
};

/// A point in a span's life with attributes of its own; the SDK records the
/// "exception" event of a failure (Span::set_error).
struct SpanEvent {
  std::string name;                   ///< "exception" for a failure
  std::uint64_t time_unix_nano = 0;   ///< when it happened, in nanoseconds since the Unix epoch
  std::vector<Attribute> attributes;  ///< exception.type and exception.message for a failure
};

/// A recorded span once it has ended, as a SpanSink receives it. Times are
/// in nanoseconds since the Unix epoch (system clock).
struct SpanData {
  SpanContext context;                    ///< its own trace id, span id, flags and tracestate
  SpanId parent_span_id;                  ///< all zero for a root span
  bool parent_remote = false;             ///< the parent was made in another process (SpanContext::remote)
  std::string name;                       ///< "process <urn>", "publish <urn>"; empty when never named
  SpanKind kind = SpanKind::internal;     ///< consumer, producer, ...
  std::uint64_t start_unix_nano = 0;      ///< when it started
  std::uint64_t end_unix_nano = 0;        ///< when it ended
  std::vector<Attribute> attributes;      ///< in the order first set, each key once
  std::vector<SpanEvent> events;          ///< the "exception" event of a failure
  StatusCode status = StatusCode::unset;  ///< error after Span::set_error, else unset
  std::string status_message;             ///< why it failed; empty unless status is error
};

}  // namespace babelqueue::otel
