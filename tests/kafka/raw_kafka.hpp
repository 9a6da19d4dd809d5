// SPDX-License-Identifier: Apache-2.0
// Plain librdkafka clients for the tests: they read what the broker really
// holds and write records no BabelQueue SDK wrote.
#pragma once

#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kafka_test {

struct RawRecord {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string value;
  std::optional<std::string> key;
  std::vector<std::pair<std::string, std::string>> headers;
  std::int64_t timestamp = 0;

  std::optional<std::string> header(const std::string& name) const {
    std::optional<std::string> found;
    for (const auto& [k, v] : headers) {
      if (k == name) found = v;
    }
    return found;
  }
};

inline std::unique_ptr<RdKafka::Conf> conf_for(const std::string& servers) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string error;
  conf->set("bootstrap.servers", servers, error);
  return conf;
}

// Every record of partitions [0, partitions) of topic, from the beginning,
// until count arrived or wait passed.
inline std::vector<RawRecord> read_topic(const std::string& servers, const std::string& topic, std::size_t count,
                                         int partitions = 1,
                                         std::chrono::milliseconds wait = std::chrono::seconds(15)) {
  auto conf = conf_for(servers);
  std::string error;
  conf->set("group.id", "raw-reader", error);
  conf->set("enable.auto.commit", "false", error);
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(RdKafka::KafkaConsumer::create(conf.get(), error));
  if (!consumer) throw std::runtime_error(error);
  std::vector<RdKafka::TopicPartition*> assignment;
  for (int p = 0; p < partitions; ++p) {
    assignment.push_back(RdKafka::TopicPartition::create(topic, p, RdKafka::Topic::OFFSET_BEGINNING));
  }
  consumer->assign(assignment);
  RdKafka::TopicPartition::destroy(assignment);
  std::vector<RawRecord> out;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
    std::unique_ptr<RdKafka::Message> message(consumer->consume(100));
    if (message->err() != RdKafka::ERR_NO_ERROR) continue;
    RawRecord record;
    record.topic = message->topic_name();
    record.partition = message->partition();
    record.offset = message->offset();
    record.value.assign(static_cast<const char*>(message->payload()), message->len());
    if (message->key()) record.key = *message->key();
    record.timestamp = message->timestamp().timestamp;
    if (const RdKafka::Headers* headers = message->headers()) {
      for (const auto& h : headers->get_all()) {
        record.headers.emplace_back(h.key(), std::string(static_cast<const char*>(h.value()), h.value_size()));
      }
    }
    out.push_back(std::move(record));
  }
  consumer->close();
  return out;
}

// The group's committed offset of topic[partition]; -1001 (OFFSET_INVALID) when none.
inline std::int64_t committed_offset(const std::string& servers, const std::string& group, const std::string& topic,
                                     int partition = 0) {
  auto conf = conf_for(servers);
  std::string error;
  conf->set("group.id", group, error);
  conf->set("enable.auto.commit", "false", error);
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(RdKafka::KafkaConsumer::create(conf.get(), error));
  if (!consumer) throw std::runtime_error(error);
  std::vector<RdKafka::TopicPartition*> partitions{RdKafka::TopicPartition::create(topic, partition)};
  consumer->committed(partitions, 10000);
  const std::int64_t offset = partitions[0]->offset();
  RdKafka::TopicPartition::destroy(partitions);
  consumer->close();
  return offset;
}

// Produces one record with exactly these headers, to partition 0.
inline void produce_raw(const std::string& servers, const std::string& topic, const std::string& value,
                        const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  auto conf = conf_for(servers);
  std::string error;
  std::unique_ptr<RdKafka::Producer> producer(RdKafka::Producer::create(conf.get(), error));
  if (!producer) throw std::runtime_error(error);
  RdKafka::Headers* list = RdKafka::Headers::create();
  for (const auto& [k, v] : headers) list->add(k, v);
  auto code = producer->produce(topic, 0, RdKafka::Producer::RK_MSG_COPY, const_cast<char*>(value.data()), value.size(),
                                nullptr, 0, 0, list, nullptr);
  if (code != RdKafka::ERR_NO_ERROR) {
    delete list;
    throw std::runtime_error(RdKafka::err2str(code));
  }
  if (producer->flush(10000) != RdKafka::ERR_NO_ERROR) throw std::runtime_error("raw produce not flushed");
}

}  // namespace kafka_test
