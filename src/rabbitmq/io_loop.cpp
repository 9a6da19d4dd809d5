// SPDX-License-Identifier: Apache-2.0
#include "io_loop.hpp"

#include "amqp_projection.hpp"
#include "shared_state.hpp"

#include <poll.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace babelqueue::rabbitmq::detail {
namespace {

using std::chrono::milliseconds;

// Frames handled in one go before the I/O thread looks at its requests again,
// so acks and publishes are not starved by a flood of deliveries.
constexpr int kFramesPerTurn = 256;

// " after 1 failed attempt", " after 2 failed attempts"; nothing for none.
std::string after_failures(std::int64_t failures) {
  if (failures == 0) return {};
  return " after " + std::to_string(failures) + " failed attempt" + (failures == 1 ? "" : "s");
}

}  // namespace

IoLoop::IoLoop(const rabbitmq::Transport::Options& options, SharedState& shared)
    : options_(options),
      shared_(shared),
      endpoint_(endpoint_of(options)),
      connection_(options, [this](amqp_channel_t channel, const ErrorInfo& why) { on_channel_closed(channel, why); }),
      declarer_(options, connection_),
      publisher_(options, shared, connection_, declarer_),
      consumers_(options, shared, connection_, declarer_) {}

Result<void> IoLoop::connect() {
  if (auto opened = connection_.open(); !opened) return opened;
  publisher_.on_connected();
  declarer_.forget_all();
  Locked locked = shared_.lock();
  locked->connected = true;
  return {};
}

void IoLoop::goodbye(std::chrono::steady_clock::time_point deadline) {
  if (!connection_.is_open()) return;
  // The goodbye waits for replies: bound it by what is left of the deadline.
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  connection_.set_rpc_timeout(std::max(left, milliseconds(100)));
  connection_.close();
}

void IoLoop::run() {
  while (true) {
    if (!connection_.is_open()) {
      reconnect_with_backoff();
      if (!connection_.is_open()) break;  // closed while reconnecting
    }
    const bool closing = turn();
    if (connection_.lost()) {
      const ErrorInfo why = *connection_.lost();
      on_connection_lost(why);
      continue;
    }
    if (closing) break;
  }
  // Closing: whatever was never sent fails.
  Locked locked = shared_.lock();
  locked->publishes.fail_all(locked,
                             ErrorInfo(Errc::closed, "publish: the transport was closed before the message was sent"));
  publisher_.on_close(locked);
  for (auto& job : locked->stats_jobs) job->answer(locked).done = true;
  locked->stats_jobs.clear();
  locked->connected = false;
  shared_.job_done.notify_all();
}

bool IoLoop::turn() {
  std::vector<Settle> settles;
  std::vector<std::shared_ptr<StatsJob>> stats_jobs;
  std::vector<std::string> to_start;
  bool closing = false;
  {
    Locked locked = shared_.lock();
    settles = locked->consumers.take_settles();
    stats_jobs.swap(locked->stats_jobs);
    closing = locked->closed;
    if (!closing) to_start = locked->consumers.claim_starts();
    expire_jobs(locked);
  }
  if (!consumers_.send_settles(settles)) return false;
  for (auto& job : stats_jobs) {
    run_stats(*job);
    if (connection_.lost()) return false;
  }
  if (!stats_jobs.empty()) shared_.job_done.notify_all();
  for (const std::string& queue : to_start) {
    consumers_.start(queue);
    if (connection_.lost()) return false;
  }
  publisher_.send();
  if (connection_.lost()) return false;
  const bool busy = read_frames();
  if (connection_.lost()) return false;
  if (closing) {
    Locked locked = shared_.lock();
    // Closing waits for confirms of what is on the wire, up to the deadline.
    if (publisher_.idle() || Clock::now() >= locked->close_deadline) return true;
  }
  if (!busy) sleep_until_readable();
  return false;
}

void IoLoop::expire_jobs(const Locked& locked) {
  if (locked->publishes.expire(locked, Clock::now(), endpoint_, options_.publish_timeout)) {
    shared_.job_done.notify_all();
  }
}

