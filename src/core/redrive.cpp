// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/redrive.hpp>
#include <babelqueue/uuid.hpp>

#include <algorithm>
#include <deque>
#include <string>

namespace babelqueue {

namespace {

// Takes every message available now (up to max), holding them reserved, so
// that restored messages are never seen twice in one run.
Result<std::deque<Delivery>> drain_reserved(Transport& transport, std::string_view dlq, const RedriveOptions& options) {
  std::deque<Delivery> taken;
  for (;;) {
    std::size_t want = 64;
    if (options.max != 0) {
      if (taken.size() >= options.max) break;
      want = std::min(want, options.max - taken.size());
    }
    auto batch = transport.receive(dlq, want, options.wait);
    if (!batch) {
      if (taken.empty()) return unexpected(batch.error());
      break;  // keep what was taken; it is processed and settled below
    }
    if (batch->empty()) break;
    for (auto& d : *batch) taken.push_back(std::move(d));
  }
  return taken;
}

}  // namespace

Result<RedriveResult> redrive(Transport& transport, std::string_view dead_letter_queue, const RedriveOptions& options) {
  RedriveResult progress;
  return redrive(transport, dead_letter_queue, options, progress);
}

Result<RedriveResult> redrive(Transport& transport, std::string_view dead_letter_queue, const RedriveOptions& options,
                              RedriveResult& progress) {
  progress = RedriveResult{};
  auto taken = drain_reserved(transport, dead_letter_queue, options);
  if (!taken) return unexpected(taken.error());
  RedriveResult& result = progress;
  auto restore = [&](const Delivery& d, RedriveItem& item, std::string note) {
    item.note = std::move(note);
    ++result.skipped;
    if (auto r = transport.release(d); !r) item.note += " (restore failed: " + r.error().message() + ")";
  };
  std::deque<Delivery>& deliveries = *taken;
  while (!deliveries.empty()) {
    Delivery d = std::move(deliveries.front());
    deliveries.pop_front();
    RedriveItem item;
    item.from = std::string(dead_letter_queue);
    // A dead-letter copy carries its block on top of the original body, so
    // a body near the decode size limit is over it in the dead-letter queue:
    // read it whatever its size, and hold the redriven body (the block
    // removed) to the limit a consumer applies.
    DecodeOptions limits;
    limits.max_bytes = std::max(limits.max_bytes, d.body.size());
    auto env = Envelope::decode(d.body, limits);
    if (!env) {
      restore(d, item, "not a readable envelope (" + env.error().message() + ")");
      result.items.push_back(std::move(item));
      continue;
    }
    if (auto verdict = accepts(*env); !verdict) {
      restore(d, item, "not a readable envelope (" + std::string(to_string(*verdict.reason())) + ")");
      result.items.push_back(std::move(item));
      continue;
    }
    item.message_id = env->id();
    item.trace_id = env->trace_id();
    item.urn = env->urn();
    const auto block = env->dead_letter();
    if (block) item.reason = block->reason;
    if (!options.to_queue.empty()) {
      item.to = options.to_queue;
    } else if (block && !block->original_queue.empty()) {
      item.to = block->original_queue;
    } else {
      item.to = env->queue();
    }
    if (options.select && !options.select(*env)) {
      restore(d, item, "not selected");
    } else if (options.dry_run) {
      restore(d, item, "dry run");
    } else if (item.to.empty()) {
      restore(d, item, "no target queue");
    } else {
      auto body = env->encode_redriven();
      if (body && body->size() > DecodeOptions{}.max_bytes) {
        restore(d, item,
                "too large to redrive: " + std::to_string(body->size()) + " bytes, above the " +
                    std::to_string(DecodeOptions{}.max_bytes) +
                    "-byte limit of a consumer's decode (it would be poison)");
        result.items.push_back(std::move(item));
        continue;
      }
      PublishOptions publish;
      publish.headers = d.headers;
      publish.headers.erase(std::string(kDeadLetterReasonHeader));
      // Back into the partition or message group it was dead-lettered from.
      publish.ordering_key = d.ordering_key;
      // A deduplication id of its own: the redriven body equals the original
      // publish, which a broker that deduplicates (SQS FIFO, for 5 minutes)
      // would otherwise drop while the dead-lettered copy is deleted.
      publish.dedup_id = std::string(env->id()) + ":redrive:" + uuid_v4();
      if (options.bypass) publish.headers[std::string(kReplayBypassHeader)] = "1";
      auto published = body ? transport.publish(item.to, *body, publish) : Result<void>(unexpected(body.error()));
      if (!published) {
        const std::string target = item.to;
        restore(d, item, "publish failed: " + published.error().message());
        result.items.push_back(std::move(item));
        result.error = published.error();
        for (const Delivery& rest : deliveries) {
          RedriveItem skipped;
          skipped.from = std::string(dead_letter_queue);
          restore(rest, skipped, "not processed after an earlier failure");
          result.items.push_back(std::move(skipped));
        }
        const ErrorInfo& cause = published.error();
        return unexpected(cause.with_message(
            "redrive of " + std::string(dead_letter_queue) + " stopped after " + std::to_string(result.redriven) +
            " redriven: publishing to " + target + " failed: " + cause.message() + "; that message and " +
            std::to_string(deliveries.size()) + " later one(s) were restored to the dead-letter queue"));
      }
      item.redriven = true;
      item.bypassed = options.bypass;
      ++result.redriven;
      if (auto r = transport.ack(d); !r) {
        item.note = "redriven, but removing it from the dead-letter queue failed: " + r.error().message();
      }
    }
    result.items.push_back(std::move(item));
  }
  return result;
}

}  // namespace babelqueue
