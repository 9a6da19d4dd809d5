// SPDX-License-Identifier: Apache-2.0
// The RabbitMQ binding's projection of an envelope onto AMQP 0-9-1 basic
// properties and headers (SPEC.md §5), kept apart from the connection code so
// the conformance section checks exactly what the transport sends.
#pragma once

#include <babelqueue/binding.hpp>
#include <babelqueue/transport.hpp>

#include <amqp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::rabbitmq::detail {

inline constexpr std::string_view kAttemptsHeader = binding::kRabbitmqHeaders.attempts;
inline constexpr std::string_view kSchemaVersionHeader = binding::kRabbitmqHeaders.schema_version;
inline constexpr std::string_view kSourceLangHeader = binding::kRabbitmqHeaders.source_lang;
inline constexpr std::string_view kDeliveryCountHeader = "x-delivery-count";

// What a message carries besides its body, computed once on the publishing
// thread: the contract fields when the body is an envelope, plus the
// out-of-band headers that survive the collision rule.
struct Projection {
  bool envelope = false;  // the body decoded as an envelope
  std::string type;       // job
  std::string correlation_id;
  std::string message_id;
  std::string source_lang;
  std::optional<std::int64_t> schema_version;
  std::int64_t attempts = 0;
  std::vector<std::pair<std::string, std::string>> extra_headers;  // out-of-band, in order
};

// Errc::invalid_argument when a header name does not fit an AMQP short string.
// known: the body's contract fields when the caller has them (else the body
// is read).
Result<Projection> project(std::string_view body, const Headers& headers,
                           const binding::ContractFields* known = nullptr);

// Basic properties pointing into projection (which must outlive them) with
// entries as the header table's storage.
amqp_basic_properties_t properties(const Projection& projection, std::vector<amqp_table_entry_t>& entries);

// True for header names the binding or the broker own: they are not handed to
// the application as out-of-band headers (the contract keys, x-delivery-count,
// and the x-death family RabbitMQ adds when it dead-letters).
bool is_reserved_header(std::string_view name);

// A header table value as text, or nothing for values that have no text form
// (tables, arrays, void).
std::optional<std::string> field_text(const amqp_field_value_t& value);

// An integer header value of any AMQP integer kind.
std::optional<std::int64_t> field_integer(const amqp_field_value_t& value);

inline std::string_view view(amqp_bytes_t bytes) {
  return bytes.len == 0 ? std::string_view{} : std::string_view(static_cast<const char*>(bytes.bytes), bytes.len);
}

// Non-owning: text must outlive the result.
inline amqp_bytes_t bytes_of(std::string_view text) {
  amqp_bytes_t bytes;
  bytes.len = text.size();
  bytes.bytes = const_cast<char*>(text.data());  // NOLINT: rabbitmq-c takes non-const, never writes
  return bytes;
}

}  // namespace babelqueue::rabbitmq::detail
