// SPDX-License-Identifier: Apache-2.0
// LockRenewal: keeps the PeekLock of messages whose handlers run long. A
// lock is renewed through the entity's $management node
// (com.microsoft:renew-lock with the lock token; the reply holds the new
// locked-until), once when keep() is called and then again by a thread of
// its own whenever a third of the lock's length is left, until the lease
// keep() asked for has passed or the message is settled (forget()).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include "client.hpp"

#include <babelqueue/log_sink.hpp>
#include <babelqueue/result.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace babelqueue::servicebus {

class LockRenewal {
 public:
  LockRenewal(amqp10::Client& client, std::chrono::milliseconds timeout, LogSink log);
  ~LockRenewal();
  LockRenewal(const LockRenewal&) = delete;
  LockRenewal& operator=(const LockRenewal&) = delete;

  // Renews the lock of delivery id (queue, lock token) now, and keeps it
  // until lease from now. Errc::not_found when the service no longer holds
  // the lock (com.microsoft:message-lock-lost, status 410).
  Result<void> keep(std::uint64_t id, const std::string& queue, const std::string& lock_token,
                    std::chrono::milliseconds lease);

  // The delivery was settled: renew it no more.
  void forget(std::uint64_t id);

  // Stops the thread. Idempotent; the destructor calls it.
  void stop();

  // One renew-lock request; the new locked-until.
  static Result<std::chrono::system_clock::time_point> renew(amqp10::Client& client, const std::string& queue,
                                                             const std::string& lock_token,
                                                             std::chrono::milliseconds timeout);

 private:
  using SystemClock = std::chrono::system_clock;
  struct Held {
    std::string queue;
    std::string lock_token;
    SystemClock::time_point renewed_at;
    SystemClock::time_point locked_until;
    SystemClock::time_point keep_until;
    SystemClock::time_point due() const { return locked_until - (locked_until - renewed_at) / 3; }
  };

  void run();

  amqp10::Client& client_;
  std::chrono::milliseconds timeout_;
  LogSink log_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint64_t, Held> held_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace babelqueue::servicebus
