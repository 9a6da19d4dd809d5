// SPDX-License-Identifier: Apache-2.0
// Queue declarations on the control channel: the transport's queues
// (durable; x-queue-type=quorum when asked) and their delay buckets, and when
// each was last declared, so a publish declares its queue once per
// connection and a bucket at least every kBucketRedeclare.
#pragma once

#include "connection.hpp"

#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/result.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace babelqueue::rabbitmq::detail {

// Used by the I/O thread only.
class QueueDeclarer {
 public:
  QueueDeclarer(const rabbitmq::Transport::Options& options, Connection& connection);

  // Declares queue (a delay bucket queue when bucket > 0) and answers its
  // ready count. A failure on the control channel leaves the connection up.
  Result<std::uint32_t> declare(const std::string& queue, std::chrono::milliseconds bucket = {});
  // Declares queue unless it was declared on this connection already (and,
  // for a bucket, recently enough).
  Result<void> ensure_declared(const std::string& queue, std::chrono::milliseconds bucket = {});
  // queue may be gone (a publish to it came back, its consumer was
  // cancelled): the next use declares it again.
  void forget(std::string_view queue);
  // A new connection: nothing is declared on it yet.
  void forget_all() { declared_.clear(); }

 private:
  const rabbitmq::Transport::Options& options_;
  Connection& connection_;
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> declared_;
};

}  // namespace babelqueue::rabbitmq::detail
