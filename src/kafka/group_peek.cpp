// SPDX-License-Identifier: Apache-2.0
#include "group_peek.hpp"

#include "kafka_record.hpp"

#include <babelqueue/binding.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

namespace babelqueue::kafka::detail {
namespace {

struct PartitionsDeleter {
  void operator()(std::vector<RdKafka::TopicPartition*>* partitions) const {
    RdKafka::TopicPartition::destroy(*partitions);
  }
};

// The record as peek() shows it: its value, its out-of-band headers and the
// bq-attempts header, read as the consumer reads them.
PeekedMessage shown(RdKafka::Message& record) {
  PeekedMessage message;
  message.body.assign(static_cast<const char*>(record.payload()), record.len());
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(record.c_ptr(), &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) headers = nullptr;
  bool attempts_seen = false;
  for_each_header(headers, [&](std::string_view name, std::string_view text) {
    if (name == kAttemptsHeader) {
      if (!std::exchange(attempts_seen, true)) message.native_attempts = binding::parse_count(text);
    } else if (!is_reserved_header(name)) {
      message.headers.insert_or_assign(std::string(name), std::string(text));
    }
  });
  return message;
}

}  // namespace

Result<std::vector<PeekedMessage>> group_peek(RdKafka::Producer& client, const TopicAdmin& admin,
                                              const kafka::Transport::Options& options, LogEvents& log,
                                              const std::string& topic, std::size_t max) {
  std::vector<PeekedMessage> out;
  auto exists = admin.exists(client, topic);
  if (!exists) return unexpected(exists.error());
  if (!*exists) return out;
  const int timeout = std::min(10000, to_int_ms(options.publish_timeout));
  std::string error;
  std::unique_ptr<RdKafka::Topic> handle(RdKafka::Topic::create(&client, topic, nullptr, error));
  RdKafka::Metadata* raw = nullptr;
  if (auto code = client.metadata(false, handle.get(), &raw, timeout); code != RdKafka::ERR_NO_ERROR) {
    return unexpected(errc_of(code), "could not read the partitions of Kafka topic " + topic);
  }
  const std::unique_ptr<RdKafka::Metadata> metadata(raw);
  std::vector<RdKafka::TopicPartition*> partitions;
  const std::unique_ptr<std::vector<RdKafka::TopicPartition*>, PartitionsDeleter> owned(&partitions);
  for (const RdKafka::TopicMetadata* t : *metadata->topics()) {
    if (t->topic() != topic) continue;
    for (const RdKafka::PartitionMetadata* p : *t->partitions()) {
      partitions.push_back(RdKafka::TopicPartition::create(topic, p->id()));
    }
  }

  // A consumer of the group that is only assigned partitions: it reads the
  // group's offsets and the records after them, and never joins the group,
  // stores an offset or commits.
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::map<std::string, std::string> props = {{"bootstrap.servers", options.bootstrap_servers},
                                              {"group.id", options.group}};
  for (const auto& [k, v] : options.client_properties) props[k] = v;
  for (const auto& [k, v] : options.consumer_properties) props[k] = v;
  props["enable.auto.commit"] = "false";
  props["enable.auto.offset.store"] = "false";
  props["enable.partition.eof"] = "false";
  if (auto set = apply_properties(*conf, props, "consumer"); !set) return unexpected(set.error());
  if (conf->set("event_cb", &log, error) != RdKafka::Conf::CONF_OK) {
    return unexpected(Errc::internal, "librdkafka refused the consumer's callbacks: " + error);
  }
  std::unique_ptr<RdKafka::KafkaConsumer> reader(RdKafka::KafkaConsumer::create(conf.get(), error));
  if (!reader) return unexpected(Errc::invalid_argument, "could not create a Kafka consumer: " + error);
  if (auto code = reader->committed(partitions, timeout); code != RdKafka::ERR_NO_ERROR) {
    reader->close();
    return unexpected(errc_of(code), "could not read the offsets of Kafka topic " + topic + " for group " +
                                         options.group + ": " + RdKafka::err2str(code));
  }

  // Where each partition's unread records start and end.
  std::map<std::int32_t, std::int64_t> end_of;
  std::vector<RdKafka::TopicPartition*> unread;
  for (RdKafka::TopicPartition* p : partitions) {
    std::int64_t low = 0;
    std::int64_t high = 0;
    if (auto code = client.query_watermark_offsets(topic, p->partition(), &low, &high, timeout);
        code != RdKafka::ERR_NO_ERROR) {
      reader->close();
      return unexpected(errc_of(code),
                        "could not read the offsets of Kafka topic " + topic + ": " + RdKafka::err2str(code));
    }
    const std::int64_t start = p->offset() >= 0 ? std::max(low, p->offset()) : low;
    if (start >= high) continue;
    p->set_offset(start);
    end_of[p->partition()] = high;
    unread.push_back(p);
  }
  if (unread.empty()) {
    reader->close();
    return out;
  }
  if (auto code = reader->assign(unread); code != RdKafka::ERR_NO_ERROR) {
    reader->close();
    return unexpected(errc_of(code), "could not read Kafka topic " + topic + ": " + RdKafka::err2str(code));
  }

  // Each partition's first records, up to max each, until every partition
  // reached the end it had when we looked (later records are not waited for).
  std::map<std::int32_t, std::vector<PeekedMessage>> read;
  std::size_t finished = 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout);
  while (finished < end_of.size() && Clock::now() < deadline) {
    const std::unique_ptr<RdKafka::Message> record(reader->consume(100));
    if (record->err() == RdKafka::ERR__TIMED_OUT) continue;
    if (record->err() != RdKafka::ERR_NO_ERROR) {
      const std::string why = record->errstr();
      reader->close();
      return unexpected(errc_of(record->err()), "could not read Kafka topic " + topic + ": " + why);
    }
    const auto end = end_of.find(record->partition());
    if (end == end_of.end()) continue;
    std::vector<PeekedMessage>& records = read[record->partition()];
    const bool was_open = records.size() < max && record->offset() < end->second;
    if (was_open) records.push_back(shown(*record));
    if (was_open && (records.size() == max || record->offset() + 1 >= end->second)) ++finished;
  }
  reader->unassign();
  reader->close();
  if (finished < end_of.size()) {
    return unexpected(Errc::timeout, "could not read the waiting records of Kafka topic " + topic + " within " +
                                         std::to_string(timeout) + " ms");
  }
  for (auto& [partition, records] : read) {
    for (PeekedMessage& message : records) {
      if (out.size() == max) break;
      out.push_back(std::move(message));
    }
  }
  return out;
}

}  // namespace babelqueue::kafka::detail
