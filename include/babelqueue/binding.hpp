// SPDX-License-Identifier: Apache-2.0
// The binding kit: the rules every broker binding shares, in one place.
//
// A broker binding (broker-bindings.md) projects a few envelope fields onto
// the broker's native metadata, so a consumer can route or reject a message
// without reading its body, and reads a native delivery count back. What
// differs between brokers is only the table of names and how they are typed;
// the rules below are the same for all of them:
//   - the six contract fields of a body (job, trace_id, meta.id, meta.lang,
//     meta.schema_version, meta.created_at, attempts), read once;
//   - the bq-schema-version gate a consumer applies before decoding;
//   - the names each binding gives those fields;
//   - the attempts reconciliation (attempts_rule.hpp).
// A transport keeps only its mapping table and its I/O.
//
// Thread-safety: pure functions and constants.
#pragma once

#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/rejection.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

/// What every broker binding shares: the contract fields, their names per broker, the gates.
namespace babelqueue::binding {

/// The fields a binding projects, as views into a body (or an Envelope).
struct ContractFields {
  std::string_view job;                        ///< the URN
  std::string_view trace_id;                   ///< trace_id
  std::string_view id;                         ///< meta.id
  std::string_view lang;                       ///< meta.lang
  std::optional<std::int64_t> schema_version;  ///< meta.schema_version
  std::optional<std::int64_t> created_at;      ///< meta.created_at, Unix epoch ms
  std::int64_t attempts = 0;                   ///< attempts (0 when absent)
  bool dead_letter = false;                    ///< the body carries a dead_letter block

  /// The fields of a decoded envelope (views into it).
  static ContractFields of(const Envelope& envelope) noexcept;
};

/// Every field equal.
bool operator==(const ContractFields& a, const ContractFields& b) noexcept;

/// The contract fields read by one forward scan that decodes nothing else:
/// publish runs it for every message it sends. It answers only for the plain
/// shape every SDK writes: a JSON object whose `job`, `trace_id`, `meta.id`
/// and `meta.lang` are strings without escapes, `meta.schema_version`,
/// `meta.created_at` and `attempts` plain integers, each key once. Anything
/// else (an escape, a `urn` key, a repeated key, another type, malformed
/// JSON) answers nothing, and the caller falls back to Envelope::decode.
/// Where it answers for a body the decoder accepts, its fields equal the
/// decoder's. It does not validate the rest of the body: a body whose `data`
/// holds invalid UTF-8 is scanned all the same, and its consumer rejects it as
/// poison when it decodes it whole.
std::optional<ContractFields> scan(std::string_view body) noexcept;

/// The contract fields of body: scanned when it has the plain shape, else
/// decoded into `decoded`, which the views then point into (keep it alive as
/// long as the fields). Nothing when neither can read the fields: such a body
/// is still sent byte for byte, with no projection.
std::optional<ContractFields> read(std::string_view body, std::optional<Envelope>& decoded);

/// The bq-schema-version gate, applied by a consumer before any decoding.
/// A text value (Kafka, Pulsar, SQS, Artemis): absent, empty or blank in
/// ASCII whitespace passes, exactly "1" passes, anything else is poison. A
/// typed value (AMQP-typed brokers: Service Bus, RabbitMQ): exactly 1 passes.
///@{
std::optional<Rejection> schema_version_gate(std::optional<std::string_view> text) noexcept;
std::optional<Rejection> schema_version_gate(std::int64_t value) noexcept;
///@}

/// A count carried as text (bq-attempts, ApproximateReceiveCount): a
/// non-negative decimal integer that fits, else nothing (ignored).
std::optional<std::int64_t> parse_count(std::string_view text) noexcept;

/// The names a binding gives the contract fields it projects. Empty where the
/// binding carries the field in a native slot instead (AMQP type,
/// correlation-id, message-id, subject, ...) or not at all.
struct ContractNames {
  std::string_view job;             ///< the URN
  std::string_view trace_id;        ///< trace_id
  std::string_view message_id;      ///< meta.id
  std::string_view schema_version;  ///< meta.schema_version
  std::string_view source_lang;     ///< meta.lang
  std::string_view attempts;        ///< attempts
  std::string_view created_at;      ///< meta.created_at
  std::string_view app_id;          ///< the producing application, "babelqueue"

  /// True for a name this binding owns: a user header of that name is
  /// overridden on publish and not handed back as an out-of-band header.
  constexpr bool owns(std::string_view name) const noexcept {
    return !name.empty() && (name == job || name == trace_id || name == message_id || name == schema_version ||
                             name == source_lang || name == attempts || name == created_at || name == app_id);
  }
};

/// Kafka record headers and Pulsar properties: six strings.
inline constexpr ContractNames kKafkaHeaders{
    "bq-job", "bq-trace-id", "bq-message-id", "bq-schema-version", "bq-source-lang", "bq-attempts", {}, {}};
inline constexpr ContractNames kPulsarProperties = kKafkaHeaders;  ///< the same six as Kafka's
/// SQS message attributes: no attempts (ApproximateReceiveCount is the
/// native count), created_at as a Number.
inline constexpr ContractNames kSqsAttributes{
    "bq-job", "bq-trace-id", "bq-message-id", "bq-schema-version", "bq-source-lang", {}, "bq-created-at", {}};
/// RabbitMQ (AMQP 0-9-1) headers; job, trace_id and id ride the basic
/// properties type, correlation_id and message_id.
inline constexpr ContractNames kRabbitmqHeaders{{}, {}, {}, "x-schema-version", "x-source-lang", "x-attempts", {}, {}};
/// Service Bus application properties, natively typed; job, trace_id and id
/// ride subject, correlation-id and message-id.
inline constexpr ContractNames kServiceBusProperties{
    {}, {}, {}, "bq-schema-version", "bq-source-lang", {}, "bq-created-at", {}};
/// Artemis application properties: JMS-legal names (underscores), strings;
/// job rides the x-opt-jms-type annotation, trace_id and id the
/// correlation-id and message-id.
inline constexpr ContractNames kArtemisProperties{
    {}, {}, {}, "bq_schema_version", "bq_source_lang", "bq_attempts", {}, "bq_app_id"};

/// Values the bindings share: the app id and the content type they set.
///@{
inline constexpr std::string_view kAppId = "babelqueue";
inline constexpr std::string_view kContentType = "application/json";
///@}
/// A delay mirrored as a property (Kafka retry parking, Pulsar, Artemis), in ms.
inline constexpr std::string_view kDelayHeader = "bq-delay";

}  // namespace babelqueue::binding
