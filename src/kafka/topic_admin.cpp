// SPDX-License-Identifier: Apache-2.0
#include "topic_admin.hpp"

#include <algorithm>
#include <memory>
#include <thread>

namespace babelqueue::kafka::detail {

Result<void> TopicAdmin::ensure(std::string_view topic, bool retry_topic) {
  {
    std::lock_guard lock(mutex_);
    if (known_.contains(topic)) return {};
  }
  Producer::Lease lease(producer_);
  if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
  auto found = exists(lease.client(), topic);
  if (!found) return unexpected(found.error());
  if (!*found) {
    if (!options_.create_topics) {
      return unexpected(Errc::not_found, "the Kafka topic " + std::string(topic) +
                                             " does not exist (create_topics is off: create it first)");
    }
    if (auto created = create(lease.client(), topic, retry_topic); !created) return created;
  }
  std::lock_guard lock(mutex_);
  known_.emplace(topic);
  return {};
}

Result<bool> TopicAdmin::exists(RdKafka::Producer& client, std::string_view topic) const {
  std::string error;
  std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(&client, std::string(topic), nullptr, error));
  if (!handle) return unexpected(Errc::invalid_argument, "bad Kafka topic name " + std::string(topic) + ": " + error);
  RdKafka::Metadata* raw = nullptr;
  // Asks for this topic only, so the broker's auto-creation is not triggered by a look-up.
  RdKafka::ErrorCode code =
      client.metadata(false, handle.get(), &raw, std::min(10000, to_int_ms(options_.publish_timeout)));
  std::unique_ptr<RdKafka::Metadata> metadata(raw);
  if (code != RdKafka::ERR_NO_ERROR) {
    return unexpected(errc_of(code), "could not read the metadata of Kafka topic " + std::string(topic) + " from " +
                                         options_.bootstrap_servers + ": " + RdKafka::err2str(code));
  }
  for (const RdKafka::TopicMetadata* t : *metadata->topics()) {
    if (t->topic() == topic) return t->err() == RdKafka::ERR_NO_ERROR && !t->partitions()->empty();
  }
  return false;
}

Result<void> TopicAdmin::create(RdKafka::Producer& client, std::string_view topic, bool retry_topic) const {
  rd_kafka_t* rk = client.c_ptr();
  char error[512];
  const std::string name(topic);
  rd_kafka_NewTopic_t* new_topic =
      rd_kafka_NewTopic_new(name.c_str(), options_.partitions, options_.replication_factor, error, sizeof error);
  if (new_topic == nullptr) return unexpected(Errc::invalid_argument, "topic " + name + ": " + error);
  if (retry_topic) {
    // A parked record's timestamp is then the broker's append time, so its
    // due time does not depend on the producer's clock.
    rd_kafka_NewTopic_set_config(new_topic, "message.timestamp.type", "LogAppendTime");
  }
  rd_kafka_AdminOptions_t* admin = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(admin, 10000, error, sizeof error);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &new_topic, 1, admin, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 20000);
  rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR__TIMED_OUT;
  std::string why = "no answer from the cluster";
  if (event != nullptr) {
    code = rd_kafka_event_error(event);
    why = rd_kafka_event_error_string(event) ? rd_kafka_event_error_string(event) : "";
    if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(event);
      std::size_t count = 0;
      const rd_kafka_topic_result_t** topics = rd_kafka_CreateTopics_result_topics(result, &count);
      if (count == 1) {
        code = rd_kafka_topic_result_error(topics[0]);
        const char* message = rd_kafka_topic_result_error_string(topics[0]);
        why = message ? message : rd_kafka_err2str(code);
      }
    }
    rd_kafka_event_destroy(event);
  }
  rd_kafka_queue_destroy(queue);
  rd_kafka_AdminOptions_destroy(admin);
  rd_kafka_NewTopic_destroy(new_topic);
  if (code != RD_KAFKA_RESP_ERR_NO_ERROR && code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
    const Errc errc =
        code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED || code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED
            ? Errc::not_found
            : errc_of(static_cast<RdKafka::ErrorCode>(code));
    return unexpected(errc, "the Kafka topic " + name + " is missing and could not be created: " + why);
  }
  // Wait until the metadata shows it, so a consumer subscribing next sees its
  // partitions. It usually does within a few milliseconds of the answer:
  // look again soon, then less often.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  std::chrono::milliseconds pause(2);
  while (Clock::now() < deadline) {
    auto found = exists(client, topic);
    if (found && *found) return {};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return unexpected(Errc::timeout, "the Kafka topic " + name + " was created but its metadata did not appear");
}

}  // namespace babelqueue::kafka::detail
