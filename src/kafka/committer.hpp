// SPDX-License-Identifier: Apache-2.0
// Commits the consumer's finished offsets: every commit_interval on a thread
// of its own, and on demand (closing, a revoke).
//
// Threads: Committer runs its own thread; it is started and stopped by the
// receiving thread (the consumer's lock holder) that owns it.
#pragma once

#include "assignments.hpp"

#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace babelqueue::kafka::detail {

// Commits offsets synchronously (any thread: librdkafka's commit is thread-safe).
RdKafka::ErrorCode commit_offsets(RdKafka::KafkaConsumer& client, const std::vector<Commit>& commits);

// Commits every partition's finished prefix; a failed commit is offered
// again next time.
void commit_finished(Assignments& assignments, RdKafka::KafkaConsumer& client);

class Committer {
 public:
  // Starts the thread. assignments and client must outlive it.
  Committer(Assignments& assignments, RdKafka::KafkaConsumer& client, std::chrono::milliseconds interval);
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;
  ~Committer() { stop(); }

  // Stops and joins the thread (a commit in progress finishes first).
  void stop();

 private:
  void loop();

  Assignments& assignments_;
  RdKafka::KafkaConsumer& client_;
  const std::chrono::milliseconds interval_;
  std::mutex mutex_;  // guards stop_
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace babelqueue::kafka::detail
