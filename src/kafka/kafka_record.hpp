// SPDX-License-Identifier: Apache-2.0
// How a BabelQueue envelope maps onto a Kafka record (SPEC.md §5, the
// conformance suite's `kafka` block): the bq- header projection, the
// bq-schema-version gate and the bq-attempts header. Pure functions, shared
// by the transport and its conformance section.
#pragma once

#include <babelqueue/binding.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/rejection.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::kafka::detail {

inline constexpr std::string_view kJobHeader = binding::kKafkaHeaders.job;
inline constexpr std::string_view kTraceIdHeader = binding::kKafkaHeaders.trace_id;
inline constexpr std::string_view kMessageIdHeader = binding::kKafkaHeaders.message_id;
inline constexpr std::string_view kSchemaVersionHeader = binding::kKafkaHeaders.schema_version;
inline constexpr std::string_view kSourceLangHeader = binding::kKafkaHeaders.source_lang;
inline constexpr std::string_view kAttemptsHeader = binding::kKafkaHeaders.attempts;
// On a record parked on a retry topic: the delay it waits (ms) and the topic
// it goes back to. Removed when it is re-injected.
inline constexpr std::string_view kDelayHeader = binding::kDelayHeader;
inline constexpr std::string_view kOriginalTopicHeader = "bq-original-topic";

using RecordHeaders = std::vector<std::pair<std::string, std::string>>;

// What publish derives from an envelope body. A body that is not a decodable
// envelope projects nothing (it is still published byte for byte).
struct Projection {
  RecordHeaders headers;                   // the six bq- headers, in the binding's order
  std::optional<std::int64_t> created_at;  // meta.created_at, the record timestamp (Unix ms)
  std::optional<std::int64_t> attempts;    // the body's attempts
};

// Calls add(name, value) for each bq- header of the fields, in the binding's
// order (bq-attempts = attempts_override when given), and returns
// meta.created_at and the attempts.
struct Projected {
  std::optional<std::int64_t> created_at;
  std::int64_t attempts = 0;
};
template <class Add>
Projected project_fields(const binding::ContractFields& fields, Add&& add,
                         std::optional<std::int64_t> attempts_override = std::nullopt) {
  auto add_text = [&add](std::string_view name, std::string_view value) {
    if (!value.empty()) add(name, value);
  };
  add_text(kJobHeader, fields.job);
  add_text(kTraceIdHeader, fields.trace_id);
  add_text(kMessageIdHeader, fields.id);
  if (fields.schema_version) add_text(kSchemaVersionHeader, std::to_string(*fields.schema_version));
  add_text(kSourceLangHeader, fields.lang);
  add_text(kAttemptsHeader, std::to_string(attempts_override.value_or(fields.attempts)));
  return Projected{fields.created_at, fields.attempts};
}

// The same for a body: nothing (and no call) when body is not an envelope
// the kit can read (binding::read).
template <class Add>
std::optional<Projected> project_with(std::string_view body, Add&& add,
                                      std::optional<std::int64_t> attempts_override = std::nullopt) {
  std::optional<Envelope> decoded;
  auto fields = binding::read(body, decoded);
  if (!fields) return std::nullopt;
  return project_fields(*fields, std::forward<Add>(add), attempts_override);
}

// The same projection through Envelope::decode only (the reference the
// scanner is tested against).
Projection project_by_decoding(std::string_view body);

Projection project(std::string_view body);

// The Kafka topic of a queue. Kafka topic names hold only ASCII letters,
// digits, '.', '_' and '-': a queue name made of those is its topic name;
// any other byte is written as "_xHH_" (lowercase hex), so "jobs/eu" is the
// topic "jobs_x2f_eu".
std::string topic_for_queue(std::string_view queue);

// The six contract headers plus the retry headers: the SDK writes them itself,
// so they are not out-of-band headers of a Delivery and user headers with
// these names are overridden.
bool is_reserved_header(std::string_view name) noexcept;

}  // namespace babelqueue::kafka::detail
