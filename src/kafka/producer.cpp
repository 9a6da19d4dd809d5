// SPDX-License-Identifier: Apache-2.0
#include "producer.hpp"

#include <babelqueue/detail/message_size.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace babelqueue::kafka::detail {
namespace {

// How long one metadata request of reach() may wait: the check for "every
// broker is down" runs between them.
constexpr int kReachSliceMs = 200;

// The bytes of a record librdkafka counts against message.max.bytes, less
// its framing: value, key, header names and values.
std::size_t record_size(const OutgoingRecord& out) {
  std::size_t size = out.value.size() + (out.has_key ? out.key.size() : 0);
  const char* name = nullptr;
  const void* value = nullptr;
  std::size_t value_size = 0;
  for (std::size_t i = 0;
       rd_kafka_header_get_all(out.headers.get(), i, &name, &value, &value_size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
    size += std::strlen(name) + value_size;
  }
  return size;
}

}  // namespace

void add_header(rd_kafka_headers_t* headers, std::string_view name, std::string_view value) {
  rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()), value.data(),
                      static_cast<ssize_t>(value.size()));
}

void DeliveryGroup::report(RdKafka::Message& message) {
  std::lock_guard lock(mutex);
  if (message.err() != RdKafka::ERR_NO_ERROR && !first_error) {
    const std::string native = rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(message.err()));
    if (message.err() == RdKafka::ERR_MSG_SIZE_TOO_LARGE) {
      // The producer let it through, the broker did not: its message.max.bytes
      // (or the topic's max.message.bytes) is lower than the producer's.
      first_error.emplace(
          ErrorInfo(Errc::invalid_argument, "the broker refused the record on topic " + message.topic_name() + " (" +
                                                std::to_string(message.len()) +
                                                " bytes of value) as too large: its message.max.bytes or the topic's "
                                                "max.message.bytes is lower than the producer's message.max.bytes")
              .with_native(native, message.errstr()));
      --remaining;
      return;
    }
    // librdkafka knows whether the record may have reached the broker (sent,
    // then a timeout or a lost connection): then the outcome is unknown, not
    // a failure that a re-send repairs without a duplicate.
    if (message.status() == RdKafka::Message::MSG_STATUS_POSSIBLY_PERSISTED) {
      first_error.emplace(ErrorInfo(Errc::outcome_unknown, "no confirmation for the record on topic " +
                                                               message.topic_name() + ": " + message.errstr() +
                                                               " (outcome unknown: the broker may have stored it)")
                              .with_native(native, message.errstr()));
    } else {
      first_error.emplace(ErrorInfo(errc_of(message.err()), "the broker did not confirm the record on topic " +
                                                                message.topic_name() + ": " + message.errstr())
                              .with_native(native, message.errstr()));
    }
  }
  --remaining;
}

Result<void> DeliveryGroup::wait(RdKafka::Producer& producer) {
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (remaining == 0) break;
    }
    // A flush rather than a poll: both serve the delivery reports, but a
    // flush also has librdkafka send what it holds at once instead of
    // after linger.ms, and the group's records are all handed over by now.
    // One millisecond a slice, so a flush that another publisher keeps
    // busy does not hold this one up once its own reports are in.
    producer.flush(1);
  }
  std::lock_guard lock(mutex);
  if (first_error) return unexpected(*first_error);
  return {};
}

void DeliveryReports::dr_cb(RdKafka::Message& message) {
  // A Publication waits until every record it produced was reported (purged
  // records are reported too), so the group outlives its reports.
  auto* group = static_cast<DeliveryGroup*>(message.msg_opaque());
  if (group != nullptr) group->report(message);
}

Result<void> Producer::start() {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::map<std::string, std::string> props = {
      {"bootstrap.servers", options_.bootstrap_servers},
      {"acks", "all"},
      {"enable.idempotence", "true"},
      {"linger.ms", "1"},
      {"message.timeout.ms", std::to_string(to_int_ms(options_.publish_timeout))},
      // Topics are created by TopicAdmin with the configured partitions,
      // never by the broker's defaults as a side effect of a metadata look-up.
      {"allow.auto.create.topics", "false"},
  };
  add_connection_settings(props, options_);
  for (const auto& [k, v] : options_.client_properties) props[k] = v;
  for (const auto& [k, v] : options_.producer_properties) props[k] = v;
  if (auto set = apply_properties(*conf, props, "producer"); !set) return set;
  std::string error;
  if (conf->set("dr_cb", &delivery_reports_, error) != RdKafka::Conf::CONF_OK ||
      conf->set("event_cb", &log_, error) != RdKafka::Conf::CONF_OK) {
    return unexpected(Errc::internal, "librdkafka refused the producer's callbacks: " + error);
  }
  client_.reset(RdKafka::Producer::create(conf.get(), error));
  if (!client_) return unexpected(Errc::invalid_argument, "could not create the Kafka producer: " + error);
  std::string max_bytes;
  if (conf->get("message.max.bytes", max_bytes) == RdKafka::Conf::CONF_OK) {
    max_message_bytes_ = static_cast<std::size_t>(std::strtoull(max_bytes.c_str(), nullptr, 10));
  }
  // No polling thread: every Publication waits for its delivery reports and
  // serves them itself (DeliveryGroup::wait).
  return {};
}

