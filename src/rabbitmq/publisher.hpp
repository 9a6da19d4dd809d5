// SPDX-License-Identifier: Apache-2.0
// The publish channel: messages sent in confirm mode with the mandatory
// flag, their confirms, nacks and returns, and what each does to its job.
#pragma once

#include "connection.hpp"
#include "locked.hpp"
#include "publish_jobs.hpp"
#include "queue_declarer.hpp"

#include <babelqueue/rabbitmq/transport.hpp>

#include <amqp.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::rabbitmq::detail {

class SharedState;

// The messages on the publish channel awaiting their confirm, oldest first
// (numbered as the broker numbers them), and how a confirm, a nack or a
// return settles their jobs. No I/O. Used by the I/O thread only.
class ConfirmTracker {
 public:
  // index of job went on the wire; answers its sequence number.
  std::uint64_t add(std::shared_ptr<PublishJob> job, std::size_t index);
  std::size_t size() const { return pending_.size(); }
  bool empty() const { return pending_.empty(); }

  // basic.ack (ack) or basic.nack of tag, and of every older message when
  // multiple. A returned message fails with Errc::not_found, a nacked one
  // with Errc::broker. Answers the routing keys of returned messages: their
  // queue is gone, and must be declared again.
  std::vector<std::string> confirm(const Locked& locked, std::uint64_t tag, bool multiple, bool ack);
  // basic.return: it comes right before the confirm of the same message,
  // which is the oldest unconfirmed one with that routing key and body.
  void returned(std::string_view routing_key, std::string_view body, int reply_code, std::string_view reply_text);
  // Every unconfirmed message fails with why (its channel is gone, or the
  // transport closes).
  void fail_all(const Locked& locked, const ErrorInfo& why);
  // The connection is gone: unconfirmed messages go back to their jobs, and
  // the jobs to the front of the queue, to be sent again.
  void requeue(const Locked& locked);
  // A new channel numbers its messages from 1 again.
  void restart_numbering() { next_seq_ = 1; }

 private:
  struct Pending {
    std::uint64_t seq;
    std::shared_ptr<PublishJob> job;
    std::size_t index;
    bool returned = false;
    std::string return_text;
    std::string return_code;  // the broker's reply code and text, e.g. "312 NO_ROUTE"
  };
  std::deque<Pending> pending_;
  std::uint64_t next_seq_ = 1;
};

// Sends queued messages (declaring their queue and delay bucket first) and
// settles their jobs as confirms and returns come in. Used by the I/O thread
// only.
class Publisher {
 public:
  Publisher(const rabbitmq::Transport::Options& options, SharedState& shared, Connection& connection,
            QueueDeclarer& declarer);

  // Sends what is queued, up to Options::max_in_flight unconfirmed messages.
  void send();
  void on_confirm(std::uint64_t tag, bool multiple, bool ack);
  void on_return(const amqp_basic_return_t& returned, const amqp_message_t& message);
  // The broker closed the publish channel: unconfirmed messages fail.
  void on_channel_closed(const ErrorInfo& why);
  // The connection is gone: unconfirmed messages will be sent again.
  void on_connection_lost(const Locked& locked) { confirms_.requeue(locked); }
  void on_connected() { confirms_.restart_numbering(); }
  // The transport closes: unconfirmed messages fail with Errc::closed.
  void on_close(const Locked& locked);
  // Whether another message may go on the wire now.
  bool window_open() const { return !options_.confirm || confirms_.size() < options_.max_in_flight; }
  // Whether no message awaits its confirm.
  bool idle() const { return confirms_.empty(); }

 private:
  const rabbitmq::Transport::Options& options_;
  SharedState& shared_;
  Connection& connection_;
  QueueDeclarer& declarer_;
  ConfirmTracker confirms_;
};

}  // namespace babelqueue::rabbitmq::detail
