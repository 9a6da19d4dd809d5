// SPDX-License-Identifier: Apache-2.0
#include "otlp_protobuf.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace babelqueue::otel::detail {

namespace {

// Field numbers of opentelemetry-proto's trace and common messages.
namespace field {
constexpr int request_resource_spans = 1;
constexpr int resource_spans_resource = 1, resource_spans_scope_spans = 2;
constexpr int resource_attributes = 1;
constexpr int scope_spans_scope = 1, scope_spans_spans = 2;
constexpr int scope_name = 1, scope_version = 2;
constexpr int span_trace_id = 1, span_span_id = 2, span_trace_state = 3, span_parent_span_id = 4, span_name = 5,
              span_kind = 6, span_start = 7, span_end = 8, span_attributes = 9, span_events = 11, span_status = 15,
              span_flags = 16;
constexpr int event_time = 1, event_name = 2, event_attributes = 3;
constexpr int status_message = 2, status_code = 3;
constexpr int key_value_key = 1, key_value_value = 2;
constexpr int any_string = 1, any_bool = 2, any_int = 3, any_double = 4;
}  // namespace field

enum class Wire : std::uint8_t { varint = 0, fixed64 = 1, length = 2, fixed32 = 5 };

// SpanFlags: the low byte is the W3C trace flags; bit 8 says bit 9 is known,
// bit 9 says the parent is remote.
constexpr std::uint32_t kContextHasIsRemote = 0x100;
constexpr std::uint32_t kContextIsRemote = 0x200;

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_tag(std::string& out, int number, Wire wire) {
  put_varint(out, (static_cast<std::uint64_t>(number) << 3) | static_cast<std::uint8_t>(wire));
}

template <class T>
void put_little_endian(std::string& out, T value) {
  static_assert(std::is_unsigned_v<T>);
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_bytes(std::string& out, int number, std::string_view bytes) {
  put_tag(out, number, Wire::length);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// Proto3 leaves fields at their default out.
void put_string(std::string& out, int number, std::string_view text) {
  if (!text.empty()) put_bytes(out, number, text);
}

void put_fixed64(std::string& out, int number, std::uint64_t value) {
  put_tag(out, number, Wire::fixed64);
  put_little_endian(out, value);
}

void put_fixed32(std::string& out, int number, std::uint32_t value) {
  put_tag(out, number, Wire::fixed32);
  put_little_endian(out, value);
}

void put_uint(std::string& out, int number, std::uint64_t value) {
  put_tag(out, number, Wire::varint);
  put_varint(out, value);
}

template <std::size_t N>
std::string_view raw(const std::array<std::uint8_t, N>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), N};  // NOLINT: the id's bytes, as protobuf bytes
}

// A nested message: written into scratch, then appended with its length.
template <class Write>
void put_message(std::string& out, int number, Write&& write) {
  std::string scratch;
  write(scratch);
  put_bytes(out, number, scratch);
}

void put_any_value(std::string& out, const AttributeValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          put_bytes(out, field::any_string, v);  // an empty string is still a string value
        } else if constexpr (std::is_same_v<T, bool>) {
          put_uint(out, field::any_bool, v ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          put_uint(out, field::any_int, static_cast<std::uint64_t>(v));  // two's complement, as int64
        } else {
          std::uint64_t bits = 0;
          std::memcpy(&bits, &v, sizeof bits);
          put_fixed64(out, field::any_double, bits);
        }
      },
      value);
}

void put_attribute(std::string& out, int number, const Attribute& attribute) {
  put_message(out, number, [&](std::string& kv) {
    put_string(kv, field::key_value_key, attribute.key);
    put_message(kv, field::key_value_value, [&](std::string& any) { put_any_value(any, attribute.value); });
  });
}

void put_span(std::string& out, const SpanData& span) {
  put_bytes(out, field::span_trace_id, raw(span.context.trace_id.bytes));
  put_bytes(out, field::span_span_id, raw(span.context.span_id.bytes));
  put_string(out, field::span_trace_state, span.context.trace_state);
  if (span.parent_span_id.valid()) put_bytes(out, field::span_parent_span_id, raw(span.parent_span_id.bytes));
  put_string(out, field::span_name, span.name);
  put_uint(out, field::span_kind, static_cast<std::uint64_t>(span.kind));
  put_fixed64(out, field::span_start, span.start_unix_nano);
  put_fixed64(out, field::span_end, span.end_unix_nano);
  for (const Attribute& a : span.attributes) put_attribute(out, field::span_attributes, a);
  for (const SpanEvent& event : span.events) {
    put_message(out, field::span_events, [&](std::string& e) {
      put_fixed64(e, field::event_time, event.time_unix_nano);
      put_string(e, field::event_name, event.name);
      for (const Attribute& a : event.attributes) put_attribute(e, field::event_attributes, a);
    });
  }
  if (span.status != StatusCode::unset) {
    put_message(out, field::span_status, [&](std::string& s) {
      put_string(s, field::status_message, span.status_message);
      put_uint(s, field::status_code, static_cast<std::uint64_t>(span.status));
    });
  }
  std::uint32_t flags = span.context.sampled ? 0x01 : 0x00;
  if (span.parent_span_id.valid()) flags |= kContextHasIsRemote | (span.parent_remote ? kContextIsRemote : 0);
  put_fixed32(out, field::span_flags, flags);
}

}  // namespace

void encode_export_request(std::string& out, const OtlpResource& resource, std::span<const SpanData> spans) {
  put_message(out, field::request_resource_spans, [&](std::string& rs) {
    put_message(rs, field::resource_spans_resource, [&](std::string& r) {
      for (const Attribute& a : resource.attributes) put_attribute(r, field::resource_attributes, a);
    });
    put_message(rs, field::resource_spans_scope_spans, [&](std::string& ss) {
      put_message(ss, field::scope_spans_scope, [&](std::string& scope) {
        put_string(scope, field::scope_name, resource.scope_name);
        put_string(scope, field::scope_version, resource.scope_version);
      });
      for (const SpanData& span : spans) {
        put_message(ss, field::scope_spans_spans, [&](std::string& s) { put_span(s, span); });
      }
    });
  });
}

}  // namespace babelqueue::otel::detail
