// SPDX-License-Identifier: Apache-2.0
#include "artemis_projection.hpp"

#include "amqp_values.hpp"

#include <babelqueue/binding.hpp>

#include <chrono>
#include <map>
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

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string body_bytes(const proton::value& body) {
  switch (body.type()) {
    case proton::STRING: return proton::get<std::string>(body);
    case proton::BINARY: {
      const auto b = proton::get<proton::binary>(body);
      return std::string(b.begin(), b.end());
    }
    case proton::SYMBOL: return proton::get<proton::symbol>(body);
    case proton::NULL_TYPE: return {};
    default: return proton::to_string(body);
  }
}

}  // namespace

proton::message make_message(std::string_view body, const PublishOptions& options,
                             std::optional<std::uint32_t> delivery_count) {
  proton::message m;
  m.body(std::string(body));
  m.durable(true);
  m.content_type(std::string(binding::kContentType));
  if (delivery_count) m.delivery_count(*delivery_count);

  std::map<std::string, proton::scalar> props;
  for (const auto& [name, value] : options.headers) {
    if (!is_ours(name)) props.emplace(name, value);
  }
  std::optional<Envelope> decoded;
  std::optional<binding::ContractFields> read;
  const binding::ContractFields* fields = options.contract;
  if (fields == nullptr) {
    read = binding::read(body, decoded);
    if (read) fields = &*read;
  }
  std::map<proton::annotation_key, proton::value> annotations;
  if (fields != nullptr) {
    if (!fields->job.empty()) {
      annotations.emplace(proton::symbol(std::string(kJmsTypeAnnotation)), std::string(fields->job));
      m.subject(std::string(fields->job));  // Artemis's JMS client reads JMSType here (ADR 0017)
    }
    if (!fields->trace_id.empty()) m.correlation_id(std::string(fields->trace_id));
    if (!fields->id.empty()) m.id(std::string(fields->id));
    if (fields->created_at) m.creation_time(proton::timestamp(*fields->created_at));
    if (fields->schema_version) props[std::string(names.schema_version)] = std::to_string(*fields->schema_version);
    if (!fields->lang.empty()) props[std::string(names.source_lang)] = std::string(fields->lang);
    props[std::string(names.attempts)] = std::to_string(fields->attempts);
    props[std::string(names.app_id)] = std::string(binding::kAppId);
  }
  if (options.delay.count() > 0) {
    annotations.emplace(proton::symbol(std::string(kDeliveryTimeAnnotation)),
                        static_cast<std::int64_t>(now_ms() + options.delay.count()));
    props[std::string(kDelayProperty)] = std::to_string(options.delay.count());
  }
  if (!options.dedup_id.empty()) props[std::string(kDuplicateIdProperty)] = options.dedup_id;
  if (!options.ordering_key.empty()) m.group_id(options.ordering_key);
  if (!annotations.empty()) m.message_annotations() = annotations;
  if (!props.empty()) m.properties() = props;
  return m;
}

Delivery to_delivery(std::string_view queue, std::uint64_t id, const proton::message& message) {
  Delivery d;
  d.queue = std::string(queue);
  d.token.id = id;
  // The gate runs before the body is read.
  std::map<std::string, proton::scalar> props;
  if (!message.properties().empty()) proton::get(message.properties().value(), props);
  for (const auto& [name, value] : props) {
    if (name == names.schema_version) {
      d.gate_rejection = amqp10::schema_version_gate(value);
    } else if (!is_ours(name)) {
      d.headers.emplace(name, amqp10::text_of(value));
    }
  }
  d.body = body_bytes(message.body());
  d.native_attempts = static_cast<std::int64_t>(message.delivery_count());
  d.attempts_merge = kZeroBasedDeliveryCount.merge;
  d.ordering_key = message.group_id();
  return d;
}

}  // namespace babelqueue::artemis
