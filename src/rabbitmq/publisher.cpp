// SPDX-License-Identifier: Apache-2.0
#include "publisher.hpp"

#include "amqp_projection.hpp"
#include "shared_state.hpp"

#include <algorithm>

namespace babelqueue::rabbitmq::detail {

// ---- ConfirmTracker -------------------------------------------------------

std::uint64_t ConfirmTracker::add(std::shared_ptr<PublishJob> job, std::size_t index) {
  const std::uint64_t seq = next_seq_++;
  pending_.push_back(Pending{seq, std::move(job), index});
  return seq;
}

std::vector<std::string> ConfirmTracker::confirm(const Locked& locked, std::uint64_t tag, bool multiple, bool ack) {
  std::vector<std::string> gone;
  auto settle = [&](Pending& pending) {
    PublishJob& job = *pending.job;
    PublishProgress& progress = job.progress(locked);
    if (progress.done) return;
    const PublishItem& item = job.items()[pending.index];
    if (pending.returned) {
      progress.fail(
          pending.index,
          ErrorInfo(Errc::not_found, pending.return_text).with_native(pending.return_code, pending.return_text));
      gone.push_back(item.routing_key);
    } else if (!ack) {
      progress.fail(pending.index, ErrorInfo(Errc::broker, "publish to " + item.queue +
                                                               ": the broker refused the message (basic.nack)")
                                       .with_native("basic.nack"));
    } else if (++progress.confirmed == job.items().size()) {
      progress.done = true;
    }
  };
  if (multiple) {
    while (!pending_.empty() && pending_.front().seq <= tag) {
      settle(pending_.front());
      pending_.pop_front();
    }
  } else {
    // Confirms of messages routed to different queues may come out of order.
    auto it = std::lower_bound(pending_.begin(), pending_.end(), tag,
                               [](const Pending& pending, std::uint64_t seq) { return pending.seq < seq; });
    if (it != pending_.end() && it->seq == tag) {
      settle(*it);
      pending_.erase(it);
    }
  }
  return gone;
}

void ConfirmTracker::returned(std::string_view routing_key, std::string_view body, int reply_code,
                              std::string_view reply_text) {
  for (Pending& pending : pending_) {
    const PublishItem& item = pending.job->items()[pending.index];
    if (!pending.returned && item.routing_key == routing_key && item.body == body) {
      pending.returned = true;
      pending.return_code = std::to_string(reply_code) + " " + std::string(reply_text);
      pending.return_text = "publish to " + item.queue + ": unroutable, the broker returned it (" +
                            std::to_string(reply_code) + " " + std::string(reply_text) +
                            "): the queue does not exist (deleted after it was declared?)";
      return;
    }
  }
}

void ConfirmTracker::fail_all(const Locked& locked, const ErrorInfo& why) {
  for (Pending& pending : pending_) pending.job->progress(locked).fail(pending.index, why);
  pending_.clear();
}

void ConfirmTracker::requeue(const Locked& locked) {
  for (Pending& pending : pending_) {
    PublishProgress& progress = pending.job->progress(locked);
    if (progress.done) continue;
    progress.to_send.push_front(pending.index);
    locked->publishes.push_front_once(pending.job);
  }
  pending_.clear();
}

// ---- Publisher ------------------------------------------------------------

Publisher::Publisher(const rabbitmq::Transport::Options& options, SharedState& shared, Connection& connection,
                     QueueDeclarer& declarer)
    : options_(options), shared_(shared), connection_(connection), declarer_(declarer) {}

void Publisher::send() {
  while (true) {
    std::shared_ptr<PublishJob> job;
    std::size_t index = 0;
    {
      Locked locked = shared_.lock();
      if (!window_open()) return;
      auto next = locked->publishes.next(locked);
      if (!next) return;
      job = std::move(next->job);
      index = next->index;
    }
    const PublishItem& item = job->items()[index];
    auto declared = declarer_.ensure_declared(item.queue);
    if (declared && item.bucket.count() > 0) declared = declarer_.ensure_declared(item.routing_key, item.bucket);
    if (!declared) {
      Locked locked = shared_.lock();
      if (connection_.lost()) {
        job->progress(locked).to_send.push_front(index);
        return;
      }
      job->progress(locked).fail(index, declared.error());
      shared_.job_done.notify_all();
      continue;
    }
    std::vector<amqp_table_entry_t> entries;
    const amqp_basic_properties_t props = properties(item.projection, entries);
    const int status = amqp_basic_publish(connection_.get(), kPublishChannel, amqp_empty_bytes,
                                          bytes_of(item.routing_key), 1, 0, &props, bytes_of(item.body));
    Locked locked = shared_.lock();
    PublishProgress& progress = job->progress(locked);
    if (status != AMQP_STATUS_OK) {
      progress.to_send.push_front(index);
      connection_.set_lost(ErrorInfo(Errc::connection, "publish to " + item.queue + ": " + status_text(status)));
      return;
    }
    progress.sent = true;
    if (options_.confirm) {
      confirms_.add(job, index);
    } else if (++progress.confirmed == job->items().size()) {
      progress.done = true;
      shared_.job_done.notify_all();
    }
  }
}

void Publisher::on_confirm(std::uint64_t tag, bool multiple, bool ack) {
  std::vector<std::string> gone;
  {
    Locked locked = shared_.lock();
    gone = confirms_.confirm(locked, tag, multiple, ack);
    shared_.job_done.notify_all();
  }
  for (const std::string& routing_key : gone) declarer_.forget(routing_key);
}

void Publisher::on_return(const amqp_basic_return_t& returned, const amqp_message_t& message) {
  confirms_.returned(view(returned.routing_key), view(message.body), returned.reply_code, view(returned.reply_text));
}

void Publisher::on_channel_closed(const ErrorInfo& why) {
  {
    Locked locked = shared_.lock();
    confirms_.fail_all(locked, why);
    shared_.job_done.notify_all();
  }
  confirms_.restart_numbering();
}

void Publisher::on_close(const Locked& locked) {
  confirms_.fail_all(locked, ErrorInfo(Errc::closed, "publish: the transport was closed before the broker confirmed"));
}

}  // namespace babelqueue::rabbitmq::detail