void IoLoop::run_stats(StatsJob& job) {
  auto ready = declarer_.declare(job.queue());
  std::int64_t delayed = 0;
  if (ready) {
    for (const auto& [bucket_queue, bucket] : job.buckets()) {
      auto count = declarer_.declare(bucket_queue, bucket);
      if (count) delayed += *count;
      if (connection_.lost()) break;
    }
  }
  Locked locked = shared_.lock();
  StatsJob::Answer& answer = job.answer(locked);
  if (ready) {
    answer.ready = *ready;
    answer.delayed = delayed;
  } else {
    answer.error = ready.error();
  }
  answer.done = true;
}

bool IoLoop::read_frames() {
  bool handled = false;
  const timeval zero{};
  for (int i = 0; i < kFramesPerTurn; ++i) {
    amqp_frame_t frame;
    timeval poll_now = zero;
    const int status = amqp_simple_wait_frame_noblock(connection_.get(), &frame, &poll_now);
    if (status == AMQP_STATUS_TIMEOUT) break;
    if (status != AMQP_STATUS_OK) {
      connection_.set_lost(ErrorInfo(Errc::connection, "connection to " + endpoint_ + " lost: " + status_text(status)));
      break;
    }
    handled = true;
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;  // stray content of a skipped message
    handle_method(frame);
    if (connection_.lost()) break;
  }
  consumers_.nack_strays();
  if (amqp_release_buffers_ok(connection_.get())) amqp_release_buffers(connection_.get());
  consumers_.hand_over();
  return handled;
}

void IoLoop::handle_method(const amqp_frame_t& frame) {
  const amqp_channel_t channel = frame.channel;
  switch (frame.payload.method.id) {
    case AMQP_BASIC_DELIVER_METHOD: {
      const amqp_basic_deliver_t deliver = *static_cast<const amqp_basic_deliver_t*>(frame.payload.method.decoded);
      amqp_message_t message;
      const amqp_rpc_reply_t read = amqp_read_message(connection_.get(), channel, &message, 0);
      if (read.reply_type != AMQP_RESPONSE_NORMAL) {
        connection_.set_lost(failure_of(read, "reading a delivery").info);
        return;
      }
      consumers_.on_deliver(deliver, message);
      amqp_destroy_message(&message);
      return;
    }
    case AMQP_BASIC_ACK_METHOD: {
      const auto* ack = static_cast<const amqp_basic_ack_t*>(frame.payload.method.decoded);
      publisher_.on_confirm(ack->delivery_tag, ack->multiple != 0, true);
      return;
    }
    case AMQP_BASIC_NACK_METHOD: {
      const auto* nack = static_cast<const amqp_basic_nack_t*>(frame.payload.method.decoded);
      publisher_.on_confirm(nack->delivery_tag, nack->multiple != 0, false);
      return;
    }
    case AMQP_BASIC_RETURN_METHOD: {
      const amqp_basic_return_t returned = *static_cast<const amqp_basic_return_t*>(frame.payload.method.decoded);
      amqp_message_t message;
      const amqp_rpc_reply_t read = amqp_read_message(connection_.get(), channel, &message, 0);
      if (read.reply_type != AMQP_RESPONSE_NORMAL) {
        connection_.set_lost(failure_of(read, "reading a returned message").info);
        return;
      }
      publisher_.on_return(returned, message);
      amqp_destroy_message(&message);
      return;
    }
    case AMQP_BASIC_CANCEL_METHOD: {
      consumers_.on_cancel(*static_cast<const amqp_basic_cancel_t*>(frame.payload.method.decoded));
      return;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      const auto* close = static_cast<const amqp_channel_close_t*>(frame.payload.method.decoded);
      const ErrorInfo why(Errc::broker, "broker closed channel " + std::to_string(channel) + ": " +
                                            std::to_string(close->reply_code) + " " +
                                            std::string(view(close->reply_text)));
      connection_.on_channel_close(channel, why);
      return;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      const auto* close = static_cast<const amqp_connection_close_t*>(frame.payload.method.decoded);
      connection_.on_connection_close(
          ErrorInfo(Errc::connection, "broker closed the connection: " + std::to_string(close->reply_code) + " " +
                                          std::string(view(close->reply_text))));
      return;
    }
    default: return;
  }
}

