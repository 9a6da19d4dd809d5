// SPDX-License-Identifier: Apache-2.0
#include "servicebus_projection.hpp"

#include "amqp_values.hpp"
#include "c_handles.hpp"
#include "c_message_values.hpp"
#include "delivery_read.hpp"
#include "message_body.hpp"

#include <babelqueue/binding.hpp>
#include <babelqueue/error.hpp>

#include <proton/codec.h>
#include <proton/message.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <new>
#include <proton/annotation_key.hpp>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/timestamp.hpp>
#include <proton/types.hpp>
#include <proton/uuid.hpp>
#include <proton/value.hpp>

namespace babelqueue::servicebus {

namespace {

const binding::ContractNames& names = binding::kServiceBusProperties;

}  // namespace

MessageEncoder::MessageEncoder() : message_(pn_message()) {
  if (message_ == nullptr) throw std::bad_alloc();
}

MessageEncoder::~MessageEncoder() { pn_message_free(message_); }

Result<void> MessageEncoder::append(std::string_view body, const PublishOptions& options,
                                    amqp10::EncodedMessages& out) {
  pn_message_t* m = message_;
  pn_message_clear(m);
  // The C setters take NUL-terminated text: text_ holds a copy, reused.
  auto c_text = [this](std::string_view text) -> const char* {
    text_.assign(text);
    return text_.c_str();
  };
  // inferred: a binary body is a Data section, not an amqp-value.
  pn_message_set_inferred(m, true);
  pn_data_put_binary(pn_message_body(m), amqp10::bytes_of(body));
  pn_message_set_content_type(m, c_text(binding::kContentType));

  std::optional<Envelope> decoded;
  std::optional<binding::ContractFields> read;
  const binding::ContractFields* fields = options.contract;
  if (fields == nullptr) {
    read = binding::read(body, decoded);
    if (read) fields = &*read;
  }
  // Application properties in name order (as a std::map holds them, and so
  // byte for byte what proton::message sends): the headers that are not
  // the binding's, then the binding's typed ones.
  properties_.clear();
  for (const auto& [name, value] : options.headers) {
    if (!names.owns(name)) properties_.push_back(Property{name, value, std::nullopt, false});
  }
  if (fields != nullptr) {
    if (fields->schema_version) {
      const std::int64_t v = *fields->schema_version;
      // An int as the binding says; a value past int32 stays a long rather than wrap.
      const bool fits = v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max();
      properties_.push_back(Property{names.schema_version, {}, v, !fits});
    }
    if (!fields->lang.empty()) properties_.push_back(Property{names.source_lang, fields->lang, std::nullopt, false});
    if (fields->created_at) {
      properties_.push_back(Property{names.created_at, {}, static_cast<std::int64_t>(*fields->created_at), true});
    }
  }
  if (!properties_.empty()) {
    std::sort(properties_.begin(), properties_.end(),
              [](const Property& a, const Property& b) { return a.name < b.name; });
    pn_data_t* p = pn_message_properties(m);
    pn_data_put_map(p);
    pn_data_enter(p);
    for (const Property& property : properties_) {
      pn_data_put_string(p, amqp10::bytes_of(property.name));
      if (!property.number) {
        pn_data_put_string(p, amqp10::bytes_of(property.text));
      } else if (property.wide) {
        pn_data_put_long(p, *property.number);
      } else {
        pn_data_put_int(p, static_cast<std::int32_t>(*property.number));
      }
    }
    pn_data_exit(p);
  }
  if (options.delay.count() > 0) {
    pn_data_t* a = pn_message_annotations(m);
    pn_data_put_map(a);
    pn_data_enter(a);
    pn_data_put_symbol(a, amqp10::bytes_of(kScheduledEnqueueTimeAnnotation));
    pn_data_put_timestamp(a, amqp10::epoch_ms_now() + options.delay.count());
    pn_data_exit(a);
  }
  if (fields != nullptr) {
    if (!fields->job.empty()) pn_message_set_subject(m, c_text(fields->job));
    if (!fields->trace_id.empty()) pn_message_set_correlation_id(m, amqp10::string_atom(fields->trace_id));
    if (!fields->id.empty()) pn_message_set_id(m, amqp10::string_atom(fields->id));
  }
  return out.append(m);
}

proton::message make_message(std::string_view body, const PublishOptions& options) {
  MessageEncoder encoder;
  amqp10::EncodedMessages encoded;
  if (auto appended = encoder.append(body, options, encoded); !appended) throw Error(appended.error());
  return amqp10::decoded(encoded);
}

std::int64_t native_attempts_of_delivery_count(std::int64_t delivery_count) {
  return *kOneBasedDeliveryCount.native_attempts(delivery_count);
}

std::string lock_token_from_tag(const proton::binary& tag) {
  if (tag.size() != 16) return {};
  // .NET's Guid byte order: Data1 (4), Data2 (2), Data3 (2) little-endian, then 8 bytes as they are.
  static constexpr int kOrder[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  proton::uuid u;
  for (int i = 0; i < 16; ++i)
    u[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(tag[static_cast<std::size_t>(kOrder[i])]);
  return u.str();
}

Lock lock_of(const proton::message& message, const proton::binary& tag) {
  Lock lock;
  const auto& annotations = message.message_annotations();
  const proton::symbol token_key{std::string(kLockTokenAnnotation)};
  if (annotations.exists(token_key)) {
    const proton::value v = annotations.get(token_key);
    if (v.type() == proton::UUID) lock.token = proton::get<proton::uuid>(v).str();
  }
  if (lock.token.empty()) lock.token = lock_token_from_tag(tag);
  const proton::symbol until_key{std::string(kLockedUntilAnnotation)};
  if (annotations.exists(until_key)) {
    const proton::value v = annotations.get(until_key);
    if (v.type() == proton::TIMESTAMP) {
      lock.locked_until = std::chrono::system_clock::time_point(
          std::chrono::milliseconds(proton::get<proton::timestamp>(v).milliseconds()));
    }
  }
  return lock;
}

namespace {

using amqp10::detail::view;

bool is_text(pn_type_t type) { return type == PN_STRING || type == PN_SYMBOL || type == PN_BINARY; }

std::string_view text_at(pn_data_t* data) {
  switch (pn_data_type(data)) {
    case PN_STRING: return view(pn_data_get_string(data));
    case PN_SYMBOL: return view(pn_data_get_symbol(data));
    default: return view(pn_data_get_binary(data));
  }
}

// The application properties read straight off the message's data, without
// a std::map of scalars: string keys with string, symbol, binary, int or
// long values — what the SDKs send. False, with d untouched, for anything
// else; the general reading handles that.
bool read_properties(pn_data_t* p, Delivery& d) {
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
    if (!is_text(type) && type != PN_INT && type != PN_LONG) return false;
  }
  pn_data_rewind(p);
  pn_data_next(p);
  pn_data_enter(p);
  for (std::size_t i = 0; i < count; ++i) {
    pn_data_next(p);
    const std::string_view name = view(pn_data_get_string(p));
    pn_data_next(p);
    const pn_type_t type = pn_data_type(p);
    const bool text = is_text(type);
    const std::int64_t number = type == PN_INT ? pn_data_get_int(p) : type == PN_LONG ? pn_data_get_long(p) : 0;
    if (name == names.schema_version) {
      d.gate_rejection = text ? binding::schema_version_gate(std::optional<std::string_view>(text_at(p)))
                              : binding::schema_version_gate(number);
    } else if (!names.owns(name)) {
      d.headers.emplace(name, text ? std::string(text_at(p)) : std::to_string(number));
    }
  }
  return true;
}

// x-opt-lock-token (a uuid) and x-opt-locked-until (a timestamp) off the
// message annotations' data, without a std::map of values.
Lock read_lock(pn_data_t* a) {
  Lock lock;
  if (a == nullptr) return lock;
  pn_data_rewind(a);
  if (!pn_data_next(a) || pn_data_type(a) != PN_MAP) return lock;
  const std::size_t count = pn_data_get_map(a) / 2;
  pn_data_enter(a);
  for (std::size_t i = 0; i < count; ++i) {
    if (!pn_data_next(a)) break;
    const pn_type_t key_type = pn_data_type(a);
    const std::string_view key = key_type == PN_SYMBOL || key_type == PN_STRING ? text_at(a) : std::string_view();
    if (!pn_data_next(a)) break;
    if (key == kLockTokenAnnotation && pn_data_type(a) == PN_UUID) {
      const pn_uuid_t u = pn_data_get_uuid(a);
      proton::uuid token;
      std::copy(std::begin(u.bytes), std::end(u.bytes), token.begin());
      lock.token = token.str();
    } else if (key == kLockedUntilAnnotation && pn_data_type(a) == PN_TIMESTAMP) {
      lock.locked_until = std::chrono::system_clock::time_point(std::chrono::milliseconds(pn_data_get_timestamp(a)));
    }
  }
  return lock;
}

}  // namespace

std::chrono::steady_clock::time_point lease_deadline_of(const Lock& lock, std::chrono::milliseconds lock_duration,
                                                        std::chrono::steady_clock::time_point steady_now,
                                                        std::chrono::system_clock::time_point system_now) {
  constexpr auto kClocksAgree = std::chrono::seconds(1);
  const auto deadline = steady_now + lock_duration;
  if (!lock.locked_until) return deadline;
  const auto by_service =
      steady_now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(*lock.locked_until - system_now);
  return by_service + kClocksAgree < deadline ? by_service : deadline;
}

void read_into(std::string_view queue, pn_message_t* message, const proton::binary& tag,
               std::chrono::milliseconds lock_duration, Delivery& d) {
  amqp10::begin_delivery(queue, d);
  // The gate runs before the body is read.
  if (!read_properties(pn_message_properties(message), d)) {
    amqp10::read_properties_decoded(
        message, names.schema_version, [](std::string_view name) { return names.owns(name); }, d);
  }
  amqp10::read_body(message, d.body);
  // The header carries DeliveryCount - 1.
  const std::int64_t delivery_count = static_cast<std::int64_t>(pn_message_get_delivery_count(message)) + 1;
  d.native_attempts = native_attempts_of_delivery_count(delivery_count);
  d.attempts_merge = kOneBasedDeliveryCount.merge;
  Lock lock = read_lock(pn_message_annotations(message));
  if (lock.token.empty()) lock.token = lock_token_from_tag(tag);
  d.token.text = lock.token;
  if (lock_duration.count() > 0) {
    d.lease_deadline =
        lease_deadline_of(lock, lock_duration, std::chrono::steady_clock::now(), std::chrono::system_clock::now());
  }
}

Delivery to_delivery(std::string_view queue, std::uint64_t id, const proton::message& message,
                     const proton::binary& tag, std::chrono::milliseconds lock_duration) {
  Delivery d;
  const amqp10::CMessage c = amqp10::c_message_of(message);
  if (c) {
    read_into(queue, c.get(), tag, lock_duration, d);
  } else {
    amqp10::begin_delivery(queue, d);
  }
  d.token.id = id;
  return d;
}

std::unique_ptr<amqp10::Read> read_delivery(std::string_view queue, pn_message_t* message,
                                            std::unique_ptr<amqp10::Read> reuse,
                                            std::chrono::milliseconds lock_duration) {
  // reuse is one of this reader's own reads (MessageReader).
  std::unique_ptr<DeliveryRead> read(reuse ? static_cast<DeliveryRead*>(reuse.release()) : new DeliveryRead);
  read_into(queue, message, proton::binary(), lock_duration, read->delivery);
  if (read->delivery.token.text.empty()) return nullptr;
  return read;
}

}  // namespace babelqueue::servicebus
