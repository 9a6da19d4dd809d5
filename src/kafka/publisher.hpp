// SPDX-License-Identifier: Apache-2.0
// Publishing: a queue's message as a record of its topic (the body byte for
// byte, the bq- header projection, out-of-band headers, the ordering key as
// the record key, meta.created_at as the timestamp), or parked on the retry
// tier covering its delay; produced through the Producer.
//
// Threads: any; it holds no state of its own.
#pragma once

#include "producer.hpp"
#include "retry_tiers.hpp"
#include "topic_admin.hpp"

#include <babelqueue/transport.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace babelqueue::kafka::detail {

class Publisher {
 public:
  // Everything it is given must outlive it.
  Publisher(const std::atomic<bool>& closed, const RetryTiers& tiers, TopicAdmin& admin, Producer& producer)
      : closed_(closed), tiers_(tiers), admin_(admin), producer_(producer) {}

  // Publishes body to queue's topic and waits for the delivery report;
  // attempts_override replaces the body's count in bq-attempts (a release).
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options,
                       std::optional<std::int64_t> attempts_override);

  // Produces every record, then waits for all delivery reports; stops at the
  // first failure and counts the records before it in the error.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages);

 private:
  const std::atomic<bool>& closed_;
  const RetryTiers& tiers_;
  TopicAdmin& admin_;
  Producer& producer_;
};

}  // namespace babelqueue::kafka::detail
