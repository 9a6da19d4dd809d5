// SPDX-License-Identifier: Apache-2.0
// What API threads and the I/O thread share: the transport's one mutex and
// everything it guards (Guarded, reached only through a Locked), next to
// what needs no lock (condition variables, the wake-up eventfd, counters).
#pragma once

#include "consumer_table.hpp"
#include "delay_buckets.hpp"
#include "locked.hpp"
#include "publish_jobs.hpp"

#include <babelqueue/result.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue::rabbitmq::detail {

// The eventfd API threads write to wake the I/O thread from poll(). Used by
// any thread (the kernel serialises them); closed by the transport's close
// once the I/O thread has ended.
class WakeFd {
 public:
  WakeFd();
  ~WakeFd() { close(); }
  WakeFd(const WakeFd&) = delete;
  WakeFd& operator=(const WakeFd&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void signal() const;
  void drain() const;
  void close();

 private:
  int fd_ = -1;
};

// A stats() request: which queue and which of its delay buckets to count,
// fixed at creation (read without the lock); the answer under the mutex.
class StatsJob {
 public:
  struct Answer {
    std::int64_t ready = 0;
    std::int64_t delayed = 0;
    std::optional<ErrorInfo> error;
    bool done = false;
  };

  StatsJob(std::string queue, std::vector<std::pair<std::string, std::chrono::milliseconds>> buckets)
      : queue_(std::move(queue)), buckets_(std::move(buckets)) {}

  const std::string& queue() const { return queue_; }
  const std::vector<std::pair<std::string, std::chrono::milliseconds>>& buckets() const { return buckets_; }
  Answer& answer(const Locked& /*held*/) { return answer_; }

 private:
  const std::string queue_;
  const std::vector<std::pair<std::string, std::chrono::milliseconds>> buckets_;
  Answer answer_;
};

// Everything under the mutex: API threads and the I/O thread, through a
// Locked only.
struct Guarded {
  bool closed = false;
  bool connected = false;
  bool io_sleeping = false;  // the I/O thread sleeps in poll(): a request must wake it
  Clock::time_point close_deadline;
  std::string last_error;  // of the connection, for error messages
  PublishQueue publishes;
  ConsumerTable consumers;
  std::vector<std::shared_ptr<StatsJob>> stats_jobs;
  KnownBuckets buckets;
};

// The mutex, what it guards, and the synchronisation that needs no lock.
// Used by API threads and the I/O thread.
class SharedState {
 public:
  Locked lock() { return Locked(*this); }

  std::condition_variable job_done;        // a publish or stats job finished
  std::condition_variable reconnect_wait;  // closed while backing off
  std::atomic<std::uint64_t> reconnects{0};
  WakeFd wake_fd;

 private:
  friend class Locked;
  std::mutex mutex_;
  Guarded guarded_;
};

inline Locked::Locked(SharedState& state) : state_(&state), guarded_(&state.guarded_), lock_(state.mutex_) {}

inline void Locked::wake_io() const {
  if (guarded_->io_sleeping) {
    guarded_->io_sleeping = false;
    state_->wake_fd.signal();
  }
}

}  // namespace babelqueue::rabbitmq::detail
