// How a BabelQueue envelope maps onto a Kafka record (SPEC.md §5, the
// conformance suite's `kafka` block): the bq- header projection, the
// bq-schema-version gate and the bq-attempts header. Pure functions, shared
// by the transport and its conformance section.
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/rejection.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::kafka::detail {

inline constexpr std::string_view kJobHeader = "bq-job";
inline constexpr std::string_view kTraceIdHeader = "bq-trace-id";
inline constexpr std::string_view kMessageIdHeader = "bq-message-id";
inline constexpr std::string_view kSchemaVersionHeader = "bq-schema-version";
inline constexpr std::string_view kSourceLangHeader = "bq-source-lang";
inline constexpr std::string_view kAttemptsHeader = "bq-attempts";
// On a record parked on a retry topic: the delay it waits (ms) and the topic
// it goes back to. Removed when it is re-injected.
inline constexpr std::string_view kDelayHeader = "bq-delay";
inline constexpr std::string_view kOriginalTopicHeader = "bq-original-topic";

using RecordHeaders = std::vector<std::pair<std::string, std::string>>;

// What publish derives from an envelope body. A body that is not a decodable
// envelope projects nothing (it is still published byte for byte).
struct Projection {
  RecordHeaders headers;                   // the six bq- headers, in the binding's order
  std::optional<std::int64_t> created_at;  // meta.created_at, the record timestamp (Unix ms)
  std::optional<std::int64_t> attempts;    // the body's attempts
};

// The six fields the projection needs, read by a single forward scan that
// decodes nothing else (publish runs it for every record). It answers only for
// the plain shape every SDK writes: a JSON object whose `job`, `trace_id`,
// `meta.id`, `meta.lang` are strings without escapes, `meta.schema_version`,
// `meta.created_at` and `attempts` plain integers, each key once. Anything
// else (an escape, a `urn` key, a repeated key, another type, malformed
// JSON) answers nothing, and the caller falls back to Envelope::decode.
struct ScannedFields {
  std::string_view job;
  std::string_view trace_id;
  std::string_view id;
  std::string_view lang;
  std::optional<std::int64_t> schema_version;
  std::optional<std::int64_t> created_at;
  std::int64_t attempts = 0;
};
std::optional<ScannedFields> scan_fields(std::string_view body) noexcept;

// Calls add(name, value) for each bq- header of body, in the binding's order
// (bq-attempts = attempts_override when given), and returns meta.created_at;
// nothing (and no call) when body is not a decodable envelope.
struct Projected {
  std::optional<std::int64_t> created_at;
  std::int64_t attempts = 0;
};
template <class Add>
std::optional<Projected> project_with(std::string_view body, Add&& add,
                                      std::optional<std::int64_t> attempts_override = std::nullopt) {
  auto add_text = [&add](std::string_view name, std::string_view value) {
    if (!value.empty()) add(name, value);
  };
  auto add_all = [&](std::string_view job, std::string_view trace_id, std::string_view id,
                     std::optional<std::int64_t> version, std::string_view lang, std::int64_t attempts) {
    add_text(kJobHeader, job);
    add_text(kTraceIdHeader, trace_id);
    add_text(kMessageIdHeader, id);
    if (version) add_text(kSchemaVersionHeader, std::to_string(*version));
    add_text(kSourceLangHeader, lang);
    add_text(kAttemptsHeader, std::to_string(attempts_override.value_or(attempts)));
  };
  if (auto fields = scan_fields(body)) {
    add_all(fields->job, fields->trace_id, fields->id, fields->schema_version, fields->lang, fields->attempts);
    return Projected{fields->created_at, fields->attempts};
  }
  auto envelope = Envelope::decode(body);
  if (!envelope) return std::nullopt;
  add_all(envelope->urn(), envelope->trace_id(), envelope->id(), envelope->schema_version(), envelope->lang(),
          envelope->attempts());
  return Projected{envelope->created_at(), envelope->attempts()};
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

// The bq-schema-version gate: absent, empty or ASCII-whitespace-only decodes;
// exactly "1" decodes; anything else is poison (Rejection::schema_version_gate).
std::optional<Rejection> schema_version_gate(std::optional<std::string_view> header) noexcept;

// A bq-attempts header value: a non-negative decimal integer, else nothing
// (the body's count is then used).
std::optional<std::int64_t> parse_attempts(std::string_view text) noexcept;

}  // namespace babelqueue::kafka::detail
