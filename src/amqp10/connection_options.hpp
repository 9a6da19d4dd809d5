// SPDX-License-Identifier: Apache-2.0
// ConnectionOptions: where and how an amqp10::Client connects.
//
// Thread-safety: a plain value.
#pragma once

#include "claims.hpp"
#include "message_reader.hpp"

#include <babelqueue/backoff.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/tls_options.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace babelqueue::amqp10 {

struct ConnectionOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 5672;
  // SASL: PLAIN with these when user is set, else ANONYMOUS.
  std::string user;
  std::string password;
  TlsOptions tls;
  // Sent as the open frame's hostname (and used for TLS when
  // tls.server_name is empty); empty: host.
  std::string virtual_host;
  std::string container_id;  // empty: a random one
  // The first connect (and each reconnect attempt) gives up after this.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // Heartbeat: the peer closes a connection silent for twice this.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
  // Delays between reconnect attempts after the connection drops.
  BackoffPolicy reconnect{std::chrono::milliseconds(200), 2.0, std::chrono::seconds(10), 0.2};
  // Terminus capabilities set on every source (receiver) and target
  // (sender): Artemis needs "queue" for anycast.
  std::vector<std::string> terminus_capabilities;
  // Messages the broker may push ahead of receive() per address (the
  // link's credit window). 1 = one at a time.
  std::uint32_t credit_window = 1000;
  // rcv-settle-mode second: the broker confirms each settlement (Service
  // Bus needs it for PeekLock); first (false) settles at once.
  bool receiver_settles_second = false;
  // The largest encoded message a send puts on a link; 0: no limit of ours.
  // A link whose peer announced a max-message-size at attach takes at most
  // that as well. A larger message fails, naming both sizes, unsent.
  std::uint64_t max_message_size = 0;
  // Names the setting that holds max_message_size in that error.
  std::string max_message_size_setting = "max_message_size";
  // Reads each received message on the connection's thread into
  // Incoming::read (message_reader.hpp). Empty: Incoming::message carries
  // the message itself.
  MessageReader reader;
  // Claims-based security: a token on $cbs for each address before its
  // links open (Service Bus); empty: none.
  Claims claims;
  LogSink log;
};

}  // namespace babelqueue::amqp10
