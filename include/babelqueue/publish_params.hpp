// SPDX-License-Identifier: Apache-2.0
// PublishParams: what a caller says about one publish beyond the message
// itself, shared by Worker::publish and Publisher.
#pragma once

#include <babelqueue/transport.hpp>  // Headers

#include <chrono>
#include <string>

namespace babelqueue {

/// Where and how one publish (Worker::publish, Publisher) sends a message.
struct PublishParams {
  std::string queue;                   ///< empty = the worker's (or publisher's) default queue
  std::string trace_id;                ///< continue this trace; empty = start one
  Headers headers;                     ///< out-of-band headers
  std::chrono::milliseconds delay{0};  ///< deliver no earlier than now + delay (where Capabilities::native_delay)
  /// Ordering / partitioning key (Kafka record key, SQS FIFO message group);
  /// honoured where Capabilities::ordering_key, ignored elsewhere.
  std::string ordering_key;
  /// Broker-side deduplication id (SQS FIFO MessageDeduplicationId); honoured
  /// where Capabilities::deduplication, ignored elsewhere.
  std::string dedup_id;
};

}  // namespace babelqueue
