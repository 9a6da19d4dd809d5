// SPDX-License-Identifier: Apache-2.0
#include "url_rules.hpp"

#include <babelqueue/url_options.hpp>

#include <charconv>
#include <system_error>

namespace babelqueue {
namespace {

using std::chrono::milliseconds;

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::string joined(std::span<const std::string_view> names, std::string_view separator) {
  std::string out;
  for (const std::string_view name : names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

}  // namespace

UrlOptionReader::UrlOptionReader(const Url& url) : url_(url), prefix_(url.scheme + ":// URL: ") {}

std::optional<UrlOptionReader::Given> UrlOptionReader::take(std::string_view name, Aliases aliases) {
  declared_.emplace_back(name);
  std::optional<Given> found;
  auto look = [&](std::string_view key) {
    const auto it = url_.query.find(key);
    if (it == url_.query.end()) return;
    read_.emplace(key);
    if (it->second.empty()) return;  // ?key= is the default, as Python's parse_qs reads it
    if (found) {
      fail(prefix_ + "parameters '" + std::string(found->key) + "' and '" + it->first +
           "' are one option; give one of them");
      return;
    }
    found = Given{it->first, it->second};
  };
  look(name);
  for (const std::string_view alias : aliases) look(alias);
  if (found) given_.emplace(name);
  return found;
}

void UrlOptionReader::fail(std::string message) {
  if (!error_) error_.emplace(Errc::invalid_argument, std::move(message));
}

void UrlOptionReader::malformed(const Given& given, std::string_view expected) {
  const std::string shown = url_detail::shown_value(given.key, given.value);
  fail(prefix_ + "parameter '" + std::string(given.key) + "' is '" + shown + "', expected " + std::string(expected));
}

void UrlOptionReader::text(std::string_view name, std::string& into, Aliases aliases) {
  if (const auto given = take(name, aliases)) into = std::string(given->value);
}

void UrlOptionReader::flag(std::string_view name, bool& into, Aliases aliases) {
  const auto given = take(name, aliases);
  if (!given) return;
  if (const auto value = url_detail::parse_flag(given->value)) {
    into = *value;
  } else {
    malformed(*given, "true or false (also yes/no, on/off, 1/0)");
  }
}

std::optional<std::int64_t> UrlOptionReader::read_integer(std::string_view name, std::int64_t min, std::int64_t max,
                                                          Aliases aliases) {
  const auto given = take(name, aliases);
  if (!given) return std::nullopt;
  std::int64_t value = 0;
  const std::string_view text = given->value;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    malformed(*given, "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    return std::nullopt;
  }
  return value;
}

std::optional<milliseconds> UrlOptionReader::read_duration(std::string_view name, const DurationRule& rule,
                                                           Aliases aliases) {
  const auto given = take(name, aliases);
  if (!given) return std::nullopt;
  auto value = parse_duration(given->value, rule);
  if (!value) {
    malformed(*given, describe(rule));
    return std::nullopt;
  }
  return *value;
}

void UrlOptionReader::durations(std::string_view name, std::vector<milliseconds>& into, const DurationRule& rule,
                                Aliases aliases) {
  const auto given = take(name, aliases);
  if (!given) return;
  std::vector<milliseconds> values;
  std::string_view rest = given->value;
  for (;;) {
    const std::size_t comma = rest.find(',');
    auto value = parse_duration(rest.substr(0, comma), rule);
    if (!value) {
      malformed(*given, "a comma-separated list, each item " + describe(rule));
      return;
    }
    values.push_back(*value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  into = std::move(values);
}

std::optional<std::size_t> UrlOptionReader::read_choice(std::string_view name, std::span<const std::string_view> names,
                                                        Aliases aliases) {
  const auto given = take(name, aliases);
  if (!given) return std::nullopt;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == given->value) return i;
  }
  malformed(*given, "one of " + joined(names, ", "));
  return std::nullopt;
}

void UrlOptionReader::prefixed(std::string_view prefix, std::map<std::string, std::string>& into) {
  declared_.push_back(std::string(prefix) + "*");
  for (const auto& [key, value] : url_.query) {
    if (key.size() <= prefix.size() || !starts_with(key, prefix)) continue;
    read_.insert(key);
    if (!value.empty()) into[key.substr(prefix.size())] = value;
  }
}

void UrlOptionReader::tls(TlsOptions& into, std::string_view how_to_enable) {
  // The names of tls_options.hpp; the aliases are the spellings transports
  // used before there was one vocabulary (RabbitMQ's, SQS's ca_file).
  struct Path {
    std::string_view name;
    std::string TlsOptions::*field;
    Aliases aliases;
  };
  const Path paths[] = {{"tls_ca", &TlsOptions::ca_file, {"cacert", "ca_file"}},
                        {"tls_cert", &TlsOptions::cert_file, {"cert"}},
                        {"tls_key", &TlsOptions::key_file, {"key"}},
                        {"tls_server_name", &TlsOptions::server_name, {}}};
  for (const Path& path : paths) {
    const auto given = take(path.name, path.aliases);
    if (!given) continue;
    if (!into.enabled) {
      fail(prefix_ + "parameter '" + std::string(given->key) + "' needs TLS (" + std::string(how_to_enable) + ")");
      continue;
    }
    into.*path.field = std::string(given->value);
  }
  // Verification on or off means something only with TLS, and turning it
  // on cannot mislead: accepted either way.
  flag("tls_verify", into.verify, {"verify"});
}

bool UrlOptionReader::given(std::string_view name) const { return given_.contains(name); }

Result<void> UrlOptionReader::finish() const {
  for (const auto& [key, value] : url_.query) {
    if (read_.contains(key)) continue;
    std::string known;
    for (const std::string& name : declared_) known += (known.empty() ? "" : ", ") + name;
    return unexpected(Errc::invalid_argument, prefix_ + "unknown parameter '" + key + "' (known: " + known + ")");
  }
  if (error_) return unexpected(*error_);
  return {};
}

}  // namespace babelqueue
