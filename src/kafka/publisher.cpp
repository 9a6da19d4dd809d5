// SPDX-License-Identifier: Apache-2.0
#include "publisher.hpp"

#include "kafka_record.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace babelqueue::kafka::detail {
namespace {

// The record for body on topic: out-of-band headers (contract names are the
// SDK's own: dropped), then the bq- projection; timestamp = meta.created_at.
void fill_record(OutgoingRecord& out, const std::string& topic, std::string_view body, const PublishOptions& options,
                 std::optional<std::int64_t> attempts_override) {
  out.topic = topic;
  out.value = body;
  out.has_key = !options.ordering_key.empty();
  out.key = options.ordering_key;
  rd_kafka_headers_t* headers = out.headers.get();
  for (const auto& [name, value] : options.headers) {
    if (!name.empty() && !value.empty() && !is_reserved_header(name)) add_header(headers, name, value);
  }
  auto add = [headers](std::string_view name, std::string_view value) { add_header(headers, name, value); };
  // The Worker hands over the fields it built; anyone else's body is read here.
  const std::optional<Projected> projected = options.contract != nullptr
                                                 ? project_fields(*options.contract, add, attempts_override)
                                                 : project_with(body, add, attempts_override);
  if (projected) {
    out.timestamp = projected->created_at.value_or(0);
  } else if (attempts_override) {
    add_header(headers, kAttemptsHeader, std::to_string(*attempts_override));
  }
}

}  // namespace

Result<void> Publisher::publish(std::string_view queue, std::string_view body, const PublishOptions& options,
                                std::optional<std::int64_t> attempts_override) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "publish needs a topic name");
  if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
  const std::string topic = topic_for_queue(queue);
  std::string parked_topic;
  OutgoingRecord out;
  fill_record(out, topic, body, options, attempts_override);
  if (options.delay.count() > 0) {
    auto tier = tiers_.tier_for(topic, options.delay);
    if (!tier) return unexpected(tier.error());
    parked_topic = tiers_.topic(topic, *tier);
    out.topic = parked_topic;
    add_header(out.headers.get(), kDelayHeader, std::to_string(options.delay.count()));
    add_header(out.headers.get(), kOriginalTopicHeader, topic);
    out.timestamp = epoch_ms();  // the parking time: due = timestamp + tier delay
    if (auto ensured = admin_.ensure(topic); !ensured) return ensured;
    if (auto ensured = admin_.ensure(parked_topic, true); !ensured) return ensured;
  } else {
    if (auto ensured = admin_.ensure(topic); !ensured) return ensured;
  }
  return producer_.produce_one(out);
}

Result<void> Publisher::publish_batch(std::span<const OutgoingMessage> messages) {
  if (closed_.load()) return unexpected(Errc::closed, "the Kafka transport is closed");
  std::size_t published = 0;  // confirmed, for the error message
  std::optional<Producer::Publication> publication;
  // The records of publication are confirmed (or the first failure).
  auto confirm = [&]() -> Result<void> {
    if (!publication) return {};
    auto reported = publication->finish();
    if (reported) published += publication->produced();
    publication.reset();
    return reported;
  };
  auto failed = [&](const ErrorInfo& error) -> Result<void> {
    const std::size_t before = published + (publication ? publication->produced() : 0);
    (void)confirm();
    return unexpected(error.code(),
                      error.message() + " (" + std::to_string(before) + " earlier records of the batch were produced)");
  };
  // Records are built a chunk at a time, then produced together: the broker
  // thread starts sending the first chunk while the next is built, and is
  // woken once per chunk rather than once per record.
  constexpr std::size_t kChunk = 64;
  std::vector<OutgoingRecord> built;
  built.reserve(std::min(messages.size(), kChunk));
  auto produce_built = [&]() -> Result<void> {
    if (built.empty()) return {};
    if (!publication) publication.emplace(producer_);
    for (OutgoingRecord& out : built) {
      if (auto added = publication->add(out); !added) {
        built.clear();
        return failed(added.error());
      }
    }
    built.clear();
    return {};
  };
  std::string topic;  // the topic of previous_queue (empty before the first); the built records keep views of it
  std::string_view previous_queue;
  for (const OutgoingMessage& message : messages) {
    if (message.queue.empty()) {
      (void)produce_built();
      return failed(ErrorInfo(Errc::invalid_argument, "publish needs a topic name"));
    }
    if (message.options.delay.count() > 0) {
      // Parked records go one by one (a retry topic per tier), after the
      // records before them are confirmed.
      if (auto sent = produce_built(); !sent) return sent;
      if (auto sent = confirm(); !sent) return sent;
      if (auto sent = publish(message.queue, message.body, message.options, std::nullopt); !sent) {
        return failed(sent.error());
      }
      ++published;
      continue;
    }
    if (topic.empty() || message.queue != previous_queue) {
      if (auto sent = produce_built(); !sent) return sent;
      topic = topic_for_queue(message.queue);
      if (auto ensured = admin_.ensure(topic); !ensured) return failed(ensured.error());
      previous_queue = message.queue;
    }
    fill_record(built.emplace_back(), topic, message.body, message.options, std::nullopt);
    if (built.size() == kChunk) {
      if (auto sent = produce_built(); !sent) return sent;
    }
  }
  if (auto sent = produce_built(); !sent) return sent;
  return confirm();
}

}  // namespace babelqueue::kafka::detail
