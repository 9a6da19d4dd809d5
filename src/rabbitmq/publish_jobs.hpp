// SPDX-License-Identifier: Apache-2.0
// Publish jobs: what publish() and publish_batch() hand the I/O thread, and
// the queue they wait in.
#pragma once

#include "amqp_projection.hpp"
#include "locked.hpp"

#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace babelqueue::rabbitmq::detail {

using Clock = std::chrono::steady_clock;

// One message of a job.
struct PublishItem {
  std::string queue;        // the destination queue
  std::string routing_key;  // queue, or its delay bucket queue
  std::chrono::milliseconds bucket{0};
  std::string body;
  Projection projection;
};

// The messages of a publish() or publish_batch() call, checked and projected
// on the calling thread before anything is queued: Errc::invalid_argument
// for an empty queue name, one longer than 255 bytes, a delay out of range
// or a header the projection refuses.
Result<std::vector<PublishItem>> publish_items(std::span<const OutgoingMessage> messages);

// How far a job got: written by the I/O thread, read by the API thread that
// waits for it. Under the mutex (PublishJob::progress takes a Locked).
struct PublishProgress {
  std::deque<std::size_t> to_send;  // indexes not (or no longer) on the wire
  std::size_t confirmed = 0;
  std::optional<ErrorInfo> error;  // the first failure
  std::optional<std::size_t> failed_index;
  bool done = false;
  // A message of the job went on the wire at least once: a job that ends
  // unconfirmed then has an unknown outcome (the broker may hold it), not
  // a plain timeout.
  bool sent = false;

  // Ends the job with this failure, unless it ended already.
  void fail(std::size_t index, const ErrorInfo& why);
};

// One publish() or publish_batch() call. Its items and deadline are fixed
// at creation, so any thread reads them without the lock; its progress is
// under the mutex.
class PublishJob {
 public:
  PublishJob(std::vector<PublishItem> items, Clock::time_point deadline);

  const std::vector<PublishItem>& items() const { return items_; }
  Clock::time_point deadline() const { return deadline_; }
  PublishProgress& progress(const Locked& /*held*/) { return progress_; }

 private:
  const std::vector<PublishItem> items_;
  const Clock::time_point deadline_;
  PublishProgress progress_;
};

// What publish() answers for a failed job: its error; for a batch, naming
// the message that failed and how many were confirmed.
ErrorInfo publish_error(const PublishProgress& progress, std::size_t items);

// Jobs queued by API threads for the I/O thread, oldest first. Under the
// mutex (a member of Guarded).
class PublishQueue {
 public:
  struct Next {
    std::shared_ptr<PublishJob> job;
    std::size_t index = 0;
  };

  void push_back(std::shared_ptr<PublishJob> job) { jobs_.push_back(std::move(job)); }
  // job has messages to send again (after a lost connection): first in line,
  // unless it is queued already.
  void push_front_once(const std::shared_ptr<PublishJob>& job);
  bool empty() const { return jobs_.empty(); }
  // The next message to send, taken off its job's to_send; finished jobs at
  // the front are dropped. Nothing when no job has a message to send.
  std::optional<Next> next(const Locked& locked);
  // Fails the jobs whose deadline passed (Errc::timeout naming endpoint,
  // timeout and the last connection error) and drops finished jobs. True
  // when a job failed.
  bool expire(const Locked& locked, Clock::time_point now, const std::string& endpoint,
              std::chrono::milliseconds timeout);
  // Fails every queued job with why and empties the queue.
  void fail_all(const Locked& locked, const ErrorInfo& why);

 private:
  std::deque<std::shared_ptr<PublishJob>> jobs_;
};

}  // namespace babelqueue::rabbitmq::detail
