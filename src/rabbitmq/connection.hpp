// SPDX-License-Identifier: Apache-2.0
// The AMQP connection: TCP or TLS socket, login, the three channels and the
// replies of synchronous calls.
#pragma once

#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/result.hpp>

#include <amqp.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace babelqueue::rabbitmq::detail {

// Three channels keep failures apart (ADR 0007).
inline constexpr amqp_channel_t kPublishChannel = 1;  // confirm mode: a channel error fails only unconfirmed publishes
inline constexpr amqp_channel_t kConsumeChannel = 2;  // basic.qos + basic.consume per queue, acks and nacks
inline constexpr amqp_channel_t kControlChannel =
    3;  // queue.declare: a 406 on a mismatching queue closes only this one

// "amqp://host:port" or "amqps://host:port", for error messages.
std::string endpoint_of(const rabbitmq::Transport::Options& options);

std::string status_text(int status);

timeval to_timeval(std::chrono::milliseconds d);

// An AMQP failure: the connection is gone (channel 0) or one channel was
// closed by the broker (channel != 0).
struct AmqpFailure {
  ErrorInfo info;
  amqp_channel_t channel = 0;
};

// The failure an rpc reply describes: a broker's channel.close (404 is
// Errc::not_found) or connection.close (403 and 530 are Errc::auth), or a
// library error (a timeout is Errc::timeout). what prefixes the message.
AmqpFailure failure_of(const amqp_rpc_reply_t& reply, const std::string& what);

// The rabbitmq-c connection. Used by the I/O thread only; open() and close()
// also by the transport's open and close while no I/O thread runs.
class Connection {
 public:
  // Bookkeeping when the broker closes channel (the connection lives on).
  using ChannelClosed = std::function<void(amqp_channel_t channel, const ErrorInfo& why)>;

  Connection(const rabbitmq::Transport::Options& options, ChannelClosed on_channel_closed);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects, logs in and opens the three channels (the publish channel in
  // confirm mode when Options::confirm). Errc::auth for refused credentials
  // or a failed certificate check, Errc::connection or Errc::timeout for an
  // unreachable broker.
  Result<void> open();
  // A clean goodbye (channel.close, connection.close) unless the connection
  // was lost; then it is just destroyed. Nothing happens when it is closed.
  void close();
  bool is_open() const { return conn_ != nullptr; }
  amqp_connection_state_t get() const { return conn_; }

  // Set when the connection broke: everything on the wire is void. open()
  // clears it.
  const std::optional<ErrorInfo>& lost() const { return lost_; }
  void set_lost(ErrorInfo why) { lost_ = std::move(why); }

  // Checks the reply of the last synchronous call on channel. A channel close
  // is answered (close-ok), reported to on_channel_closed and the channel
  // reopened; a connection close or a library error makes the connection lost.
  Result<void> check_rpc(amqp_channel_t channel, const std::string& what);
  // The broker closed channel: answers close-ok, reports it to
  // on_channel_closed and reopens the channel; the connection is lost when
  // that fails.
  void on_channel_close(amqp_channel_t channel, const ErrorInfo& why);
  // The broker closed the connection: answers close-ok; the connection is lost.
  void on_connection_close(const ErrorInfo& why);

  void set_rpc_timeout(std::chrono::milliseconds timeout);

 private:
  bool reopen_channel(amqp_channel_t channel);
  // The name the broker's certificate must carry: tls.server_name, else the host.
  const std::string& checked_name() const {
    return options_.tls.server_name.empty() ? options_.host : options_.tls.server_name;
  }

  const rabbitmq::Transport::Options& options_;
  ChannelClosed on_channel_closed_;
  amqp_connection_state_t conn_ = nullptr;
  std::optional<ErrorInfo> lost_;
};

}  // namespace babelqueue::rabbitmq::detail
