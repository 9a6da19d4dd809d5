// SPDX-License-Identifier: Apache-2.0
#include "committer.hpp"

namespace babelqueue::kafka::detail {

RdKafka::ErrorCode commit_offsets(RdKafka::KafkaConsumer& client, const std::vector<Commit>& commits) {
  if (commits.empty()) return RdKafka::ERR_NO_ERROR;
  std::vector<RdKafka::TopicPartition*> partitions;
  partitions.reserve(commits.size());
  for (const Commit& commit : commits) {
    partitions.push_back(
        RdKafka::TopicPartition::create(commit.partition.first, commit.partition.second, commit.offset));
  }
  const RdKafka::ErrorCode code = client.commitSync(partitions);
  RdKafka::TopicPartition::destroy(partitions);
  return code;
}

void commit_finished(Assignments& assignments, RdKafka::KafkaConsumer& client) {
  std::vector<Commit> commits = assignments.take_commits();
  if (commits.empty()) return;
  if (commit_offsets(client, commits) != RdKafka::ERR_NO_ERROR) assignments.restore(commits);
}

Committer::Committer(Assignments& assignments, RdKafka::KafkaConsumer& client, std::chrono::milliseconds interval)
    : assignments_(assignments), client_(client), interval_(interval), thread_([this] { loop(); }) {}

void Committer::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Committer::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, interval_, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    commit_finished(assignments_, client_);
    lock.lock();
  }
}

}  // namespace babelqueue::kafka::detail
