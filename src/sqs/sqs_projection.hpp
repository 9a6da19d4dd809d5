// SPDX-License-Identifier: Apache-2.0
// The SQS binding's pure rules (seeds/000 "Amazon SQS", SPEC.md §5), apart
// from the HTTP so the transport, the conformance section and the unit tests
// share one implementation. Internal to babelqueue::sqs.
#pragma once

#include <babelqueue/binding.hpp>
#include <babelqueue/transport.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::sqs_detail {

// SQS accepts at most this many MessageAttributes per message.
inline constexpr std::size_t kMaxMessageAttributes = 10;

struct MessageAttribute {
  std::string name;
  std::string data_type;  // "String" or "Number"
  std::string value;
};

// The six contract attributes projected from the envelope in body (those its
// fields fill; none for a body that does not decode), then headers as String
// attributes in name order — skipping empty names or values, names SQS
// refuses, and names the contract holds — up to kMaxMessageAttributes.
std::vector<MessageAttribute> project_attributes(std::string_view body, const Headers& headers);
// The same from fields already read (null: the body is not an envelope).
std::vector<MessageAttribute> project_attributes(const binding::ContractFields* fields, const Headers& headers);

// True for the six attribute names the projection owns (bq-job, ...).
bool is_contract_attribute(std::string_view name) noexcept;

// ApproximateReceiveCount - 1 (never below 0); nullopt for an absent or
// non-numeric count, which reconciliation ignores.
std::optional<std::int64_t> native_attempts(const std::string* approximate_receive_count);

// The FIFO MessageDeduplicationId of a body when the publish names none and
// the queue does not deduplicate by content: meta.id for a first publish,
// meta.id:attempts (":dead-letter" added for a body with a dead_letter
// block) for a republish, the SHA-256 of the body for a non-envelope.
std::string fifo_deduplication_id(std::string_view body);
std::string fifo_deduplication_id(std::string_view body, const binding::ContractFields* fields);

// An id SQS accepts as MessageDeduplicationId/MessageGroupId (1..128
// printable ASCII characters) unchanged, else its SHA-256 in hex.
std::string fifo_safe_id(std::string_view id);

}  // namespace babelqueue::sqs_detail
