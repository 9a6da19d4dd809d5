// SPDX-License-Identifier: Apache-2.0
#include "artemis_projection.hpp"

#include "amqp_values.hpp"
#include "c_handles.hpp"
#include "c_message_values.hpp"
#include "delivery_read.hpp"
#include "encoded_message.hpp"
#include "message_body.hpp"

#include <babelqueue/binding.hpp>
#include <babelqueue/error.hpp>

#include <proton/codec.h>
#include <proton/message.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <new>
#include <proton/annotation_key.hpp>
#include <proton/binary.hpp>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/timestamp.hpp>
#include <proton/types.hpp>
#include <proton/value.hpp>
#include <string>

namespace babelqueue::artemis {

namespace {

const binding::ContractNames& names = binding::kArtemisProperties;

bool is_ours(std::string_view name) {
  return names.owns(name) || name == kDelayProperty || name == kDuplicateIdProperty;
}

std::string_view decimal(char (&buffer)[24], std::int64_t value) {
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return {buffer, static_cast<std::size_t>(end - buffer)};
}

}  // namespace

MessageEncoder::MessageEncoder() : message_(pn_message()) {
  if (message_ == nullptr) throw std::bad_alloc();
}

MessageEncoder::~MessageEncoder() { pn_message_free(message_); }

Result<void> MessageEncoder::append(std::string_view body, const PublishOptions& options,
                                    std::optional<std::uint32_t> delivery_count, amqp10::EncodedMessages& out) {
  pn_message_t* m = message_;
  pn_message_clear(m);
  // The C setters take NUL-terminated text: text_ holds a copy, reused.
  auto c_text = [this](std::string_view text) -> const char* {
    text_.assign(text);
    return text_.c_str();
  };
  pn_data_put_string(pn_message_body(m), amqp10::bytes_of(body));
  pn_message_set_durable(m, true);
  pn_message_set_content_type(m, c_text(binding::kContentType));
  if (delivery_count) pn_message_set_delivery_count(m, *delivery_count);

  std::optional<Envelope> decoded;
  std::optional<binding::ContractFields> read;
  const binding::ContractFields* fields = options.contract;
  if (fields == nullptr) {
    read = binding::read(body, decoded);
    if (read) fields = &*read;
  }
  // Application properties, in name order (as a std::map would hold them,
  // and so byte for byte what proton::message sends): the headers that are
  // not ours, then ours, which override a header of the same name.
  properties_.clear();
  for (const auto& [name, value] : options.headers) {
    if (!is_ours(name)) properties_.emplace_back(name, value);
  }
  const bool delayed = options.delay.count() > 0;
  if (fields != nullptr) {
    if (fields->schema_version) {
      properties_.emplace_back(names.schema_version, decimal(schema_version_, *fields->schema_version));
    }
    if (!fields->lang.empty()) properties_.emplace_back(names.source_lang, fields->lang);
    properties_.emplace_back(names.attempts, decimal(attempts_, fields->attempts));
    properties_.emplace_back(names.app_id, binding::kAppId);
  }
  if (delayed) properties_.emplace_back(kDelayProperty, decimal(delay_, options.delay.count()));
  if (!options.dedup_id.empty()) properties_.emplace_back(kDuplicateIdProperty, options.dedup_id);
  if (!properties_.empty()) {
    std::sort(properties_.begin(), properties_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    pn_data_t* p = pn_message_properties(m);
    pn_data_put_map(p);
    pn_data_enter(p);
    for (const auto& [name, value] : properties_) {
      pn_data_put_string(p, amqp10::bytes_of(name));
      pn_data_put_string(p, amqp10::bytes_of(value));
    }
    pn_data_exit(p);
  }
  // Message annotations, in key order too: x-opt-delivery-time, then
  // x-opt-jms-type.
  const bool typed = fields != nullptr && !fields->job.empty();
  if (delayed || typed) {
    pn_data_t* a = pn_message_annotations(m);
    pn_data_put_map(a);
    pn_data_enter(a);
    if (delayed) {
      pn_data_put_symbol(a, amqp10::bytes_of(kDeliveryTimeAnnotation));
      pn_data_put_long(a, amqp10::epoch_ms_now() + options.delay.count());
    }
    if (typed) {
      pn_data_put_symbol(a, amqp10::bytes_of(kJmsTypeAnnotation));
      pn_data_put_string(a, amqp10::bytes_of(fields->job));
    }
    pn_data_exit(a);
  }
  if (fields != nullptr) {
    if (typed) pn_message_set_subject(m, c_text(fields->job));  // Artemis's JMS client reads JMSType here (ADR 0017)
    if (!fields->trace_id.empty()) pn_message_set_correlation_id(m, amqp10::string_atom(fields->trace_id));
    if (!fields->id.empty()) pn_message_set_id(m, amqp10::string_atom(fields->id));
    if (fields->created_at) pn_message_set_creation_time(m, *fields->created_at);
  }
  if (!options.ordering_key.empty()) pn_message_set_group_id(m, options.ordering_key.c_str());
  return out.append(m);
}

proton::message make_message(std::string_view body, const PublishOptions& options,
                             std::optional<std::uint32_t> delivery_count) {
  MessageEncoder encoder;
  amqp10::EncodedMessages encoded;
  if (auto appended = encoder.append(body, options, delivery_count, encoded); !appended) {
    throw Error(appended.error());
  }
  return amqp10::decoded(encoded);
}

namespace {

using amqp10::detail::view;

// An application property with a text value: the gate, or a header unless
// the binding owns it.
void take_text_property(std::string_view name, std::string_view value, Delivery& d) {
  if (name == names.schema_version) {
    d.gate_rejection = binding::schema_version_gate(std::optional<std::string_view>(value));
  } else if (!is_ours(name)) {
    d.headers.emplace(name, value);
  }
}

// The application properties read straight off the message's data, without
// a std::map of scalars: string keys with string, symbol or binary values,
// which is what every SDK sends. False, with d untouched, for anything
// else; the general reading below handles that.
bool read_text_properties(pn_data_t* p, Delivery& d) {
  if (p == nullptr) return true;
  pn_data_rewind(p);
  if (!pn_data_next(p)) return true;
  if (pn_data_type(p) != PN_MAP) return false;
  const std::size_t count = pn_data_get_map(p) / 2;
  pn_data_enter(p);
  // Checked first: the headers are filled only once the whole map qualifies.
  for (std::size_t i = 0; i < count; ++i) {
    if (!pn_data_next(p) || pn_data_type(p) != PN_STRING || !pn_data_next(p)) return false;
    const pn_type_t type = pn_data_type(p);
    if (type != PN_STRING && type != PN_SYMBOL && type != PN_BINARY) return false;
  }
  pn_data_rewind(p);
  pn_data_next(p);
  pn_data_enter(p);
  for (std::size_t i = 0; i < count; ++i) {
    pn_data_next(p);
    const std::string_view name = view(pn_data_get_string(p));
    pn_data_next(p);
    const pn_type_t type = pn_data_type(p);
    const std::string_view value = view(type == PN_STRING   ? pn_data_get_string(p)
                                        : type == PN_SYMBOL ? pn_data_get_symbol(p)
                                                            : pn_data_get_binary(p));
    take_text_property(name, value, d);
  }
  return true;
}

// The same off the encoded map (encoded_message.hpp); false, with d's
// headers and gate part filled, when a key or value is not text.
bool read_text_properties(const amqp10::EncodedValue& map, Delivery& d) {
  amqp10::EncodedValue name, value;
  amqp10::ValueCursor cursor(map.payload, 1);
  while (cursor.next(name)) {
    if (!name.is_string() || !cursor.next(value) || !(value.is_string() || value.is_symbol() || value.is_binary())) {
      return false;
    }
    take_text_property(name.payload, value.payload, d);
  }
  return cursor.at_end();
}

}  // namespace

void read_into(std::string_view queue, pn_message_t* message, Delivery& d) {
  amqp10::begin_delivery(queue, d);
  // The gate runs before the body is read.
  if (!read_text_properties(pn_message_properties(message), d)) {
    amqp10::read_properties_decoded(message, names.schema_version, is_ours, d);
  }
  amqp10::read_body(message, d.body);
  d.native_attempts = static_cast<std::int64_t>(pn_message_get_delivery_count(message));
  d.attempts_merge = kZeroBasedDeliveryCount.merge;
  const char* group = pn_message_get_group_id(message);
  d.ordering_key.assign(group != nullptr ? group : "");
}

bool read_encoded(std::string_view queue, std::string_view encoded, Delivery& d) {
  amqp10::EncodedSections sections;
  if (!amqp10::read_sections(encoded, sections)) return false;
  // What a reader takes: the header's delivery-count, the properties'
  // group-id, each checked before d changes.
  std::uint32_t delivery_count = 0;
  if (const amqp10::EncodedValue& count = sections.header_fields[4]; !count.is_null()) {
    delivery_count = count.as_uint().value_or(0);  // a uint: read_sections() checked the type
  }
  std::string_view group = sections.properties_fields[10].payload;  // a string or null
  // Up to a NUL, as proton's C API reads it (a C string), so that both
  // readings give the same key.
  group = group.substr(0, group.find('\0'));
  const std::optional<amqp10::EncodedValue>& body = sections.body;
  if (body && !(body->is_string() || body->is_binary() || body->is_symbol() || body->is_null())) return false;
  amqp10::begin_delivery(queue, d);
  // The gate runs before the body is read.
  if (sections.application_properties && !read_text_properties(*sections.application_properties, d)) return false;
  amqp10::clear_body(d.body);
  if (body) d.body.assign(body->payload);
  d.native_attempts = static_cast<std::int64_t>(delivery_count);
  d.attempts_merge = kZeroBasedDeliveryCount.merge;
  d.ordering_key.assign(group);
  return true;
}

Delivery to_delivery(std::string_view queue, std::uint64_t id, const proton::message& message) {
  Delivery d;
  const amqp10::CMessage c = amqp10::c_message_of(message);
  if (c) {
    read_into(queue, c.get(), d);
  } else {
    amqp10::begin_delivery(queue, d);
  }
  d.token.id = id;
  return d;
}

std::unique_ptr<amqp10::Read> read_encoded_delivery(std::string_view queue, std::string_view encoded,
                                                    std::unique_ptr<amqp10::Read>& reuse) {
  // reuse is one of this reader's own reads (MessageReader).
  std::unique_ptr<DeliveryRead> read(reuse ? static_cast<DeliveryRead*>(reuse.release()) : new DeliveryRead);
  if (read_encoded(queue, encoded, read->delivery)) return read;
  reuse = std::move(read);  // declined: for the reader
  return nullptr;
}

std::unique_ptr<amqp10::Read> read_delivery(std::string_view queue, pn_message_t* message,
                                            std::unique_ptr<amqp10::Read> reuse) {
  // reuse is one of this reader's own reads (MessageReader).
  std::unique_ptr<DeliveryRead> read(reuse ? static_cast<DeliveryRead*>(reuse.release()) : new DeliveryRead);
  read_into(queue, message, read->delivery);
  return read;
}

}  // namespace babelqueue::artemis
