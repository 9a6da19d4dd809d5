// SPDX-License-Identifier: Apache-2.0
#include "group_lag.hpp"

#include <algorithm>
#include <memory>
#include <vector>

namespace babelqueue::kafka::detail {

Result<std::int64_t> group_lag(RdKafka::Producer& client, const TopicAdmin& admin, Consumer& consumer,
                               const kafka::Transport::Options& options, const std::string& topic) {
  auto exists = admin.exists(client, topic);
  if (!exists) return unexpected(exists.error());
  if (!*exists) return std::int64_t{0};
  std::string error;
  std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(&client, topic, nullptr, error));
  RdKafka::Metadata* raw = nullptr;
  const int timeout = std::min(10000, to_int_ms(options.publish_timeout));
  if (auto code = client.metadata(false, handle.get(), &raw, timeout); code != RdKafka::ERR_NO_ERROR) {
    return unexpected(errc_of(code), "could not read the partitions of Kafka topic " + topic);
  }
  std::unique_ptr<RdKafka::Metadata> metadata(raw);
  std::vector<RdKafka::TopicPartition*> partitions;
  for (const RdKafka::TopicMetadata* t : *metadata->topics()) {
    if (t->topic() != topic) continue;
    for (const RdKafka::PartitionMetadata* p : *t->partitions()) {
      partitions.push_back(RdKafka::TopicPartition::create(topic, p->id()));
    }
  }
  auto read = consumer.read_committed(partitions, timeout);
  if (!read) {
    RdKafka::TopicPartition::destroy(partitions);
    return unexpected(read.error());
  }
  RdKafka::ErrorCode code = *read;
  std::int64_t total = 0;
  for (RdKafka::TopicPartition* p : partitions) {
    std::int64_t low = 0;
    std::int64_t high = 0;
    if (code == RdKafka::ERR_NO_ERROR)
      code = client.query_watermark_offsets(topic, p->partition(), &low, &high, timeout);
    if (code == RdKafka::ERR_NO_ERROR) total += high - std::max(low, p->offset() >= 0 ? p->offset() : low);
  }
  RdKafka::TopicPartition::destroy(partitions);
  if (code != RdKafka::ERR_NO_ERROR) {
    return unexpected(errc_of(code), "could not read the offsets of Kafka topic " + topic + " for group " +
                                         options.group + ": " + RdKafka::err2str(code));
  }
  return total;
}

}  // namespace babelqueue::kafka::detail
