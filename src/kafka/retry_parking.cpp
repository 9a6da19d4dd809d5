// SPDX-License-Identifier: Apache-2.0
#include "retry_parking.hpp"

#include "kafka_record.hpp"

#include <babelqueue/envelope.hpp>

#include <optional>
#include <utility>
#include <vector>

namespace babelqueue::kafka::detail {
namespace {

// Pauses (or resumes) fetching from the partitions.
void set_paused(RdKafka::KafkaConsumer& client, const std::vector<PartitionKey>& keys, bool pause) {
  if (keys.empty()) return;
  std::vector<RdKafka::TopicPartition*> partitions;
  partitions.reserve(keys.size());
  for (const PartitionKey& key : keys) partitions.push_back(RdKafka::TopicPartition::create(key.first, key.second));
  if (pause) {
    client.pause(partitions);
  } else {
    client.resume(partitions);
  }
  RdKafka::TopicPartition::destroy(partitions);
}

}  // namespace

void RetryParking::add_topic(std::string retry_topic, std::string queue_topic, std::chrono::milliseconds delay) {
  topics_.insert_or_assign(std::move(retry_topic), Tier{std::move(queue_topic), delay});
}

const RetryParking::Tier* RetryParking::find(std::string_view topic) const {
  auto found = topics_.find(topic);
  return found == topics_.end() ? nullptr : &found->second;
}

void RetryParking::park(RdKafka::KafkaConsumer& client, const rd_kafka_message_t* raw, rd_kafka_headers_t* headers,
                        const Tier& tier) {
  PartitionKey where{rd_kafka_topic_name(raw->rkt), raw->partition};
  ParkedRecord parked;
  parked.offset = raw->offset;
  parked.value.assign(static_cast<const char*>(raw->payload), raw->len);
  if (raw->key) parked.key.emplace(static_cast<const char*>(raw->key), raw->key_len);
  parked.original_topic = tier.queue_topic;
  for_each_header(headers, [&](std::string_view header, std::string_view text) {
    if (header == kOriginalTopicHeader) {
      if (!text.empty()) parked.original_topic.assign(text);
    } else if (header != kDelayHeader) {
      parked.headers.emplace_back(std::string(header), std::string(text));
    }
  });
  const std::int64_t now_ms = epoch_ms();
  rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const std::int64_t stamp = rd_kafka_message_timestamp(raw, &type);
  const auto wait = wait_before_due(type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? std::nullopt : std::optional(stamp),
                                    now_ms, tier.delay);
  const auto now = Clock::now();
  parked.due = now + wait;
  if (schedule_.park(where, std::move(parked), now)) set_paused(client, {where}, true);
}

void RetryParking::reinject_due(RdKafka::KafkaConsumer& client, Producer& producer, Assignments& assignments) {
  RetrySchedule::Due due = schedule_.take_due(Clock::now());
  for (auto& [key, records] : due) {
    while (!records.empty()) {
      ParkedRecord& parked = records.front();
      // The same bytes, key and headers (bq-attempts as parked: no new
      // attempt), minus the retry headers; the timestamp back to created_at.
      OutgoingRecord out;
      out.topic = parked.original_topic;  // NUL-terminated: a std::string
      out.value = parked.value;
      out.has_key = parked.key.has_value();
      if (parked.key) out.key = *parked.key;
      for (const auto& [name, value] : parked.headers) add_header(out.headers.get(), name, value);
      if (auto envelope = Envelope::decode(parked.value)) out.timestamp = envelope->created_at().value_or(0);
      if (auto sent = producer.produce_one(out); !sent) {
        // Not confirmed: it and the records after it wait another second.
        schedule_.put_back(key, std::move(records), Clock::now() + std::chrono::seconds(1));
        break;
      }
      assignments.done(key, parked.offset);
      records.pop_front();
    }
  }
  // A partition waits (paused) while its oldest parked record is not due.
  RetrySchedule::Pauses changes = schedule_.update_pauses();
  set_paused(client, changes.resume, false);
  set_paused(client, changes.pause, true);
}

void RetryParking::revoke(const std::set<PartitionKey>& revoked, std::map<PartitionKey, std::size_t>& dropped) {
  for (const PartitionKey& key : revoked) {
    if (std::size_t count = schedule_.drop(key); count > 0) dropped[key] += count;
  }
  schedule_.forget_pauses();
}

}  // namespace babelqueue::kafka::detail
