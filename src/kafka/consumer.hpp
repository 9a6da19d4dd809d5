// SPDX-License-Identifier: Apache-2.0
// The consumer group side of the transport: receive() (joining the group on
// its first call), the group's committed offsets for stats(), and close().
//
// Threads: receive() from any thread, the calls serialised on its lock. The
// librdkafka consumer and everything only the receiving thread uses (the
// subscriptions, the poll buffer, the rebalance callback, retry parking, the
// committer it starts) form a Session, reachable only under that lock; what
// other threads share with it is in Assignments.
#pragma once

#include "assignments.hpp"
#include "client_support.hpp"
#include "producer.hpp"
#include "retry_tiers.hpp"
#include "topic_admin.hpp"

#include <babelqueue/kafka/transport.hpp>

#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace babelqueue::kafka::detail {

class Consumer {
 public:
  // Everything it is given must outlive it.
  Consumer(const kafka::Transport::Options& options, const std::atomic<bool>& closed, LogEvents& log,
           const RetryTiers& tiers, TopicAdmin& admin, Producer& producer, Assignments& assignments);
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;
  ~Consumer();

  // Up to max records of queue, waiting up to wait for the first one (see
  // Transport::receive): handed out from what was fetched, else polled.
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max, std::chrono::milliseconds wait);

  // Reads the group's committed offsets of partitions into them: with the
  // consumer once it runs, else with a reader of the group that does not
  // join it. The librdkafka error of the read, or the reader's creation error.
  Result<RdKafka::ErrorCode> read_committed(std::vector<RdKafka::TopicPartition*>& partitions, int timeout_ms);

  // Commits what is done, leaves the group and closes the client.
  void close();

 private:
  class Session;

  const kafka::Transport::Options& options_;
  const std::atomic<bool>& closed_;
  LogEvents& log_;
  const RetryTiers& tiers_;
  TopicAdmin& admin_;
  Producer& producer_;
  Assignments& assignments_;

  std::mutex mutex_;                  // held by the receiving thread
  std::unique_ptr<Session> session_;  // from the first receive(); under mutex_
};

}  // namespace babelqueue::kafka::detail
