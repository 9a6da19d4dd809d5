// SPDX-License-Identifier: Apache-2.0
#include "url_rules.hpp"

#include <babelqueue/url.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace babelqueue {
namespace {

bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

char to_lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), to_lower);
  return out;
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Unexpected<ErrorInfo> malformed(std::string_view what, std::string_view text) {
  // The raw text may hold a password, so the message quotes only the part at fault.
  return unexpected(Errc::invalid_argument, "malformed URL: " + std::string(what) + " in '" + std::string(text) + "'");
}

// Decodes %XX escapes; in a query, '+' is a space too (HTML form encoding,
// which is what Python's parse_qs reads).
Result<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return malformed("truncated percent escape", text);
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return malformed("invalid percent escape", text);
      out.push_back(static_cast<char>((hi << 4) | lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Characters a component may hold unescaped when redacted() writes it back.
bool is_unreserved(char c) noexcept {
  return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

void append_escaped(std::string& out, std::string_view text, std::string_view also_keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : text) {
    if (is_unreserved(c) || also_keep.find(c) != std::string_view::npos) {
      out.push_back(c);
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[byte >> 4U]);
      out.push_back(kHex[byte & 0x0FU]);
    }
  }
}

Result<std::uint16_t> parse_port(std::string_view digits, std::string_view text) {
  if (digits.empty()) return malformed("empty port", text);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value > 65535U) {
    return malformed("port '" + std::string(digits) + "' is not a number from 0 to 65535", text);
  }
  return static_cast<std::uint16_t>(value);
}

// Splits host[:port] (or [v6]:port) into the Url.
Result<void> parse_host_port(std::string_view host_port, Url& url) {
  if (host_port.find(',') != std::string_view::npos) {
    // Several hosts (Kafka bootstrap servers, Redis sentinels): each transport
    // splits them itself; there is no single port to parse.
    auto host = percent_decode(host_port, false);
    if (!host) return unexpected(host.error());
    url.host = std::move(*host);
    return {};
  }
  std::string_view host = host_port;
  std::string_view port;
  if (!host_port.empty() && host_port.front() == '[') {
    const std::size_t close = host_port.find(']');
    if (close == std::string_view::npos) return malformed("IPv6 address without ']'", host_port);
    host = host_port.substr(1, close - 1);
    const std::string_view rest = host_port.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return malformed("unexpected text after ']'", host_port);
      port = rest.substr(1);
      auto number = parse_port(port, host_port);
      if (!number) return unexpected(number.error());
      url.port = *number;
    }
    if (host.empty()) return malformed("empty IPv6 address", host_port);
    url.host = std::string(host);
    return {};
  }
  const std::size_t colon = host_port.rfind(':');
  if (colon != std::string_view::npos) {
    host = host_port.substr(0, colon);
    auto number = parse_port(host_port.substr(colon + 1), host_port);
    if (!number) return unexpected(number.error());
    url.port = *number;
  }
  auto decoded = percent_decode(host, false);
  if (!decoded) return unexpected(decoded.error());
  url.host = std::move(*decoded);
  return {};
}

Result<void> parse_query(std::string_view query, Url& url) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) continue;  // "a=1&&b=2" and a trailing '&'
    const std::size_t eq = pair.find('=');
    auto key = percent_decode(pair.substr(0, eq), true);
    if (!key) return unexpected(key.error());
    if (key->empty()) return malformed("query parameter without a name", pair);
    std::string value;
    if (eq != std::string_view::npos) {
      auto decoded = percent_decode(pair.substr(eq + 1), true);
      if (!decoded) return unexpected(decoded.error());
      value = std::move(*decoded);
    }
    url.query.insert_or_assign(std::move(*key), std::move(value));  // the last one wins, as in most clients
  }
  return {};
}

