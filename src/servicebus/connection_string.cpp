// SPDX-License-Identifier: Apache-2.0
#include "connection_string.hpp"

#include <babelqueue/error.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

namespace babelqueue::servicebus {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

Unexpected<ErrorInfo> bad(const std::string& why) {
  return unexpected(Errc::invalid_argument, "the Service Bus connection string " + why);
}

}  // namespace

Result<ConnectionString> ConnectionString::parse(std::string_view text) {
  text = trim(text);
  while (!text.empty() && text.back() == ';') text.remove_suffix(1);
  if (text.empty()) return bad("is empty");
  ConnectionString out;
  std::string endpoint;
  std::optional<std::string> emulator;
  std::size_t index = 0;
  while (!text.empty()) {
    ++index;
    const auto semicolon = text.find(';');
    const std::string_view part = text.substr(0, semicolon);
    text = semicolon == std::string_view::npos ? std::string_view{} : text.substr(semicolon + 1);
    const auto eq = part.find('=');
    if (eq == std::string_view::npos) {
      return bad("is malformed: part " + std::to_string(index) +
                 " has no '=' (expected Key=Value pairs separated by ';')");
    }
    const std::string key = lower(trim(part.substr(0, eq)));
    const std::string value(part.substr(eq + 1));
    if (key == "endpoint" || key == "hostname") {
      endpoint = value;
    } else if (key == "sharedaccesskeyname") {
      out.key_name = value;
    } else if (key == "sharedaccesskey") {
      out.key = value;
    } else if (key == "entitypath") {
      out.entity_path = value;
    } else if (key == "sharedaccesssignature") {
      out.shared_access_signature = value;
    } else if (key == "usedevelopmentemulator") {
      emulator = lower(trim(value));
    }
    // Other keys (TransportType, ...) are ignored, as Microsoft's clients do.
  }
  if (emulator) {
    if (*emulator != "true" && *emulator != "false") {
      return bad("has UseDevelopmentEmulator='" + *emulator + "'; expected true or false");
    }
    out.use_development_emulator = *emulator == "true";
  }
  if (endpoint.empty()) return bad("has no Endpoint (Endpoint=sb://NAMESPACE/)");
  const auto scheme = endpoint.find("://");
  if (scheme == std::string::npos) return bad("has an Endpoint without a scheme (expected sb://NAMESPACE/)");
  std::string_view authority = std::string_view(endpoint).substr(scheme + 3);
  authority = authority.substr(0, authority.find('/'));
  if (authority.empty()) return bad("has an Endpoint without a host (expected sb://NAMESPACE/)");
  out.authority = std::string(authority);
  const auto colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    const std::string_view digits = authority.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || value == 0 || value > 65535) {
      return bad("has an Endpoint whose port is not a number from 1 to 65535");
    }
    out.port = static_cast<std::uint16_t>(value);
    out.host = std::string(authority.substr(0, colon));
  } else {
    out.host = std::string(authority);
  }
  if (out.host.empty()) return bad("has an Endpoint without a host (expected sb://NAMESPACE/)");
  if (out.key_name.empty() != out.key.empty()) {
    return bad("must have both SharedAccessKeyName and SharedAccessKey");
  }
  if (!out.key.empty() && !out.shared_access_signature.empty()) {
    return bad("must have only one of SharedAccessKey and SharedAccessSignature");
  }
  if (out.key.empty() && out.shared_access_signature.empty()) {
    return bad("must have SharedAccessKeyName and SharedAccessKey, or SharedAccessSignature");
  }
  return out;
}

}  // namespace babelqueue::servicebus
