// SPDX-License-Identifier: Apache-2.0
#include "servicebus_projection.hpp"

#include "amqp_values.hpp"

#include <babelqueue/binding.hpp>

#include <algorithm>
#include <limits>
#include <map>
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

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string body_bytes(const proton::value& body) {
  switch (body.type()) {
    case proton::BINARY: {
      const auto b = proton::get<proton::binary>(body);
      return std::string(b.begin(), b.end());
    }
    case proton::STRING: return proton::get<std::string>(body);
    case proton::SYMBOL: return proton::get<proton::symbol>(body);
    case proton::NULL_TYPE: return {};
    default: return proton::to_string(body);
  }
}

}  // namespace

proton::message make_message(std::string_view body, const PublishOptions& options) {
  proton::message m;
  // inferred: a binary body is a Data section, not an amqp-value.
  m.inferred(true);
  m.body(proton::binary(body.begin(), body.end()));
  m.content_type(std::string(binding::kContentType));

  std::map<std::string, proton::scalar> props;
  for (const auto& [name, value] : options.headers) {
    if (!names.owns(name)) props.emplace(name, value);
  }
  std::optional<Envelope> decoded;
  std::optional<binding::ContractFields> read;
  const binding::ContractFields* fields = options.contract;
  if (fields == nullptr) {
    read = binding::read(body, decoded);
    if (read) fields = &*read;
  }
  if (fields != nullptr) {
    if (!fields->job.empty()) m.subject(std::string(fields->job));
    if (!fields->trace_id.empty()) m.correlation_id(std::string(fields->trace_id));
    if (!fields->id.empty()) m.id(std::string(fields->id));
    if (fields->schema_version) {
      const std::int64_t v = *fields->schema_version;
      // An int as the binding says; a value past int32 stays a long rather than wrap.
      if (v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max()) {
        props[std::string(names.schema_version)] = static_cast<std::int32_t>(v);
      } else {
        props[std::string(names.schema_version)] = v;
      }
    }
    if (!fields->lang.empty()) props[std::string(names.source_lang)] = std::string(fields->lang);
    if (fields->created_at) props[std::string(names.created_at)] = static_cast<std::int64_t>(*fields->created_at);
  }
  if (options.delay.count() > 0) {
    std::map<proton::annotation_key, proton::value> annotations;
    annotations.emplace(proton::symbol(std::string(kScheduledEnqueueTimeAnnotation)),
                        proton::timestamp(now_ms() + options.delay.count()));
    m.message_annotations() = annotations;
  }
  if (!props.empty()) m.properties() = props;
  return m;
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

Delivery to_delivery(std::string_view queue, std::uint64_t id, const proton::message& message,
                     const proton::binary& tag, std::chrono::milliseconds lock_duration) {
  Delivery d;
  d.queue = std::string(queue);
  d.token.id = id;
  // The gate runs before the body is read.
  std::map<std::string, proton::scalar> props;
  if (!message.properties().empty()) proton::get(message.properties().value(), props);
  for (const auto& [name, value] : props) {
    if (name == names.schema_version) {
      d.gate_rejection = amqp10::schema_version_gate(value);
    } else if (!names.owns(name)) {
      d.headers.emplace(name, amqp10::text_of(value));
    }
  }
  d.body = body_bytes(message.body());
  // The header carries DeliveryCount - 1.
  const std::int64_t delivery_count = static_cast<std::int64_t>(message.delivery_count()) + 1;
  d.native_attempts = native_attempts_of_delivery_count(delivery_count);
  d.attempts_merge = kOneBasedDeliveryCount.merge;
  const Lock lock = lock_of(message, tag);
  d.token.text = lock.token;
  if (lock_duration.count() > 0) {
    d.lease_deadline =
        lease_deadline_of(lock, lock_duration, std::chrono::steady_clock::now(), std::chrono::system_clock::now());
  }
  return d;
}

std::unique_ptr<amqp10::Read> read_delivery(std::string_view queue, const proton::message& message,
                                            std::chrono::milliseconds lock_duration) {
  auto read = std::make_unique<DeliveryRead>();
  read->delivery = to_delivery(queue, 0, message, proton::binary(), lock_duration);
  if (read->delivery.token.text.empty()) return nullptr;
  return read;
}

}  // namespace babelqueue::servicebus
