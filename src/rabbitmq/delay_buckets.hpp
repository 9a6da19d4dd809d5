// SPDX-License-Identifier: Apache-2.0
// Delay buckets (ADR 0011): a delayed publish or release waits in
// "<queue>.delay.<ms>", a queue whose message TTL dead-letters it back to
// <queue>. Everything here is pure, apart from KnownBuckets, which is a plain
// container the transport keeps under its mutex.
#pragma once

#include <amqp.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::rabbitmq::detail {

// The longest delay: RabbitMQ's x-message-ttl is a signed 32-bit count of ms.
inline constexpr std::chrono::milliseconds kMaxDelay{std::numeric_limits<std::int32_t>::max()};
// A bucket queue removes itself after this long unused, on top of twice its
// delay, and is re-declared (which counts as use) at least this often.
inline constexpr std::chrono::milliseconds kBucketExpiryMargin{std::chrono::minutes(10)};
inline constexpr std::chrono::milliseconds kBucketRedeclare{std::chrono::minutes(1)};

// The bucket of a delay: rounded up to two significant digits (at most 10%
// late, never early), at least 1 ms, at most kMaxDelay.
std::chrono::milliseconds bucket_of(std::chrono::milliseconds delay);

// "<queue>.delay.<bucket ms>"; bucket must be a bucket_of() value.
std::string bucket_queue_name(std::string_view queue, std::chrono::milliseconds bucket);

// The queue a bucket queue dead-letters to: its name up to the last
// ".delay." (the whole name when there is none).
std::string_view bucket_target(std::string_view bucket_queue);

// Where a message published to queue with delay goes: queue itself (bucket
// 0) when there is no delay, else its bucket queue.
struct Route {
  std::string routing_key;
  std::chrono::milliseconds bucket{0};
};
Route route_of(std::string_view queue, std::chrono::milliseconds delay);

// The queue.declare arguments of a bucket queue: x-message-ttl,
// x-dead-letter-exchange (the default exchange, ""), x-dead-letter-routing-key
// and x-expires.
struct BucketArguments {
  std::int64_t message_ttl = 0;
  std::string dead_letter_routing_key;
  std::int64_t expires = 0;
};
BucketArguments bucket_arguments(std::string_view bucket_queue, std::chrono::milliseconds bucket);

// True when a bucket queue declared at declared_at is due to be declared
// again, so that it never expires while it is used.
bool redeclare_due(std::chrono::steady_clock::time_point declared_at, std::chrono::steady_clock::time_point now);

// The buckets each queue has published into, so stats() can count what they
// hold. Used by API threads, under the transport's mutex.
class KnownBuckets {
 public:
  void add(const std::string& queue, std::chrono::milliseconds bucket);
  // queue's bucket queues and their buckets, shortest delay first.
  std::vector<std::pair<std::string, std::chrono::milliseconds>> of(const std::string& queue) const;

 private:
  std::map<std::string, std::set<std::chrono::milliseconds>, std::less<>> buckets_;
};

// The bucket_arguments() as an AMQP table. Non-owning: arguments must outlive
// the table, entries is its storage.
amqp_table_t bucket_table(const BucketArguments& arguments, std::vector<amqp_table_entry_t>& entries);

// The name of the delay bucket queue holding queue's messages delayed by
// delay: "<queue>.delay.<ms>" with the delay rounded up to two significant
// digits (bucket_of: at most 10% late), so retries with jittered backoff
// share a few buckets instead of creating one queue per value.
std::string delay_bucket_queue(std::string_view queue, std::chrono::milliseconds delay);

}  // namespace babelqueue::rabbitmq::detail
