// SPDX-License-Identifier: Apache-2.0
// What the librdkafka producer and consumer share: librdkafka's error codes
// as Errc, setting their properties, and the bridge from librdkafka's events
// (log lines to the transport's LogSink, statistics to the reconnect count).
#pragma once

#include <babelqueue/error.hpp>
#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/worker_options.hpp>  // LogSink

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::kafka::detail {

using Clock = std::chrono::steady_clock;

// The wall clock in Unix milliseconds (record timestamps).
std::int64_t epoch_ms();

// A duration as librdkafka's int milliseconds, clamped to [0, INT_MAX].
int to_int_ms(std::chrono::milliseconds value);

Errc errc_of(RdKafka::ErrorCode code);

// The connection settings both clients share, from the transport's options:
// how long a silent connection is kept (socket.timeout.ms, request_timeout),
// how long a new one may take to be set up
// (socket.connection.setup.timeout.ms) and the pauses between reconnects.
// librdkafka's own defaults (60 s and 30 s) would let a half-open connection
// stop a consumer for a minute.
void add_connection_settings(std::map<std::string, std::string>& props, const kafka::Transport::Options& options);

// Sets every property on conf; Errc::invalid_argument naming the first one
// librdkafka refuses (client: "producer" or "consumer", for the message).
Result<void> apply_properties(RdKafka::Conf& conf, const std::map<std::string, std::string>& props,
                              std::string_view client);

// Calls visit(name, value) for each header of a polled record, in order
// (headers may be null: none). Reads them in place through the C API.
template <class Visit>
void for_each_header(rd_kafka_headers_t* headers, Visit&& visit) {
  if (headers == nullptr) return;
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  for (std::size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
       ++i) {
    visit(std::string_view(name), value ? std::string_view(static_cast<const char*>(value), size) : std::string_view());
  }
}

// librdkafka's log lines and client-level errors, to the transport's LogSink;
// and its statistics reports, read for the reconnect count (every event of a
// client comes through its one EventCb).
// Threads: librdkafka's (it calls event_cb from its own threads and from
// polls); the sink must be thread-safe, as kafka::Transport::Options says.
class LogEvents final : public RdKafka::EventCb {
 public:
  explicit LogEvents(const LogSink& sink) : sink_(sink) {}

  void event_cb(RdKafka::Event& event) override;

  // From now until release(), lines are kept instead of passed on, and the
  // client errors are remembered (while open() waits for a broker).
  void hold();
  // Ends hold(): the kept lines are passed on when forward, else dropped.
  void release(bool forward);
  // Since hold(): whether librdkafka found every broker down, and the text
  // of the last broker transport error (empty: none).
  bool all_brokers_down() const;
  std::string last_error() const;

  // Broker connections the clients reporting here lost and made again
  // (kafka::Transport::connection_stats()), from librdkafka's statistics.
  std::uint64_t reconnects() const noexcept { return reconnects_.load(std::memory_order_relaxed); }
  // Reads one statistics report (the JSON of an EVENT_STATS event).
  void count_reconnects(std::string_view stats);

 private:
  void emit(LogLevel level, std::string line);

  const LogSink& sink_;
  mutable std::mutex mutex_;
  bool holding_ = false;
  bool all_down_ = false;
  std::string last_error_;
  std::vector<std::pair<LogLevel, std::string>> held_;
  // Per client and broker connection, the most reconnects a report showed
  // (a connection librdkafka gave up leaves the reports, not the count).
  std::map<std::string, std::uint64_t, std::less<>> reconnects_by_connection_;
  std::atomic<std::uint64_t> reconnects_{0};
};

}  // namespace babelqueue::kafka::detail
