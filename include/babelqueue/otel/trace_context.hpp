// SPDX-License-Identifier: Apache-2.0
// Trace context (library babelqueue::otel): the ids of a span and the
// family's rules that tie them to an envelope (SPEC ADR-0025 and ADR-0028).
//
// - A trace_id that is a UUID (dashes stripped: 32 hex digits, either case,
//   not all zero) is the OpenTelemetry trace id, byte for byte; any other
//   trace_id maps to the first 16 bytes of its SHA-256. uuid_of() is the
//   inverse for the UUID case, so every SDK of the family reading the same
//   trace_id lands in the same trace without any header.
// - A consumer without a traceparent header takes as its remote parent the
//   span id made of the first 8 bytes of SHA-256("babelqueue-span:" +
//   trace_id), sampled.
// - A traceparent header (W3C Trace Context, version 00 or a later version's
//   first four fields) that parses is the consumer's parent instead; one that
//   does not is ignored.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace babelqueue::otel {

/// The W3C Trace Context headers, carried out of band beside the envelope.
///@{
inline constexpr std::string_view kTraceparentHeader = "traceparent";
inline constexpr std::string_view kTracestateHeader = "tracestate";
///@}

/// An OpenTelemetry trace id: 16 bytes, all zero for none (invalid).
struct TraceId {
  std::array<std::uint8_t, 16> bytes{};  ///< in the order hex() writes them
  /// Not all zero.
  bool valid() const noexcept;
  /// 32 lowercase hex digits.
  std::string hex() const;
  /// Byte for byte.
  friend bool operator==(const TraceId&, const TraceId&) = default;
};

/// An OpenTelemetry span id: 8 bytes, all zero for none (invalid).
struct SpanId {
  std::array<std::uint8_t, 8> bytes{};  ///< in the order hex() writes them
  bool valid() const noexcept;          ///< not all zero
  std::string hex() const;              ///< 16 lowercase hex digits
  /// Byte for byte.
  friend bool operator==(const SpanId&, const SpanId&) = default;
};

/// What a span passes on to its children, in this process or through a
/// traceparent header: its ids, its sampled flag and the tracestate. The
/// default one is invalid: no parent.
struct SpanContext {
  TraceId trace_id;      ///< the trace it belongs to
  SpanId span_id;        ///< the span itself
  bool sampled = false;  ///< the sampler chose to record it: traceparent flags 01, else 00
  /// Made in another process (read from a header, or the synthetic parent).
  bool remote = false;
  /// The W3C tracestate, passed on unchanged.
  std::string trace_state;
  /// Both ids valid. An invalid context is no parent: Tracer::start_span
  /// starts a root span instead.
  bool valid() const noexcept { return trace_id.valid() && span_id.valid(); }
};

/// The family's trace_id -> trace id mapping.
TraceId trace_id_of(std::string_view trace_id);
/// The trace id as a lowercase UUID (8-4-4-4-12).
std::string uuid_of(const TraceId& trace_id);
/// The synthetic parent span id of a trace_id.
SpanId synthetic_span_id_of(std::string_view trace_id);
/// The remote, sampled parent a consumer uses when no traceparent came.
SpanContext synthetic_parent(std::string_view trace_id);

/// A traceparent header (and its tracestate) as a remote span context; empty
/// when it is malformed, names version ff, or an all-zero trace or span id.
/// A tracestate longer than 512 bytes or with characters outside printable
/// ASCII is left out; the traceparent still counts.
std::optional<SpanContext> parse_traceparent(std::string_view traceparent, std::string_view tracestate = {});
/// "00-<trace id>-<span id>-<01 when sampled, else 00>".
std::string format_traceparent(const SpanContext& context);

}  // namespace babelqueue::otel
