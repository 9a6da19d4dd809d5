// SPDX-License-Identifier: Apache-2.0
#include "publish_jobs.hpp"

#include "delay_buckets.hpp"
#include "shared_state.hpp"

#include <algorithm>

namespace babelqueue::rabbitmq::detail {

Result<std::vector<PublishItem>> publish_items(std::span<const OutgoingMessage> messages) {
  std::vector<PublishItem> items;
  items.reserve(messages.size());
  for (const OutgoingMessage& message : messages) {
    if (message.queue.empty()) return unexpected(Errc::invalid_argument, "publish: empty queue name");
    if (message.queue.size() > 255) {
      return unexpected(Errc::invalid_argument, "publish: queue name longer than 255 bytes");
    }
    if (message.options.delay.count() < 0 || message.options.delay > kMaxDelay) {
      return unexpected(Errc::invalid_argument, "publish to " + message.queue + ": delay out of range");
    }
    auto projection = project(message.body, message.options.headers, message.options.contract);
    if (!projection) return unexpected(projection.error());
    Route route = route_of(message.queue, message.options.delay);
    PublishItem item;
    item.queue = message.queue;
    item.bucket = route.bucket;
    item.routing_key = std::move(route.routing_key);
    item.body = message.body;
    item.projection = std::move(*projection);
    items.push_back(std::move(item));
  }
  return items;
}

void PublishProgress::fail(std::size_t index, const ErrorInfo& why) {
  if (done) return;
  error = why;
  failed_index = index;
  done = true;
}

PublishJob::PublishJob(std::vector<PublishItem> items, Clock::time_point deadline)
    : items_(std::move(items)), deadline_(deadline) {
  for (std::size_t i = 0; i < items_.size(); ++i) progress_.to_send.push_back(i);
}

ErrorInfo publish_error(const PublishProgress& progress, std::size_t items) {
  const ErrorInfo& error = *progress.error;
  if (items == 1) return error;
  const std::size_t index = progress.failed_index.value_or(progress.confirmed);
  return ErrorInfo(error.code(), "publish_batch: message " + std::to_string(index) + " of " + std::to_string(items) +
                                     " failed (" + std::to_string(progress.confirmed) +
                                     " confirmed): " + error.message());
}

void PublishQueue::push_front_once(const std::shared_ptr<PublishJob>& job) {
  if (std::find(jobs_.begin(), jobs_.end(), job) == jobs_.end()) jobs_.push_front(job);
}

std::optional<PublishQueue::Next> PublishQueue::next(const Locked& locked) {
  while (!jobs_.empty()) {
    PublishProgress& progress = jobs_.front()->progress(locked);
    if (!progress.done && !progress.to_send.empty()) break;
    jobs_.pop_front();
  }
  if (jobs_.empty()) return std::nullopt;
  Next next{jobs_.front(), 0};
  PublishProgress& progress = next.job->progress(locked);
  next.index = progress.to_send.front();
  progress.to_send.pop_front();
  return next;
}

bool PublishQueue::expire(const Locked& locked, Clock::time_point now, const std::string& endpoint,
                          std::chrono::milliseconds timeout) {
  bool any = false;
  for (auto& job : jobs_) {
    PublishProgress& progress = job->progress(locked);
    if (!progress.done && now >= job->deadline()) {
      const std::string& last_error = locked->last_error;
      progress.fail(progress.to_send.empty() ? 0 : progress.to_send.front(),
                    ErrorInfo(progress.sent ? Errc::outcome_unknown : Errc::timeout,
                              "publish: not confirmed by " + endpoint + " within " + std::to_string(timeout.count()) +
                                  " ms (last error: " + (last_error.empty() ? "none" : last_error) +
                                  "; the message may or may not have been published)"));
      any = true;
    }
  }
  std::erase_if(jobs_, [&](const auto& job) { return job->progress(locked).done; });
  return any;
}

void PublishQueue::fail_all(const Locked& locked, const ErrorInfo& why) {
  for (auto& job : jobs_) {
    PublishProgress& progress = job->progress(locked);
    progress.fail(progress.to_send.empty() ? 0 : progress.to_send.front(), why);
  }
  jobs_.clear();
}

}  // namespace babelqueue::rabbitmq::detail
