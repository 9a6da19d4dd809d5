// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/otel/environment.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::otel {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// W3C Baggage-style values: %XX escapes decoded, anything else kept.
std::string percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_digit(s[i + 1]);
      const int lo = hex_digit(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// "k1=v1,k2=v2": the pairs, in order; an entry without '=' or with an empty
// key is skipped and reported.
std::vector<std::pair<std::string, std::string>> key_values(std::string_view text, const char* variable,
                                                            const LogSink& log) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string_view key = eq == std::string_view::npos ? std::string_view() : trim(item.substr(0, eq));
    if (key.empty()) {
      if (log) log(LogLevel::warning, std::string(variable) + ": an entry is not key=value; it is left out");
      continue;
    }
    out.emplace_back(percent_decoded(key), percent_decoded(trim(item.substr(eq + 1))));
  }
  return out;
}

template <class Int>
void read_number(const EnvironmentReader& read, const char* name, Int& target, const LogSink& log) {
  auto text = read(name);
  if (!text || trim(*text).empty()) return;
  const std::string_view t = trim(*text);
  long long value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || end != t.data() + t.size() || value <= 0) {
    if (log) log(LogLevel::warning, std::string(name) + " is not a positive whole number; its default is used");
    return;
  }
  target = static_cast<Int>(value);
}

void read_millis(const EnvironmentReader& read, const char* name, std::chrono::milliseconds& target,
                 const LogSink& log) {
  long long ms = target.count();
  read_number(read, name, ms, log);
  target = std::chrono::milliseconds(ms);
}

// The signal-specific variable if set, else the general one.
std::optional<std::string> either(const EnvironmentReader& read, const char* specific, const char* general) {
  if (auto v = read(specific); v && !trim(*v).empty()) return v;
  if (auto v = read(general); v && !trim(*v).empty()) return v;
  return std::nullopt;
}

}  // namespace

EnvironmentReader process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once at start-up
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvironmentOptions options_from_environment(const LogSink& log, const EnvironmentReader& read) {
  EnvironmentOptions o;
  const auto traces_endpoint = read("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const auto endpoint = read("OTEL_EXPORTER_OTLP_ENDPOINT");
  const std::string exporter = lower(trim(read("OTEL_TRACES_EXPORTER").value_or("")));
  o.enabled = (traces_endpoint && !trim(*traces_endpoint).empty()) || (endpoint && !trim(*endpoint).empty()) ||
              exporter == "otlp";
  if (!exporter.empty() && exporter != "otlp" && exporter != "none") {
    if (log)
      log(LogLevel::warning,
          "OTEL_TRACES_EXPORTER=" + exporter + " is not supported (otlp or none); no spans are exported");
    o.enabled = false;
  }
  if (exporter == "none" || lower(trim(read("OTEL_SDK_DISABLED").value_or(""))) == "true") o.enabled = false;

  if (traces_endpoint && !trim(*traces_endpoint).empty()) {
    o.exporter.endpoint = std::string(trim(*traces_endpoint));
  } else if (endpoint && !trim(*endpoint).empty()) {
    std::string base(trim(*endpoint));
    while (!base.empty() && base.back() == '/') base.pop_back();
    o.exporter.endpoint = base + "/v1/traces";
  }
  if (auto protocol = either(read, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
      protocol && trim(*protocol) != "http/protobuf" && log) {
    log(LogLevel::warning, "OTLP protocol " + std::string(trim(*protocol)) +
                               " is not supported; spans are sent as http/protobuf to " + o.exporter.endpoint);
  }
  if (auto headers = read("OTEL_EXPORTER_OTLP_HEADERS")) {
    o.exporter.headers = key_values(*headers, "OTEL_EXPORTER_OTLP_HEADERS", log);
  }
  if (auto headers = read("OTEL_EXPORTER_OTLP_TRACES_HEADERS")) {
    for (auto& [key, value] : key_values(*headers, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", log)) {
      auto same = std::find_if(o.exporter.headers.begin(), o.exporter.headers.end(),
                               [&](const auto& h) { return lower(h.first) == lower(key); });
      if (same != o.exporter.headers.end()) {
        same->second = value;
      } else {
        o.exporter.headers.emplace_back(key, value);
      }
    }
  }
  if (auto ca = either(read, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE")) {
    o.exporter.ca_file = std::string(trim(*ca));
  }
  if (read("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")) {
    read_millis(read, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", o.exporter.timeout, log);
  } else {
    read_millis(read, "OTEL_EXPORTER_OTLP_TIMEOUT", o.exporter.timeout, log);
  }
  read_millis(read, "OTEL_BSP_SCHEDULE_DELAY", o.exporter.schedule_delay, log);
  read_number(read, "OTEL_BSP_MAX_QUEUE_SIZE", o.exporter.max_queue_size, log);
  read_number(read, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", o.exporter.max_export_batch_size, log);
  if (o.exporter.max_export_batch_size > o.exporter.max_queue_size) {
    o.exporter.max_export_batch_size = o.exporter.max_queue_size;  // the specification's rule
  }

  std::string service;
  if (auto attributes = read("OTEL_RESOURCE_ATTRIBUTES")) {
    for (auto& [key, value] : key_values(*attributes, "OTEL_RESOURCE_ATTRIBUTES", log)) {
      if (key == "service.name") {
        service = value;
      } else {
        o.tracer.resource.push_back({key, value});
      }
    }
  }
  if (auto name = read("OTEL_SERVICE_NAME"); name && !trim(*name).empty()) service = std::string(trim(*name));
  if (!service.empty()) o.tracer.service_name = service;
  o.exporter.service_name = o.tracer.service_name;
  o.exporter.resource = o.tracer.resource;

  if (auto name = read("OTEL_TRACES_SAMPLER"); name && !trim(*name).empty()) {
    const auto arg = read("OTEL_TRACES_SAMPLER_ARG").value_or("");
    if (auto sampler = Sampler::from_name(lower(trim(*name)), trim(arg))) {
      o.tracer.sampler = *sampler;
    } else if (log) {
      log(LogLevel::warning, "OTEL_TRACES_SAMPLER=" + std::string(trim(*name)) + " (argument '" + arg +
                                 "') is not a sampler this SDK knows; parentbased_always_on is used");
    }
  }
  return o;
}

std::optional<EnvironmentTracing> tracing_from_environment(const LogSink& log, const EnvironmentReader& read) {
  EnvironmentOptions o = options_from_environment(log, read);
  if (!o.enabled) return std::nullopt;
  o.exporter.log = log;
  EnvironmentTracing t;
  t.exporter = std::make_shared<OtlpExporter>(std::move(o.exporter));
  o.tracer.sink = t.exporter;
  t.tracer = std::make_shared<Tracer>(std::move(o.tracer));
  return t;
}

}  // namespace babelqueue::otel
