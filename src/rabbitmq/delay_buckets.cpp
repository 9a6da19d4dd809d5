// SPDX-License-Identifier: Apache-2.0
#include "delay_buckets.hpp"

#include "amqp_projection.hpp"

#include <babelqueue/rabbitmq/transport.hpp>

#include <algorithm>

namespace babelqueue::rabbitmq {
namespace detail {

using std::chrono::milliseconds;

milliseconds bucket_of(milliseconds delay) {
  // Round up to two significant digits: 1234 ms -> 1300 ms, 45678 -> 46000.
  std::int64_t value = std::max<std::int64_t>(delay.count(), 1);
  std::int64_t scale = 1;
  while (value >= 100) {
    value = (value + 9) / 10;
    scale *= 10;
  }
  return std::min(milliseconds(value * scale), kMaxDelay);
}

std::string bucket_queue_name(std::string_view queue, milliseconds bucket) {
  return std::string(queue) + ".delay." + std::to_string(bucket.count());
}

std::string_view bucket_target(std::string_view bucket_queue) {
  return bucket_queue.substr(0, bucket_queue.rfind(".delay."));
}

Route route_of(std::string_view queue, milliseconds delay) {
  Route route;
  route.bucket = delay.count() > 0 ? bucket_of(delay) : milliseconds(0);
  route.routing_key = route.bucket.count() > 0 ? bucket_queue_name(queue, route.bucket) : std::string(queue);
  return route;
}

BucketArguments bucket_arguments(std::string_view bucket_queue, milliseconds bucket) {
  BucketArguments arguments;
  arguments.message_ttl = bucket.count();
  arguments.dead_letter_routing_key = std::string(bucket_target(bucket_queue));
  arguments.expires = (bucket * 2 + kBucketExpiryMargin).count();
  return arguments;
}

bool redeclare_due(std::chrono::steady_clock::time_point declared_at, std::chrono::steady_clock::time_point now) {
  return now - declared_at >= kBucketRedeclare;
}

void KnownBuckets::add(const std::string& queue, milliseconds bucket) { buckets_[queue].insert(bucket); }

std::vector<std::pair<std::string, milliseconds>> KnownBuckets::of(const std::string& queue) const {
  std::vector<std::pair<std::string, milliseconds>> out;
  if (auto it = buckets_.find(queue); it != buckets_.end()) {
    for (milliseconds bucket : it->second) out.emplace_back(bucket_queue_name(queue, bucket), bucket);
  }
  return out;
}

amqp_table_t bucket_table(const BucketArguments& arguments, std::vector<amqp_table_entry_t>& entries) {
  amqp_table_entry_t ttl{};
  ttl.key = bytes_of("x-message-ttl");
  ttl.value.kind = AMQP_FIELD_KIND_I64;
  ttl.value.value.i64 = arguments.message_ttl;
  amqp_table_entry_t exchange{};
  exchange.key = bytes_of("x-dead-letter-exchange");
  exchange.value.kind = AMQP_FIELD_KIND_UTF8;
  exchange.value.value.bytes = bytes_of("");
  amqp_table_entry_t routing{};
  routing.key = bytes_of("x-dead-letter-routing-key");
  routing.value.kind = AMQP_FIELD_KIND_UTF8;
  routing.value.value.bytes = bytes_of(arguments.dead_letter_routing_key);
  amqp_table_entry_t expires{};
  expires.key = bytes_of("x-expires");
  expires.value.kind = AMQP_FIELD_KIND_I64;
  expires.value.value.i64 = arguments.expires;
  entries = {ttl, exchange, routing, expires};
  return amqp_table_t{static_cast<int>(entries.size()), entries.data()};
}

std::string delay_bucket_queue(std::string_view queue, std::chrono::milliseconds delay) {
  return bucket_queue_name(queue, bucket_of(delay));
}

}  // namespace detail

}  // namespace babelqueue::rabbitmq