// The password part of every "scheme://user:password@" in text: from the
// first ':' after "://" to the last '@' before the next "://" (so a password
// holding '/', '?' or '#' is taken whole, and a URL in a query value is
// looked at by itself). Where there is no '@', there is no user information.
std::vector<std::pair<std::size_t, std::size_t>> userinfo_passwords(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // [begin, end)
  for (std::size_t scheme = text.find("://"); scheme != std::string_view::npos;) {
    const std::size_t start = scheme + 3;
    const std::size_t next = text.find("://", start);
    const std::string_view part =
        text.substr(start, next == std::string_view::npos ? std::string_view::npos : next - start);
    const std::size_t at = part.rfind('@');
    const std::size_t colon = part.find(':');
    if (at != std::string_view::npos && colon != std::string_view::npos && colon < at) {
      spans.emplace_back(start + colon + 1, start + at);
    }
    scheme = next;
  }
  return spans;
}

std::string mask_userinfo(std::string_view text) {
  std::string out(text);
  const auto spans = userinfo_passwords(text);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) out.replace(it->first, it->second - it->first, "***");
  return out;
}

// What redact_secrets hides: each secret as written and decoded, and its
// pieces between the characters that may cut a URL short (a piece of three
// characters or more: shorter ones would mask ordinary words).
void add_secret(std::vector<std::string>& secrets, std::string_view secret) {
  auto add = [&](std::string_view text) {
    std::size_t begin = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
      if (i == text.size() || std::string_view("/?#&=:@ ").find(text[i]) != std::string_view::npos) {
        if (i - begin >= 3) secrets.emplace_back(text.substr(begin, i - begin));
        begin = i + 1;
      }
    }
    if (text.size() >= 3) secrets.emplace_back(text);
  };
  add(secret);
  if (auto decoded = percent_decode(secret, false)) add(*decoded);
  if (auto decoded = percent_decode(secret, true)) add(*decoded);
}

void collect_secrets(std::vector<std::string>& secrets, std::string_view text) {
  for (const auto& [begin, end] : userinfo_passwords(text)) add_secret(secrets, text.substr(begin, end - begin));
  // Secret parameters: every "name=value" after a '?' or '&' whose name says so.
  for (std::size_t i = text.find_first_of("?&"); i != std::string_view::npos; i = text.find_first_of("?&", i + 1)) {
    const std::size_t end = std::min(text.find('&', i + 1), text.size());
    const std::string_view pair = text.substr(i + 1, end - i - 1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = percent_decode(pair.substr(0, eq), true);
    if (url_detail::is_secret_parameter(key ? std::string_view(*key) : pair.substr(0, eq))) {
      add_secret(secrets, pair.substr(eq + 1));
    }
  }
}

}  // namespace

std::string redact_secrets(std::string message, std::string_view url_text) {
  std::vector<std::string> secrets;
  collect_secrets(secrets, url_text);
  // A URL written percent-encoded inside a parameter (endpoint=http%3A%2F%2F...).
  if (auto decoded = percent_decode(url_text, false)) collect_secrets(secrets, *decoded);
  std::sort(secrets.begin(), secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& secret : secrets) {
    for (std::size_t at = message.find(secret); at != std::string::npos; at = message.find(secret, at + 3)) {
      message.replace(at, secret.size(), "***");
    }
  }
  return message;
}

namespace url_detail {

std::string shown_value(std::string_view key, std::string_view value) {
  return is_secret_parameter(key) ? std::string("***") : mask_userinfo(value);
}

bool is_secret_parameter(std::string_view key) {
  const std::string lower = lowercase(key);
  static constexpr std::string_view kSecretWords[] = {"password",   "passwd",    "secret",     "token",
                                                      "credential", "signature", "access_key", "sas_key"};
  return std::any_of(std::begin(kSecretWords), std::end(kSecretWords),
                     [&](std::string_view word) { return lower.find(word) != std::string::npos; });
}

std::optional<bool> parse_flag(std::string_view text) {
  const std::string value = lowercase(text);
  if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
  if (value == "0" || value == "false" || value == "no" || value == "off") return false;
  return std::nullopt;
}

}  // namespace url_detail

std::string Url::param(std::string_view key, std::string_view fallback) const {
  const auto it = query.find(key);
  return it == query.end() ? std::string(fallback) : it->second;
}

