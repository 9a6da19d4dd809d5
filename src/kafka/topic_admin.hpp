// SPDX-License-Identifier: Apache-2.0
// Topics: whether one exists (a metadata look-up for that topic alone, so the
// broker never auto-creates it) and creating it with the configured
// partitions (Admin API), remembering the topics known to exist.
//
// Threads: any; the known topics are behind its own mutex.
#pragma once

#include "producer.hpp"

#include <babelqueue/kafka/transport.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace babelqueue::kafka::detail {

class TopicAdmin {
 public:
  // closed, options and producer (whose client it uses) must outlive it.
  TopicAdmin(const kafka::Transport::Options& options, const std::atomic<bool>& closed, Producer& producer)
      : options_(options), closed_(closed), producer_(producer) {}

  // Creates topic when missing (a retry topic with LogAppendTime record
  // timestamps). Errc::not_found naming it when it is missing and
  // create_topics is off or the broker refuses to create it.
  Result<void> ensure(std::string_view topic, bool retry_topic = false);

  // Whether topic exists, asked of the cluster with client (a lease's).
  Result<bool> exists(RdKafka::Producer& client, std::string_view topic) const;

 private:
  Result<void> create(RdKafka::Producer& client, std::string_view topic, bool retry_topic) const;

  const kafka::Transport::Options& options_;
  const std::atomic<bool>& closed_;
  Producer& producer_;
  std::mutex mutex_;  // guards known_
  std::set<std::string, std::less<>> known_;
};

}  // namespace babelqueue::kafka::detail
