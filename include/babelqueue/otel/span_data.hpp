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

/// The values are OTLP's.
enum class SpanKind : std::uint8_t { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 };
enum class StatusCode : std::uint8_t { unset = 0, ok = 1, error = 2 };

using AttributeValue = std::variant<std::string, std::int64_t, double, bool>;

struct Attribute {
  std::string key;
  AttributeValue value;
};

struct SpanEvent {
  std::string name;
  std::uint64_t time_unix_nano = 0;
  std::vector<Attribute> attributes;
};

struct SpanData {
  SpanContext context;    ///< its own trace id, span id, flags and tracestate
  SpanId parent_span_id;  ///< all zero for a root span
  bool parent_remote = false;
  std::string name;
  SpanKind kind = SpanKind::internal;
  std::uint64_t start_unix_nano = 0;
  std::uint64_t end_unix_nano = 0;
  std::vector<Attribute> attributes;
  std::vector<SpanEvent> events;  // the "exception" event of a failure
  StatusCode status = StatusCode::unset;
  std::string status_message;
};

}  // namespace babelqueue::otel
