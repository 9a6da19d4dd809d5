// SPDX-License-Identifier: Apache-2.0
// ConnectionOptions: where and how an amqp10::Client connects.
//
// Thread-safety: a plain value.
#pragma once

#include "claims.hpp"
#include "message_reader.hpp"

#include <babelqueue/backoff.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/tls_options.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace babelqueue::amqp10 {

// A doorbell several clients share: each rings it once it has buffered
// received messages (after the last delivery of a read: ring_one()), or a
// receiver link failed (ring()), so that a caller receiving from all of
// them waits for any one.
//
// Thread-safety: every method may be called from several threads at once.
class Arrivals {
 public:
  // How many times it rang so far: the value to wait past.
  std::uint64_t rings() const { return rings_.load(); }
  // Wakes the callers waiting in wait_past() (a link failed, the clients
  // close); costs an atomic increment when none is.
  void ring() {
    rings_.fetch_add(1);
    if (waiting_.load() == 0) return;
    { std::lock_guard lock(mutex_); }  // a waiter between its check and its sleep has gone to sleep
    cv_.notify_all();
  }
  // Wakes one of them (messages arrived: the connection's thread rings it
  // for every read). Waking them all had every waiter look through every
  // client for what one of them takes; the one woken rings again when it
  // may have left messages behind (it took as many as it could carry).
  void ring_one() {
    rings_.fetch_add(1);
    if (waiting_.load() == 0) return;
    { std::lock_guard lock(mutex_); }
    cv_.notify_one();
  }
  // Waits until it rang after `seen` was read, at most until deadline;
  // false when the deadline came first.
  bool wait_past(std::uint64_t seen, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    waiting_.fetch_add(1);
    const bool rang = cv_.wait_until(lock, deadline, [&] { return rings_.load() != seen; });
    waiting_.fetch_sub(1);
    return rang;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<std::uint64_t> rings_{0};
  std::atomic<int> waiting_{0};
};

struct ConnectionOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 5672;
  // SASL: PLAIN with these when user is set, else ANONYMOUS.
  std::string user;
  std::string password;
  TlsOptions tls;
  // Sent as the open frame's hostname (and used for TLS when
  // tls.server_name is empty); empty: host.
  std::string virtual_host;
  std::string container_id;  // empty: a random one
  // The first connect (and each reconnect attempt) gives up after this.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // Heartbeat: the peer closes a connection silent for twice this.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  // Delays between reconnect attempts after the connection drops.
  BackoffPolicy reconnect{std::chrono::milliseconds(200), 2.0, std::chrono::seconds(10), 0.2};
  // Terminus capabilities set on every source (receiver) and target
  // (sender): Artemis needs "queue" for anycast.
  std::vector<std::string> terminus_capabilities;
  // Messages the broker may push ahead of receive() per address (the
  // link's credit window). 1 = one at a time.
  std::uint32_t credit_window = 1000;
  // rcv-settle-mode second: the broker confirms each settlement (Service
  // Bus needs it for PeekLock); first (false) settles at once.
  bool receiver_settles_second = false;
  // The largest encoded message a send puts on a link; 0: no limit of ours.
  // A link whose peer announced a max-message-size at attach takes at most
  // that as well. A larger message fails, naming both sizes, unsent.
  std::uint64_t max_message_size = 0;
  // Reads each received message on the connection's thread into
  // Incoming::read (message_reader.hpp). Empty: Incoming::message carries
  // the message itself.
  MessageReader reader;
  // Tried first, on the message's bytes (message_reader.hpp); a message it
  // declines goes to the reader. Empty: none.
  EncodedReader encoded_reader;
  // Rung as messages arrive (see Arrivals); empty: none.
  std::shared_ptr<Arrivals> arrivals;
  // Claims-based security: a token on $cbs for each address before its
  // links open (Service Bus); empty: none.
  Claims claims;
  LogSink log;
};

}  // namespace babelqueue::amqp10