Result<bool> Url::flag(std::string_view key, bool fallback) const {
  const auto it = query.find(key);
  if (it == query.end()) return fallback;
  if (const auto value = url_detail::parse_flag(it->second)) return *value;
  return unexpected(Errc::invalid_argument, "URL parameter " + std::string(key) + "='" + it->second +
                                                "' is not a boolean (use true/false, yes/no, on/off or 1/0)");
}

Result<double> Url::number(std::string_view key, double fallback) const {
  const auto it = query.find(key);
  if (it == query.end()) return fallback;
  const std::string& text = it->second;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return unexpected(Errc::invalid_argument,
                      "URL parameter " + std::string(key) + "='" + text + "' is not a finite number");
  }
  return value;
}

std::string Url::redacted() const {
  std::string out = scheme + "://";
  if (!user.empty() || !password.empty()) {
    append_escaped(out, user, "");
    if (!password.empty()) out += ":***";
    out.push_back('@');
  }
  if (host.find(':') != std::string::npos && host.find(',') == std::string::npos) {
    out += '[' + host + ']';  // an IPv6 literal
  } else {
    append_escaped(out, host, ",:");
  }
  if (port) out += ':' + std::to_string(*port);
  if (!path.empty()) {
    out.push_back('/');
    // A path that itself starts with '/' (RabbitMQ's default vhost "/") is
    // written %2F, as it was given: "amqp://host/%2F", not "amqp://host//".
    std::string_view rest = path;
    if (rest.front() == '/') {
      out += "%2F";
      rest.remove_prefix(1);
    }
    append_escaped(out, rest, "/:@");
  }
  char separator = '?';
  for (const auto& [key, value] : query) {
    out.push_back(separator);
    separator = '&';
    append_escaped(out, key, "");
    out.push_back('=');
    if (url_detail::is_secret_parameter(key)) {
      out += "***";
    } else {
      append_escaped(out, mask_userinfo(value), ":/*");
    }
  }
  return out;
}

namespace {
Result<Url> parse_url(std::string_view text);
}  // namespace

Result<Url> Url::parse(std::string_view text) {
  auto url = parse_url(text);
  if (!url) return unexpected(url.error().code(), redact_secrets(url.error().message(), text));
  return url;
}

namespace {

Result<Url> parse_url(std::string_view text) {
  Url url;
  const std::size_t separator = text.find("://");
  if (separator == std::string_view::npos) {
    return unexpected(Errc::invalid_argument,
                      "malformed URL: expected scheme://..., e.g. redis://localhost:6379 or sqlite://queue.db");
  }
  const std::string_view scheme = text.substr(0, separator);
  const bool scheme_ok =
      !scheme.empty() && is_alpha(scheme.front()) && std::all_of(scheme.begin(), scheme.end(), [](char c) {
        return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
      });
  if (!scheme_ok) return malformed("invalid scheme", scheme);
  url.scheme = lowercase(scheme);

  std::string_view rest = text.substr(separator + 3);
  // A fragment means nothing to a broker; drop it, as urllib would.
  rest = rest.substr(0, rest.find('#'));
  std::string_view query;
  if (const std::size_t question = rest.find('?'); question != std::string_view::npos) {
    query = rest.substr(question + 1);
    rest = rest.substr(0, question);
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);

  // The last '@' ends the user information, so an unescaped '@' in a password
  // still parses the way people expect.
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    auto user = percent_decode(userinfo.substr(0, colon), false);
    if (!user) return unexpected(user.error());
    url.user = std::move(*user);
    if (colon != std::string_view::npos) {
      auto password = percent_decode(userinfo.substr(colon + 1), false);
      if (!password) return unexpected(Errc::invalid_argument, "malformed URL: invalid percent escape in the password");
      url.password = std::move(*password);
    }
  }
  if (auto host = parse_host_port(authority, url); !host) return unexpected(host.error());

  auto decoded_path = percent_decode(path, false);
  if (!decoded_path) return unexpected(decoded_path.error());
  url.path = std::move(*decoded_path);

  if (auto parsed = parse_query(query, url); !parsed) return unexpected(parsed.error());
  return url;
}

}  // namespace

}  // namespace babelqueue
