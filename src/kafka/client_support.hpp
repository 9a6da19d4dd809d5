// SPDX-License-Identifier: Apache-2.0
// What the librdkafka producer and consumer share: librdkafka's error codes
// as Errc, setting their properties, and the bridge from librdkafka's log to
// the transport's LogSink.
#pragma once

#include <babelqueue/error.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/worker_options.hpp>  // LogSink

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace babelqueue::kafka::detail {

using Clock = std::chrono::steady_clock;

// The wall clock in Unix milliseconds (record timestamps).
std::int64_t epoch_ms();

// A duration as librdkafka's int milliseconds, clamped to [0, INT_MAX].
int to_int_ms(std::chrono::milliseconds value);

Errc errc_of(RdKafka::ErrorCode code);

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

// librdkafka's log lines and client-level errors, to the transport's LogSink.
// Threads: librdkafka's (it calls event_cb from its own threads and from
// polls); the sink must be thread-safe, as kafka::Transport::Options says.
class LogEvents final : public RdKafka::EventCb {
 public:
  explicit LogEvents(const LogSink& sink) : sink_(sink) {}

  void event_cb(RdKafka::Event& event) override;

 private:
  const LogSink& sink_;
};

}  // namespace babelqueue::kafka::detail