Result<void> Producer::reach(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    RdKafka::Metadata* raw = nullptr;
    // Short slices, so a broker found down ends the wait at once.
    const RdKafka::ErrorCode code =
        client_->metadata(false, nullptr, &raw, std::clamp(to_int_ms(left), 1, kReachSliceMs));
    if (code == RdKafka::ERR_NO_ERROR) {
      delete raw;  // NOLINT(cppcoreguidelines-owning-memory): librdkafka hands it over
      log_.release(true);
      return {};
    }
    client_->poll(0);  // serves the error events that say every broker is down
    if (log_.all_brokers_down() || Clock::now() >= deadline) break;
  }
  // Still held: the lines librdkafka logs until the client is destroyed
  // (the transport was not opened) say nothing the error does not.
  const bool down = log_.all_brokers_down();
  std::string why = log_.last_error();
  if (why.empty()) why = down ? "every broker is down" : "no answer";
  return unexpected(Errc::connection,
                    "cannot reach Kafka at " + options_.bootstrap_servers +
                        (down ? std::string() : " within " + std::to_string(timeout.count()) + " ms") + ": " + why);
}

Result<void> Producer::Publication::add(OutgoingRecord& out) {
  if (producer_.closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
  rd_kafka_vu_t fields[7];
  fields[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  fields[0].u.cstr = out.topic.data();
  fields[1].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  fields[1].u.i = RD_KAFKA_MSG_F_COPY;
  fields[2].vtype = RD_KAFKA_VTYPE_VALUE;
  // librdkafka's field is non-const but the value is copied (RD_KAFKA_MSG_F_COPY).
  fields[2].u.mem.ptr = const_cast<char*>(out.value.data());
  fields[2].u.mem.size = out.value.size();
  fields[3].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
  fields[3].u.i64 = out.timestamp;
  fields[4].vtype = RD_KAFKA_VTYPE_HEADERS;
  fields[4].u.headers = out.headers.get();
  fields[5].vtype = RD_KAFKA_VTYPE_OPAQUE;
  fields[5].u.ptr = &group_;
  std::size_t count = 6;
  if (out.has_key) {
    fields[6].vtype = RD_KAFKA_VTYPE_KEY;
    fields[6].u.mem.ptr = const_cast<char*>(out.key.data());
    fields[6].u.mem.size = out.key.size();
    count = 7;
  }
  {
    // Another publishing thread may serve this group's reports.
    std::lock_guard lock(group_.mutex);
    ++group_.remaining;
  }
  RdKafka::Producer& client = lease_.client();
  rd_kafka_t* rk = client.c_ptr();
  rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::optional<Clock::time_point> deadline;  // taken only when the queue is full
  for (;;) {
    rd_kafka_error_t* error = rd_kafka_produceva(rk, fields, count);
    code = error ? rd_kafka_error_code(error) : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (error) rd_kafka_error_destroy(error);
    if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL || producer_.closed_.load()) break;
    if (!deadline) deadline = Clock::now() + producer_.options_.publish_timeout;
    if (Clock::now() >= *deadline) break;
    // The queue empties as delivery reports are served, and only
    // publishers serve them: serve some.
    client.poll(2);
  }
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
    {
      std::lock_guard lock(group_.mutex);
      --group_.remaining;
    }
    if (code == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
      return unexpected(::babelqueue::detail::message_too_large(out.topic, record_size(out), "the Kafka producer",
                                                                producer_.max_message_bytes_,
                                                                "producer.message.max.bytes")
                            .with_native(rd_kafka_err2name(code), rd_kafka_err2str(code)));
    }
    return unexpected(ErrorInfo(errc_of(static_cast<RdKafka::ErrorCode>(code)),
                                "could not produce to topic " + std::string(out.topic) + ": " + rd_kafka_err2str(code))
                          .with_native(rd_kafka_err2name(code), rd_kafka_err2str(code)));
  }
  (void)out.headers.release();  // librdkafka owns them now
  ++produced_;
  return {};
}

Result<void> Producer::Publication::finish() {
  if (produced_ == 0) return {};  // (after close() the client may be gone)
  return group_.wait(lease_.client());
}

Result<void> Producer::produce_one(OutgoingRecord& out) {
  Publication publication(*this);
  if (auto added = publication.add(out); !added) return added;
  return publication.finish();
}

void Producer::close(Clock::time_point until) {
  if (client_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    client_->flush(std::max(0, to_int_ms(left)));
    client_->purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
    client_->poll(0);  // serves the purged records' reports
  }
  std::unique_lock life(lifetime_);  // every Publication has had its reports
  if (client_) client_->poll(0);
  client_.reset();
}

}  // namespace babelqueue::kafka::detail
