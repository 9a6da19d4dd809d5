// SPDX-License-Identifier: Apache-2.0
#include "pulsar_projection.hpp"

#include <babelqueue/binding.hpp>

#include <chrono>
#include <utility>

namespace babelqueue::pulsar {

namespace {

const binding::ContractNames& names = binding::kPulsarProperties;

bool is_ours(std::string_view name) { return names.owns(name) || name == kDelayProperty; }

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

pulsar_detail::OutMessage make_message(std::string_view body, const PublishOptions& options) {
  pulsar_detail::OutMessage m;
  m.payload = std::string(body);
  std::optional<Envelope> decoded;
  std::optional<binding::ContractFields> read;
  const binding::ContractFields* fields = options.contract;
  if (fields == nullptr) {
    read = binding::read(body, decoded);
    if (read) fields = &*read;
  }
  if (fields != nullptr) {
    const auto add = [&](std::string_view name, std::string value) {
      if (!value.empty()) m.properties.emplace_back(std::string(name), std::move(value));
    };
    add(names.job, std::string(fields->job));
    add(names.trace_id, std::string(fields->trace_id));
    add(names.message_id, std::string(fields->id));
    if (fields->schema_version) add(names.schema_version, std::to_string(*fields->schema_version));
    add(names.source_lang, std::string(fields->lang));
    add(names.attempts, std::to_string(fields->attempts));
  }
  for (const auto& [name, value] : options.headers) {
    if (!name.empty() && !value.empty() && !is_ours(name)) m.properties.emplace_back(name, value);
  }
  if (options.delay.count() > 0) {
    m.deliver_at = now_ms() + options.delay.count();
    m.properties.emplace_back(std::string(kDelayProperty), std::to_string(options.delay.count()));
  }
  if (!options.ordering_key.empty()) m.key = options.ordering_key;
  return m;
}

Delivery to_delivery(std::string_view queue, pulsar_detail::InMessage message) {
  Delivery d;
  d.queue = std::string(queue);
  d.token.id = message.handle;
  bool gated = false;
  for (auto& [name, value] : message.properties) {
    if (name == names.schema_version) {
      // The first one counts, as a map would keep it.
      if (!std::exchange(gated, true)) d.gate_rejection = binding::schema_version_gate(std::string_view(value));
    } else if (!is_ours(name)) {
      d.headers.emplace(std::move(name), std::move(value));
    }
  }
  d.body = std::move(message.payload);
  d.native_attempts = kZeroBasedDeliveryCount.native_attempts(static_cast<std::int64_t>(message.redelivery_count));
  d.attempts_merge = kZeroBasedDeliveryCount.merge;
  if (message.key) d.ordering_key = std::move(*message.key);
  return d;
}

}  // namespace babelqueue::pulsar
