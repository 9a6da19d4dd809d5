// SPDX-License-Identifier: Apache-2.0
// kafka::Transport::options_from_url: the kafka:// URL (see babelqueue/kafka/transport.hpp).
#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/url_options.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace babelqueue {
namespace {

using std::chrono::milliseconds;

bool ends_with_ssl(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; });
  return text.size() >= 3 && text.compare(text.size() - 3, 3, "SSL") == 0;
}

// The shared TLS names as librdkafka properties. A property given as
// rdkafka.NAME was set explicitly and wins.
Result<void> apply_tls(const Url& url, const TlsOptions& tls, std::map<std::string, std::string>& properties) {
  if (!tls.enabled) return {};
  if (!tls.server_name.empty()) {
    return unexpected(Errc::invalid_argument,
                      "kafka:// URL: parameter 'tls_server_name' is not available: librdkafka checks each "
                      "broker's certificate against the host name that broker advertises");
  }
  if (auto checked = tls.check(); !checked) return checked;
  properties.try_emplace("security.protocol", url.user.empty() ? "SSL" : "SASL_SSL");
  if (!tls.ca_file.empty()) properties.try_emplace("ssl.ca.location", tls.ca_file);
  if (!tls.cert_file.empty()) properties.try_emplace("ssl.certificate.location", tls.cert_file);
  if (!tls.key_file.empty()) properties.try_emplace("ssl.key.location", tls.key_file);
  if (!tls.verify) {
    properties.try_emplace("enable.ssl.certificate.verification", "false");
    properties.try_emplace("ssl.endpoint.identification.algorithm", "none");
  }
  return {};
}

}  // namespace

Result<kafka::Transport::Options> kafka::Transport::options_from_url(const Url& url) {
  if (url.scheme != "kafka") return unexpected(Errc::invalid_argument, "not a kafka:// URL: " + url.redacted());
  if (url.host.empty()) {
    return unexpected(Errc::invalid_argument, "kafka:// needs host:port[,host:port]: " + url.redacted());
  }
  if (!url.path.empty()) {
    return unexpected(Errc::invalid_argument,
                      "kafka:// takes no path (the topic is the queue name): " + url.redacted());
  }
  Options options;
  options.bootstrap_servers = url.host;
  if (url.port) options.bootstrap_servers += ":" + std::to_string(*url.port);
  if (!url.user.empty()) {
    options.client_properties["sasl.username"] = url.user;
    options.client_properties["sasl.password"] = url.password;
  }
  constexpr milliseconds kMin(1);
  constexpr std::int64_t kMaxInt = std::numeric_limits<std::int32_t>::max();
  UrlOptionReader read(url);
  read.text("group", options.group);
  read.integer("partitions", options.partitions, 1, kMaxInt);
  read.integer("replication_factor", options.replication_factor, 1, std::numeric_limits<std::int16_t>::max());
  read.flag("create_topics", options.create_topics);
  read.durations("retry_tiers", options.retry_tiers, {.min = kMin});
  read.text("retry_topic", options.retry_topic_pattern);
  read.duration("session_timeout", options.session_timeout, {.min = kMin, .max = std::chrono::hours(1)});
  read.duration("commit_interval", options.commit_interval, {.min = kMin, .max = std::chrono::hours(1)});
  // librdkafka's message.timeout.ms is a 32-bit number of milliseconds.
  read.duration("publish_timeout", options.publish_timeout, {.min = kMin, .max = std::chrono::hours(24)});
  read.duration("connect_timeout", options.connect_timeout, {.max = std::chrono::hours(1)});
  // librdkafka's socket.timeout.ms: 10 ms to 5 min.
  read.duration("request_timeout", options.request_timeout, {.min = milliseconds(10), .max = std::chrono::minutes(5)});
  read.duration("reconnect_min", options.reconnect_min, {.min = kMin, .max = std::chrono::hours(1)});
  read.duration("reconnect_max", options.reconnect_max, {.min = kMin, .max = std::chrono::hours(1)});
  read.prefixed("rdkafka.", options.client_properties);
  read.prefixed("producer.", options.producer_properties);
  read.prefixed("consumer.", options.consumer_properties);
  // No kafkas:// scheme: TLS is tls=true, or a security.protocol of SSL or
  // SASL_SSL given as an rdkafka property.
  TlsOptions tls;
  read.flag("tls", tls.enabled);
  if (const auto protocol = options.client_properties.find("security.protocol");
      protocol != options.client_properties.end() && ends_with_ssl(protocol->second)) {
    tls.enabled = true;
  }
  read.tls(tls, "tls=true");
  if (auto done = read.finish(); !done) return unexpected(done.error());
  if (auto applied = apply_tls(url, tls, options.client_properties); !applied) return unexpected(applied.error());
  return options;
}

}  // namespace babelqueue
