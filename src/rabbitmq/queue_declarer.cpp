// SPDX-License-Identifier: Apache-2.0
#include "queue_declarer.hpp"

#include "amqp_projection.hpp"
#include "delay_buckets.hpp"

#include <vector>

namespace babelqueue::rabbitmq::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

QueueDeclarer::QueueDeclarer(const rabbitmq::Transport::Options& options, Connection& connection)
    : options_(options), connection_(connection) {}

Result<std::uint32_t> QueueDeclarer::declare(const std::string& queue, milliseconds bucket) {
  amqp_table_t arguments = amqp_empty_table;
  std::vector<amqp_table_entry_t> entries;
  BucketArguments bucket_arguments;
  if (bucket.count() > 0) {
    // A delay bucket: messages wait their TTL, then RabbitMQ dead-letters
    // them through the default exchange back to the queue.
    bucket_arguments = detail::bucket_arguments(queue, bucket);
    arguments = bucket_table(bucket_arguments, entries);
  } else if (options_.queue_type == rabbitmq::Transport::QueueType::quorum) {
    amqp_table_entry_t type{};
    type.key = bytes_of("x-queue-type");
    type.value.kind = AMQP_FIELD_KIND_UTF8;
    type.value.value.bytes = bytes_of("quorum");
    entries = {type};
    arguments.num_entries = static_cast<int>(entries.size());
    arguments.entries = entries.data();
  }
  const amqp_queue_declare_ok_t* ok =
      amqp_queue_declare(connection_.get(), kControlChannel, bytes_of(queue), 0, 1, 0, 0, arguments);
  if (auto checked = connection_.check_rpc(kControlChannel, "declare queue " + queue); !checked) {
    return unexpected(checked.error());
  }
  declared_[queue] = Clock::now();
  return ok->message_count;
}

Result<void> QueueDeclarer::ensure_declared(const std::string& queue, milliseconds bucket) {
  auto it = declared_.find(queue);
  if (it != declared_.end() && (bucket.count() == 0 || !redeclare_due(it->second, Clock::now()))) return {};
  auto declared = declare(queue, bucket);
  if (!declared) return unexpected(declared.error());
  return {};
}

void QueueDeclarer::forget(std::string_view queue) {
  if (auto it = declared_.find(queue); it != declared_.end()) declared_.erase(it);
}

}  // namespace babelqueue::rabbitmq::detail