void IoLoop::sleep_until_readable() {
  {
    Locked locked = shared_.lock();
    const bool work = locked->consumers.has_settles() || !locked->stats_jobs.empty() || locked->closed ||
                      (!locked->publishes.empty() && publisher_.window_open()) || locked->consumers.has_starts();
    if (work) return;
    locked->io_sleeping = true;
  }
  if (amqp_frames_enqueued(connection_.get()) == 0 && amqp_data_in_buffer(connection_.get()) == 0) {
    pollfd fds[2];
    fds[0] = pollfd{amqp_get_sockfd(connection_.get()), POLLIN, 0};
    fds[1] = pollfd{shared_.wake_fd.fd(), POLLIN, 0};
    // At most a quarter heartbeat, so heartbeats keep flowing on an idle
    // connection.
    milliseconds timeout(200);
    if (options_.heartbeat.count() > 0) {
      timeout = std::min(timeout, std::chrono::duration_cast<milliseconds>(options_.heartbeat) / 4);
    }
    ::poll(fds, 2, static_cast<int>(timeout.count()));
    if ((fds[1].revents & POLLIN) != 0) shared_.wake_fd.drain();
  }
  Locked locked = shared_.lock();
  locked->io_sleeping = false;
}

void IoLoop::reconnect_with_backoff() {
  std::int64_t failures = 0;
  milliseconds pause = options_.reconnect_backoff.delay_for(1);
  while (true) {
    bool closed = false;
    std::string last_error;
    {
      Locked locked = shared_.lock();
      expire_jobs(locked);
      closed = shared_.reconnect_wait.wait_for(locked.lock(), pause, [&] { return locked->closed; });
      if (closed) last_error = locked->last_error;
    }
    if (closed) {
      log(LogLevel::warning, "rabbitmq: closed while reconnecting to " + endpoint_ + "; giving up" +
                                 after_failures(failures) + " (last error: " + last_error + ")");
      return;
    }
    auto connected = connect();
    if (connected) {
      shared_.reconnects.fetch_add(1);
      log(LogLevel::info, "rabbitmq: reconnected to " + endpoint_ + " (vhost " + options_.vhost +
                              (failures > 0 ? "," + after_failures(failures) : "") + ")");
      return;
    }
    {
      Locked locked = shared_.lock();
      locked->last_error = connected.error().message();
    }
    ++failures;
    pause = options_.reconnect_backoff.delay_for(failures + 1);
    log(LogLevel::warning, "rabbitmq: reconnect attempt " + std::to_string(failures) + " to " + endpoint_ +
                               " failed, next in " + std::to_string(pause.count()) +
                               " ms: " + connected.error().message());
  }
}

void IoLoop::on_connection_lost(const ErrorInfo& why) {
  connection_.set_lost(why);
  connection_.close();
  {
    Locked locked = shared_.lock();
    locked->connected = false;
    locked->last_error = why.message();
    consumers_.drop(locked);
    // Unconfirmed messages go back to their jobs to be sent again.
    publisher_.on_connection_lost(locked);
    locked->consumers.wake_all();
  }
  log(LogLevel::warning, "rabbitmq: connection to " + endpoint_ + " lost (" + why.message() + "); reconnecting");
}

void IoLoop::log(LogLevel level, const std::string& line) const {
  if (options_.log) options_.log(level, line);
}

void IoLoop::on_channel_closed(amqp_channel_t channel, const ErrorInfo& why) {
  if (channel == kPublishChannel) {
    publisher_.on_channel_closed(why);
  } else if (channel == kConsumeChannel) {
    Locked locked = shared_.lock();
    consumers_.drop(locked);
  }
}

}  // namespace babelqueue::rabbitmq::detail
