// SPDX-License-Identifier: Apache-2.0
// The I/O thread (ADR 0007): the only code that calls rabbitmq-c for a
// transport. Each turn it takes the API threads' requests from SharedState,
// sends them, reads what the broker sent (deliveries, confirms, returns,
// cancels, channel and connection closes) without blocking, and otherwise
// sleeps in poll() on the socket and the wake-up eventfd, at most a quarter
// heartbeat. A lost connection is reopened with Options::reconnect_backoff,
// and Options::log hears of it (never under the lock).
#pragma once

#include "connection.hpp"
#include "consumers.hpp"
#include "publisher.hpp"
#include "queue_declarer.hpp"

#include <babelqueue/log_sink.hpp>
#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/result.hpp>

#include <amqp.h>

#include <chrono>
#include <string>

namespace babelqueue::rabbitmq::detail {

class SharedState;
class StatsJob;

// Holds everything only the I/O thread touches. Used by the I/O thread
// only; connect() and goodbye() also by the transport's open and close while
// no I/O thread runs.
class IoLoop {
 public:
  IoLoop(const rabbitmq::Transport::Options& options, SharedState& shared);

  // Opens the connection (the first time, or again after a loss).
  Result<void> connect();
  // The I/O thread's body: returns once the transport is closed.
  void run();
  // The goodbye (channel.close, connection.close) after run() returned,
  // waiting for the broker's replies until deadline (at least 100 ms).
  void goodbye(std::chrono::steady_clock::time_point deadline);

 private:
  // One turn of the loop. True when the transport is closing and everything
  // that can still be finished was.
  bool turn();
  void run_stats(StatsJob& job);
  // Reads what the broker sent. True when frames were handled (the loop
  // should come round again at once).
  bool read_frames();
  void handle_method(const amqp_frame_t& frame);
  // Waits for the broker's bytes or a request from an API thread.
  void sleep_until_readable();
  // Returns connected, or not connected once the transport is closed.
  void reconnect_with_backoff();
  // The connection broke: everything on the wire is void.
  void on_connection_lost(const ErrorInfo& why);
  // Bookkeeping when the broker closed one channel (the connection lives on).
  void on_channel_closed(amqp_channel_t channel, const ErrorInfo& why);
  // Fails the publish jobs whose deadline passed.
  void expire_jobs(const Locked& locked);
  // To Options::log; never called with the lock held.
  void log(LogLevel level, const std::string& line) const;

  const rabbitmq::Transport::Options& options_;
  SharedState& shared_;
  const std::string endpoint_;
  Connection connection_;
  QueueDeclarer declarer_;
  Publisher publisher_;
  ConsumerChannel consumers_;
};

}  // namespace babelqueue::rabbitmq::detail
