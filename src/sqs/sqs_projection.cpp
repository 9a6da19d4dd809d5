// SPDX-License-Identifier: Apache-2.0
#include "sqs_projection.hpp"

#include "sigv4_signer.hpp"

#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/binding.hpp>
#include <babelqueue/envelope.hpp>

#include <cctype>
#include <optional>

namespace babelqueue::sqs_detail {
namespace {

// SQS attribute names: letters, digits, '-', '_', '.', at most 256, not
// starting or ending with '.', no "..", not starting with AWS. or Amazon.
bool valid_attribute_name(std::string_view name) {
  if (name.empty() || name.size() > 256 || name.front() == '.' || name.back() == '.') return false;
  if (name.find("..") != std::string_view::npos) return false;
  auto starts_with_ci = [&](std::string_view prefix) {
    if (name.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(name[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) {
        return false;
      }
    }
    return true;
  };
  if (starts_with_ci("aws.") || starts_with_ci("amazon.")) return false;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) == 0 && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

bool is_contract_attribute(std::string_view name) noexcept { return binding::kSqsAttributes.owns(name); }

std::vector<MessageAttribute> project_attributes(const binding::ContractFields* fields, const Headers& headers) {
  std::vector<MessageAttribute> attributes;
  attributes.reserve(kMaxMessageAttributes);
  if (fields != nullptr) {
    constexpr const binding::ContractNames& names = binding::kSqsAttributes;
    auto text = [&](std::string_view name, std::string_view value) {
      if (!value.empty()) attributes.push_back({std::string(name), "String", std::string(value)});
    };
    auto number = [&](std::string_view name, std::optional<std::int64_t> value) {
      if (value) attributes.push_back({std::string(name), "Number", std::to_string(*value)});
    };
    text(names.job, fields->job);
    text(names.trace_id, fields->trace_id);
    text(names.message_id, fields->id);
    number(names.schema_version, fields->schema_version);
    text(names.source_lang, fields->lang);
    number(names.created_at, fields->created_at);
  }
  for (const auto& [name, value] : headers) {
    if (attributes.size() >= kMaxMessageAttributes) break;
    if (value.empty() || is_contract_attribute(name) || !valid_attribute_name(name)) continue;
    attributes.push_back({name, "String", value});
  }
  return attributes;
}

std::vector<MessageAttribute> project_attributes(std::string_view body, const Headers& headers) {
  std::optional<Envelope> decoded;
  const auto fields = binding::read(body, decoded);
  return project_attributes(fields ? &*fields : nullptr, headers);
}

std::optional<std::int64_t> native_attempts(const std::string* approximate_receive_count) {
  if (approximate_receive_count == nullptr) return std::nullopt;
  return kOneBasedDeliveryCount.native_attempts(binding::parse_count(*approximate_receive_count));
}

std::string fifo_safe_id(std::string_view id) {
  bool safe = !id.empty() && id.size() <= 128;
  for (const char c : id) {
    if (!safe) break;
    safe = c >= '!' && c <= '~';
  }
  return safe ? std::string(id) : sqs::sha256_hex(id);
}

std::string fifo_deduplication_id(std::string_view body, const binding::ContractFields* fields) {
  if (fields == nullptr || fields->id.empty()) return sqs::sha256_hex(body);
  if (fields->attempts == 0 && !fields->dead_letter) return fifo_safe_id(fields->id);
  std::string id(fields->id);
  id += ":" + std::to_string(fields->attempts);
  if (fields->dead_letter) id += ":dead-letter";
  return fifo_safe_id(id);
}

std::string fifo_deduplication_id(std::string_view body) {
  std::optional<Envelope> decoded;
  const auto fields = binding::read(body, decoded);
  return fifo_deduplication_id(body, fields ? &*fields : nullptr);
}

}  // namespace babelqueue::sqs_detail
