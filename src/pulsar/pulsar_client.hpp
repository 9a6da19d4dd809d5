// SPDX-License-Identifier: Apache-2.0
// pulsar_detail::Client: Pulsar's binary protocol over one or more TCP (or
// TLS) connections, usable from any thread. Internal to babelqueue::pulsar.
//
// One I/O thread runs Boost.Asio for every connection of the client: the
// service connection named by the URL, and one per broker that topic lookups
// point to (a standalone broker answers with itself). Callers hand work to
// that thread and wait for its outcome on a condition variable.
//
//   - send(): a producer per topic, opened on first use (LOOKUP, then
//     PRODUCER on the owning broker). Every message of a call goes out at
//     once, in one write; the call returns when the broker has answered each
//     one (SEND_RECEIPT or SEND_ERROR). A batch call packs consecutive
//     messages into batched entries, as libpulsar's producer does.
//   - receive(): a consumer per topic and subscription, opened on first use
//     (SUBSCRIBE Shared at the earliest position, then FLOW). The broker pushes
//     messages up to the permits given; receive() takes them from the buffer
//     and gives the permits back in FLOW commands. A batched entry becomes
//     one message per entry of the batch.
//   - browse(): a reader from the subscription's mark-delete position to
//     the topic's last message, closed afterwards.
//   - ack() / negative_ack(): each received message is held under a handle
//     until settled. An entry is acknowledged (ACK) once every message of
//     its batch is acknowledged; when one of them was negatively
//     acknowledged, the entry is redelivered whole
//     (REDELIVER_UNACKNOWLEDGED_MESSAGES, which raises its redeliveryCount)
//     once all are settled; when it comes back, the messages this consumer
//     acknowledged already are skipped.
//   - A lost connection (reset, keepalive silence, a malformed frame) fails
//     the sends waiting on it ("outcome unknown"), forgets what its
//     consumers buffered and held (the broker redelivers those), and the
//     next send() or receive() opens the producer or consumer again after
//     the reconnect backoff.
//
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include "pulsar_commands.hpp"

#include <babelqueue/backoff.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/tls_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::pulsar_detail {

struct ClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6650;
  TlsOptions tls;  // enabled: pulsar+ssl://
  // Token authentication (auth method "token"); empty: none.
  std::string token;
  // The broker's advertised listener whose address lookups answer with;
  // empty: the broker's internal one.
  std::string listener_name;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // Lookups, producer and consumer creation.
  std::chrono::milliseconds operation_timeout{std::chrono::seconds(30)};
  // A PING when the connection was silent this long; dropped after twice.
  std::chrono::milliseconds keepalive{std::chrono::seconds(30)};
  BackoffPolicy reconnect{std::chrono::milliseconds(100), 2.0, std::chrono::seconds(10), 0.2};
  // Messages the broker may push ahead of receive() per consumer.
  std::uint32_t receiver_queue = 1000;
  // The largest uncompressed batch accepted.
  std::size_t max_message_size = 64 * 1024 * 1024;
  std::string client_version = "babelqueue-cpp";
  LogSink log;
};

struct OutMessage {
  std::string payload;
  Properties properties;
  std::optional<std::string> key;
  std::optional<std::int64_t> deliver_at;  // epoch ms
};

struct InMessage {
  std::uint64_t handle = 0;  // for ack() / negative_ack()
  std::string payload;
  Properties properties;
  std::optional<std::string> key;
  std::uint32_t redelivery_count = 0;
  MessageId id;
  std::uint64_t publish_time = 0;
};

class Client {
 public:
  // Opens the service connection (TCP, TLS, CONNECT/CONNECTED), waiting up
  // to connect_timeout: Errc::auth for a refused token or a certificate
  // that does not verify, Errc::connection or Errc::timeout otherwise.
  static Result<std::unique_ptr<Client>> connect(ClientOptions options);

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const noexcept;

  // Publishes every message to topic and waits for the broker's answer to
  // each, at most timeout. batch: consecutive messages without a delay go
  // out as batched entries (up to 1000 messages or 128 KiB each).
  Result<void> send(const std::string& topic, std::vector<OutMessage> messages, std::chrono::milliseconds timeout,
                    bool batch = false);

  // Up to max messages of topic's subscription, waiting up to wait for the first.
  Result<std::vector<InMessage>> receive(const std::string& topic, const std::string& subscription, std::size_t max,
                                         std::chrono::milliseconds wait);

  // Up to max messages of topic waiting for subscription, without taking
  // any: a consumer of the subscription given no permits asks for the
  // topic's last message and the subscription's mark-delete position; a
  // non-durable reader then reads the messages between the two (and the
  // subscription and the reader end with it). Messages acknowledged out of
  // order beyond the mark-delete position, and those other consumers hold,
  // are among them; delayed ones are not. At most timeout.
  Result<std::vector<InMessage>> browse(const std::string& topic, const std::string& subscription, std::size_t max,
                                        std::chrono::milliseconds timeout);

  // Errc::not_found when the handle is not held (settled already, or its
  // connection dropped and the broker redelivers the message).
  Result<void> ack(std::uint64_t handle);
  // Asks for redelivery, after delay (the message stays held until then).
  Result<void> negative_ack(std::uint64_t handle, std::chrono::milliseconds delay);

  // The number of partitions of topic (0: not partitioned).
  Result<std::uint32_t> partitions(const std::string& topic);

  // Connections ready again after a ready one was lost, since it was made.
  std::uint64_t reconnects() const noexcept;

  // Closes consumers, producers and connections, waiting at most deadline,
  // and stops the I/O thread. Idempotent.
  void close(std::chrono::milliseconds deadline);

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace babelqueue::pulsar_detail
