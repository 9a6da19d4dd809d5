// SPDX-License-Identifier: Apache-2.0
#include "amqp_projection.hpp"

#include <babelqueue/binding.hpp>
#include <babelqueue/envelope.hpp>

#include <limits>

namespace babelqueue::rabbitmq::detail {
namespace {

constexpr std::size_t kMaxShortString = 255;

amqp_table_entry_t string_entry(std::string_view key, std::string_view value) {
  amqp_table_entry_t entry{};
  entry.key = bytes_of(key);
  entry.value.kind = AMQP_FIELD_KIND_UTF8;
  entry.value.value.bytes = bytes_of(value);
  return entry;
}

// Integers as the Go and Python SDKs write them: signed 32-bit when they fit.
amqp_table_entry_t integer_entry(std::string_view key, std::int64_t value) {
  amqp_table_entry_t entry{};
  entry.key = bytes_of(key);
  if (value >= std::numeric_limits<std::int32_t>::min() && value <= std::numeric_limits<std::int32_t>::max()) {
    entry.value.kind = AMQP_FIELD_KIND_I32;
    entry.value.value.i32 = static_cast<std::int32_t>(value);
  } else {
    entry.value.kind = AMQP_FIELD_KIND_I64;
    entry.value.value.i64 = value;
  }
  return entry;
}

}  // namespace

Result<Projection> project(std::string_view body, const Headers& headers, const binding::ContractFields* known) {
  Projection projection;
  std::optional<Envelope> decoded;
  std::optional<binding::ContractFields> read;
  if (known == nullptr) read = binding::read(body, decoded);
  if (const binding::ContractFields* fields = known != nullptr ? known : (read ? &*read : nullptr)) {
    projection.envelope = true;
    projection.type = std::string(fields->job);
    projection.correlation_id = std::string(fields->trace_id);
    projection.message_id = std::string(fields->id);
    projection.source_lang = std::string(fields->lang);
    projection.schema_version = fields->schema_version;
    projection.attempts = fields->attempts;
  }
  for (const auto& [name, value] : headers) {
    if (name.empty() || value.empty()) continue;  // SPEC §8: dropped
    if (name.size() > kMaxShortString) {
      return unexpected(Errc::invalid_argument,
                        "header name longer than 255 bytes cannot be carried by AMQP: " + name.substr(0, 40) + "...");
    }
    // The contract keys win a collision with an out-of-band header.
    if (projection.envelope && binding::kRabbitmqHeaders.owns(name)) continue;
    projection.extra_headers.emplace_back(name, value);
  }
  return projection;
}

amqp_basic_properties_t properties(const Projection& projection, std::vector<amqp_table_entry_t>& entries) {
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CONTENT_ENCODING_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                 AMQP_BASIC_APP_ID_FLAG;
  props.content_type = bytes_of(binding::kContentType);
  props.content_encoding = bytes_of("utf-8");
  props.delivery_mode = 2;  // persistent
  props.app_id = bytes_of(binding::kAppId);
  entries.clear();
  for (const auto& [name, value] : projection.extra_headers) entries.push_back(string_entry(name, value));
  if (projection.envelope) {
    if (!projection.type.empty()) {
      props._flags |= AMQP_BASIC_TYPE_FLAG;
      props.type = bytes_of(projection.type);
    }
    if (!projection.correlation_id.empty()) {
      props._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
      props.correlation_id = bytes_of(projection.correlation_id);
    }
    if (!projection.message_id.empty()) {
      props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
      props.message_id = bytes_of(projection.message_id);
    }
    if (projection.schema_version) entries.push_back(integer_entry(kSchemaVersionHeader, *projection.schema_version));
    if (!projection.source_lang.empty()) entries.push_back(string_entry(kSourceLangHeader, projection.source_lang));
    entries.push_back(integer_entry(kAttemptsHeader, projection.attempts));
  }
  if (!entries.empty()) {
    props._flags |= AMQP_BASIC_HEADERS_FLAG;
    props.headers.num_entries = static_cast<int>(entries.size());
    props.headers.entries = entries.data();
  }
  return props;
}

bool is_reserved_header(std::string_view name) {
  return binding::kRabbitmqHeaders.owns(name) || name == kDeliveryCountHeader || name == "x-death" ||
         name.starts_with("x-first-death-") || name.starts_with("x-last-death-");
}

std::optional<std::int64_t> field_integer(const amqp_field_value_t& value) {
  switch (value.kind) {
    case AMQP_FIELD_KIND_I8: return value.value.i8;
    case AMQP_FIELD_KIND_U8: return value.value.u8;
    case AMQP_FIELD_KIND_I16: return value.value.i16;
    case AMQP_FIELD_KIND_U16: return value.value.u16;
    case AMQP_FIELD_KIND_I32: return value.value.i32;
    case AMQP_FIELD_KIND_U32: return value.value.u32;
    case AMQP_FIELD_KIND_I64: return value.value.i64;
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP:
      if (value.value.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return static_cast<std::int64_t>(value.value.u64);
    default: return std::nullopt;
  }
}

std::optional<std::string> field_text(const amqp_field_value_t& value) {
  switch (value.kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES: return std::string(view(value.value.bytes));
    case AMQP_FIELD_KIND_BOOLEAN: return std::string(value.value.boolean != 0 ? "true" : "false");
    case AMQP_FIELD_KIND_F32: return std::to_string(value.value.f32);
    case AMQP_FIELD_KIND_F64: return std::to_string(value.value.f64);
    default:
      if (auto number = field_integer(value)) return std::to_string(*number);
      return std::nullopt;
  }
}

}  // namespace babelqueue::rabbitmq::detail
