// SPDX-License-Identifier: Apache-2.0
// The retry tiers as the receiving thread sees them: which subscribed topics
// are retry topics, the records read from them waiting until they are due (a
// RetrySchedule), their partitions paused meanwhile, and re-injecting them
// into their queue's topic when due.
//
// Threads: the receiving thread only (the consumer's lock holder); no lock.
#pragma once

#include "assignments.hpp"
#include "producer.hpp"
#include "retry_tiers.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace babelqueue::kafka::detail {

class RetryParking {
 public:
  // A subscribed retry topic: the queue topic its records go back to and its delay.
  struct Tier {
    std::string queue_topic;
    std::chrono::milliseconds delay{0};
  };

  void add_topic(std::string retry_topic, std::string queue_topic, std::chrono::milliseconds delay);
  bool has_topics() const noexcept { return !topics_.empty(); }
  // The tier of topic; nullptr when it is not a retry topic.
  const Tier* find(std::string_view topic) const;

  // Holds raw, polled from a retry topic of tier, until it is due (its
  // headers: rd_kafka_message_headers' list, or null); pauses its partition
  // when it has to wait.
  void park(RdKafka::KafkaConsumer& client, const rd_kafka_message_t* raw, rd_kafka_headers_t* headers,
            const Tier& tier);

  // Re-injects the parked records that are due, oldest first per partition,
  // each marked done in assignments once its copy is confirmed; a partition
  // stays paused while records of it wait.
  void reinject_due(RdKafka::KafkaConsumer& client, Producer& producer, Assignments& assignments);

  // The partitions were revoked: forgets their parked records (adding their
  // count to dropped) and, as the consumer gives up its whole assignment,
  // every pause.
  void revoke(const std::set<PartitionKey>& revoked, std::map<PartitionKey, std::size_t>& dropped);

 private:
  std::map<std::string, Tier, std::less<>> topics_;  // retry topic -> its tier
  RetrySchedule schedule_;
};

}  // namespace babelqueue::kafka::detail
