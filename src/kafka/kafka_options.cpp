// KafkaTransport::options_from_url: the kafka:// URL (see kafka_transport.hpp).
#include <babelqueue/kafka_transport.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace babelqueue {
namespace {

using std::chrono::milliseconds;

// "500ms", "5s", "5m", "1h"; a bare number is seconds.
Result<milliseconds> parse_duration(std::string_view key, std::string_view text) {
  double scale = 1000.0;
  std::string_view number = text;
  auto strip = [&](std::string_view suffix, double factor) {
    if (number.size() > suffix.size() && number.substr(number.size() - suffix.size()) == suffix) {
      number.remove_suffix(suffix.size());
      scale = factor;
      return true;
    }
    return false;
  };
  if (!strip("ms", 1.0) && !strip("s", 1000.0) && !strip("m", 60000.0)) strip("h", 3600000.0);
  double value = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || error != std::errc() || end != number.data() + number.size() || !std::isfinite(value) ||
      value <= 0) {
    return unexpected(Errc::invalid_argument, "kafka:// parameter " + std::string(key) + ": \"" + std::string(text) +
                                                  "\" is not a positive duration (500ms, 5s, 5m, 1h)");
  }
  return milliseconds(static_cast<std::int64_t>(std::llround(value * scale)));
}

Result<int> parse_count(std::string_view key, std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 1) {
    return unexpected(Errc::invalid_argument, "kafka:// parameter " + std::string(key) +
                                                  " must be a positive integer, not \"" + std::string(text) + "\"");
  }
  return value;
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

}  // namespace

Result<KafkaTransport::Options> KafkaTransport::options_from_url(const Url& url) {
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
  for (const auto& [key, value] : url.query) {
    if (key == "group") {
      options.group = value;
    } else if (key == "partitions") {
      auto count = parse_count(key, value);
      if (!count) return unexpected(count.error());
      options.partitions = *count;
    } else if (key == "replication_factor") {
      auto count = parse_count(key, value);
      if (!count) return unexpected(count.error());
      options.replication_factor = *count;
    } else if (key == "create_topics") {
      auto flag = url.flag(key, true);
      if (!flag) return unexpected(flag.error());
      options.create_topics = *flag;
    } else if (key == "retry_tiers") {
      std::string_view rest = value;
      while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        auto tier = parse_duration(key, rest.substr(0, comma));
        if (!tier) return unexpected(tier.error());
        options.retry_tiers.push_back(*tier);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else if (key == "retry_topic") {
      options.retry_topic_pattern = value;
    } else if (key == "session_timeout" || key == "commit_interval" || key == "publish_timeout") {
      auto duration = parse_duration(key, value);
      if (!duration) return unexpected(duration.error());
      (key == "session_timeout"   ? options.session_timeout
       : key == "commit_interval" ? options.commit_interval
                                  : options.publish_timeout) = *duration;
    } else if (starts_with(key, "rdkafka.") && key.size() > 8) {
      options.client_properties[key.substr(8)] = value;
    } else if (starts_with(key, "producer.") && key.size() > 9) {
      options.producer_properties[key.substr(9)] = value;
    } else if (starts_with(key, "consumer.") && key.size() > 9) {
      options.consumer_properties[key.substr(9)] = value;
    } else {
      return unexpected(Errc::invalid_argument,
                        "unknown kafka:// parameter \"" + key +
                            "\" (known: group, partitions, replication_factor, create_topics, retry_tiers, "
                            "retry_topic, session_timeout, commit_interval, publish_timeout, rdkafka.*, "
                            "producer.*, consumer.*)");
    }
  }
  return options;
}

}  // namespace babelqueue
