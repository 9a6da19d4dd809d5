#include "sqs_projection.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/sqs_signer.hpp>

#include <array>
#include <charconv>

namespace babelqueue::sqs_detail {
namespace {

constexpr std::array<std::string_view, 6> kContractAttributes = {
    "bq-job", "bq-trace-id", "bq-message-id", "bq-schema-version", "bq-source-lang", "bq-created-at"};

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

bool is_contract_attribute(std::string_view name) noexcept {
  for (const auto contract : kContractAttributes) {
    if (name == contract) return true;
  }
  return false;
}

std::vector<MessageAttribute> project_attributes(std::string_view body, const Headers& headers) {
  std::vector<MessageAttribute> attributes;
  attributes.reserve(kMaxMessageAttributes);
  if (auto env = Envelope::decode(body)) {
    auto text = [&](std::string_view name, std::string_view value) {
      if (!value.empty()) attributes.push_back({std::string(name), "String", std::string(value)});
    };
    auto number = [&](std::string_view name, std::optional<std::int64_t> value) {
      if (value) attributes.push_back({std::string(name), "Number", std::to_string(*value)});
    };
    text("bq-job", env->urn());
    text("bq-trace-id", env->trace_id());
    text("bq-message-id", env->id());
    number("bq-schema-version", env->schema_version());
    text("bq-source-lang", env->lang());
    number("bq-created-at", env->created_at());
  }
  for (const auto& [name, value] : headers) {
    if (attributes.size() >= kMaxMessageAttributes) break;
    if (value.empty() || is_contract_attribute(name) || !valid_attribute_name(name)) continue;
    attributes.push_back({name, "String", value});
  }
  return attributes;
}

std::optional<std::int64_t> native_attempts(const std::string* approximate_receive_count) {
  if (approximate_receive_count == nullptr || approximate_receive_count->empty()) return std::nullopt;
  std::int64_t count = 0;
  const char* first = approximate_receive_count->data();
  const char* last = first + approximate_receive_count->size();
  const auto [end, error] = std::from_chars(first, last, count);
  if (error != std::errc() || end != last) return std::nullopt;
  return count > 1 ? count - 1 : 0;
}

bool schema_version_gate_passes(const std::string* value) noexcept {
  if (value == nullptr) return true;
  bool blank = true;
  for (const char c : *value) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\v' && c != '\f' && c != '\r') {
      blank = false;
      break;
    }
  }
  return blank || *value == "1";
}

std::string fifo_safe_id(std::string_view id) {
  bool safe = !id.empty() && id.size() <= 128;
  for (const char c : id) {
    if (!safe) break;
    safe = c >= '!' && c <= '~';
  }
  return safe ? std::string(id) : sqs::sha256_hex(id);
}

std::string fifo_deduplication_id(std::string_view body) {
  auto env = Envelope::decode(body);
  if (!env || env->id().empty()) return sqs::sha256_hex(body);
  if (env->attempts() == 0 && !env->has_dead_letter()) return fifo_safe_id(env->id());
  std::string id(env->id());
  id += ":" + std::to_string(env->attempts());
  if (env->has_dead_letter()) id += ":dead-letter";
  return fifo_safe_id(id);
}

}  // namespace babelqueue::sqs_detail
