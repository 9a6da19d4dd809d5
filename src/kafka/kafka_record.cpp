// SPDX-License-Identifier: Apache-2.0
#include "kafka_record.hpp"

#include <babelqueue/envelope.hpp>

#include <array>

namespace babelqueue::kafka::detail {

Projection project(std::string_view body) {
  Projection out;
  auto projected = project_with(body, [&out](std::string_view name, std::string_view value) {
    out.headers.emplace_back(std::string(name), std::string(value));
  });
  if (projected) {
    out.created_at = projected->created_at;
    out.attempts = projected->attempts;
  }
  return out;
}

Projection project_by_decoding(std::string_view body) {
  Projection out;
  auto envelope = Envelope::decode(body);
  if (!envelope) return out;
  auto add = [&out](std::string_view name, std::string_view value) {
    if (!value.empty()) out.headers.emplace_back(std::string(name), std::string(value));
  };
  add(kJobHeader, envelope->urn());
  add(kTraceIdHeader, envelope->trace_id());
  add(kMessageIdHeader, envelope->id());
  if (auto version = envelope->schema_version()) add(kSchemaVersionHeader, std::to_string(*version));
  add(kSourceLangHeader, envelope->lang());
  add(kAttemptsHeader, std::to_string(envelope->attempts()));
  out.created_at = envelope->created_at();
  out.attempts = envelope->attempts();
  return out;
}

std::string topic_for_queue(std::string_view queue) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string topic;
  topic.reserve(queue.size());
  for (char c : queue) {
    const bool legal =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (legal) {
      topic += c;
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    topic += "_x";
    topic += kHex[byte >> 4];
    topic += kHex[byte & 0xF];
    topic += '_';
  }
  return topic;
}

bool is_reserved_header(std::string_view name) noexcept {
  static constexpr std::array kReserved{kJobHeader,        kTraceIdHeader,  kMessageIdHeader, kSchemaVersionHeader,
                                        kSourceLangHeader, kAttemptsHeader, kDelayHeader,     kOriginalTopicHeader};
  for (std::string_view reserved : kReserved) {
    if (name == reserved) return true;
  }
  return false;
}

}  // namespace babelqueue::kafka::detail
