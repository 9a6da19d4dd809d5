// SPDX-License-Identifier: Apache-2.0
#include "client_support.hpp"

#include <babelqueue/json.hpp>

#include <algorithm>
#include <limits>

namespace babelqueue::kafka::detail {
namespace {

LogLevel level_of(RdKafka::Event::Severity severity) {
  switch (severity) {
    case RdKafka::Event::EVENT_SEVERITY_EMERG:
    case RdKafka::Event::EVENT_SEVERITY_ALERT:
    case RdKafka::Event::EVENT_SEVERITY_CRITICAL:
    case RdKafka::Event::EVENT_SEVERITY_ERROR: return LogLevel::error;
    case RdKafka::Event::EVENT_SEVERITY_WARNING: return LogLevel::warning;
    case RdKafka::Event::EVENT_SEVERITY_NOTICE:
    case RdKafka::Event::EVENT_SEVERITY_INFO: return LogLevel::info;
    default: return LogLevel::debug;
  }
}

}  // namespace

std::int64_t epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int to_int_ms(std::chrono::milliseconds value) {
  return static_cast<int>(std::clamp<std::int64_t>(value.count(), 0, std::numeric_limits<int>::max()));
}

Errc errc_of(RdKafka::ErrorCode code) {
  switch (code) {
    case RdKafka::ERR__MSG_TIMED_OUT:
    case RdKafka::ERR__TIMED_OUT:
    case RdKafka::ERR_REQUEST_TIMED_OUT: return Errc::timeout;
    case RdKafka::ERR__UNKNOWN_TOPIC:
    case RdKafka::ERR_UNKNOWN_TOPIC_OR_PART: return Errc::not_found;
    case RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED:
    case RdKafka::ERR_GROUP_AUTHORIZATION_FAILED:
    case RdKafka::ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RdKafka::ERR__AUTHENTICATION:
    case RdKafka::ERR_SASL_AUTHENTICATION_FAILED: return Errc::auth;
    case RdKafka::ERR_MSG_SIZE_TOO_LARGE:
    case RdKafka::ERR_RECORD_LIST_TOO_LARGE: return Errc::invalid_argument;
    case RdKafka::ERR__TRANSPORT:
    case RdKafka::ERR__ALL_BROKERS_DOWN:
    case RdKafka::ERR__RESOLVE: return Errc::connection;
    case RdKafka::ERR__PURGE_QUEUE:
    case RdKafka::ERR__PURGE_INFLIGHT:
    case RdKafka::ERR__DESTROY: return Errc::closed;
    default: return Errc::broker;
  }
}

void add_connection_settings(std::map<std::string, std::string>& props, const kafka::Transport::Options& options) {
  const std::chrono::milliseconds request_timeout = options.request_timeout;
  const std::chrono::milliseconds connect_timeout = options.connect_timeout;
  // librdkafka takes socket.timeout.ms from 10 ms to 5 min (the URL reader
  // keeps request_timeout there) and a setup time of at least 1 s;
  // connect_timeout 0 means "open() contacts nobody", not "no setup time".
  constexpr std::chrono::milliseconds kLeastSetup(1000);
  const auto setup = connect_timeout.count() > 0 ? std::min(request_timeout, connect_timeout) : request_timeout;
  props["socket.timeout.ms"] = std::to_string(to_int_ms(request_timeout));
  props["socket.connection.setup.timeout.ms"] = std::to_string(to_int_ms(std::max(kLeastSetup, setup)));
  props["reconnect.backoff.ms"] = std::to_string(to_int_ms(options.reconnect_min));
  props["reconnect.backoff.max.ms"] = std::to_string(to_int_ms(std::max(options.reconnect_min, options.reconnect_max)));
}

Result<void> apply_properties(RdKafka::Conf& conf, const std::map<std::string, std::string>& props,
                              std::string_view client) {
  for (const auto& [name, value] : props) {
    std::string error;
    if (conf.set(name, value, error) != RdKafka::Conf::CONF_OK) {
      return unexpected(Errc::invalid_argument,
                        "librdkafka refused the " + std::string(client) + " property " + name + ": " + error);
    }
  }
  return {};
}

void LogEvents::event_cb(RdKafka::Event& event) {
  switch (event.type()) {
    case RdKafka::Event::EVENT_LOG:
      emit(level_of(event.severity()), "kafka " + event.fac() + ": " + event.str());
      break;
    case RdKafka::Event::EVENT_ERROR: {
      // Client errors (all brokers down, authentication) are retried by
      // librdkafka itself; fatal ones also fail the next call.
      {
        const std::lock_guard lock(mutex_);
        if (event.err() == RdKafka::ERR__ALL_BROKERS_DOWN) all_down_ = true;
        if (event.err() != RdKafka::ERR__ALL_BROKERS_DOWN) last_error_ = event.str();
      }
      emit(event.fatal() ? LogLevel::error : LogLevel::warning,
           "kafka: " + RdKafka::err2str(event.err()) + ": " + event.str());
      break;
    }
    case RdKafka::Event::EVENT_STATS: count_reconnects(event.str()); break;
    default: break;
  }
}

void LogEvents::count_reconnects(std::string_view stats) {
  auto report = parse_json(stats);
  if (!report || !report->is_object()) return;
  const Value* client = report->find("name");
  const Value* brokers = report->find("brokers");
  if (client == nullptr || !client->is_string() || brokers == nullptr || !brokers->is_object()) return;
  const std::lock_guard lock(mutex_);
  for (const auto& [name, broker] : brokers->as_object()) {
    if (!broker.is_object()) continue;
    const Value* source = broker.find("source");
    const Value* state = broker.find("state");
    const Value* lost = broker.find("disconnects");
    if (source == nullptr || !source->is_string() || state == nullptr || !state->is_string() || lost == nullptr ||
        !lost->is_integer()) {
      continue;
    }
    // The coordinator's and the internal handles borrow other connections.
    if (source->as_string() == "logical" || source->as_string() == "internal") continue;
    // Every loss of a connection that is up again was a reconnect; the last
    // loss of one still down is not, yet.
    const std::uint64_t losses = lost->as_uint64();
    const std::uint64_t made_again = state->as_string() == "UP" || losses == 0 ? losses : losses - 1;
    std::uint64_t& seen = reconnects_by_connection_[client->as_string() + " " + name];
    seen = std::max(seen, made_again);
  }
  std::uint64_t total = 0;
  for (const auto& [connection, count] : reconnects_by_connection_) total += count;
  reconnects_.store(total, std::memory_order_relaxed);
}

void LogEvents::emit(LogLevel level, std::string line) {
  {
    const std::lock_guard lock(mutex_);
    if (holding_) {
      if (held_.size() < 100) held_.emplace_back(level, std::move(line));
      return;
    }
  }
  if (sink_) sink_(level, line);
}

void LogEvents::hold() {
  const std::lock_guard lock(mutex_);
  holding_ = true;
  all_down_ = false;
  last_error_.clear();
  held_.clear();
}

void LogEvents::release(bool forward) {
  std::vector<std::pair<LogLevel, std::string>> held;
  {
    const std::lock_guard lock(mutex_);
    holding_ = false;
    held.swap(held_);
  }
  if (!forward || !sink_) return;
  for (const auto& [level, line] : held) sink_(level, line);
}

bool LogEvents::all_brokers_down() const {
  const std::lock_guard lock(mutex_);
  return all_down_;
}

std::string LogEvents::last_error() const {
  const std::lock_guard lock(mutex_);
  return last_error_;
}

}  // namespace babelqueue::kafka::detail
