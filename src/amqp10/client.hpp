// SPDX-License-Identifier: Apache-2.0
// amqp10::Client: one AMQP 1.0 connection over qpid-proton C++, usable from
// any thread.
//
// Proton objects belong to the thread that runs their container: everything
// here runs on one such thread the client owns, and the public methods reach
// it only through a proton::work_queue. What callers wait for (a publish's
// disposition, the next incoming message) is handed back through state
// guarded by a mutex, never through proton objects.
//
//   - send(): one sender link per address, opened on first use with the
//     configured terminus capabilities. A message is sent unsettled; it is
//     done when the peer settles it: accepted is success, rejected, released
//     or modified an Errc::broker error with the peer's condition. Messages
//     wait (not sent) while the link has no credit or the connection is
//     down; at the deadline those are dropped from the queue ("not sent"),
//     while those already on the wire become "outcome unknown".
//   - receive(): one receiver link per address, opened on first use, with a
//     credit window the client tops up as receive() takes messages out of
//     its buffer, so the buffer never holds more than the window.
//   - browse(): a copy-mode receiver link per call, drained once, closed.
//   - settle(): each message received is held in a delivery table under an
//     id until it is settled, from any thread. An id that is unknown —
//     settled already, or its connection dropped (the broker redelivers it)
//     — is Errc::not_found.
//   - The connection drops: messages buffered or held are forgotten (the
//     broker redelivers them), sends on the wire fail as "outcome unknown",
//     and the client reconnects after the ConnectionOptions::reconnect
//     backoff, reopening the receivers it had.
//
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include "connection_options.hpp"
#include "outcome.hpp"

#include <babelqueue/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <proton/binary.hpp>
#include <proton/message.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::amqp10 {

// A message received and not yet settled.
struct Incoming {
  std::uint64_t id = 0;  // its key in the delivery table, for settle()
  // The message as AMQP bytes: decode it with proton::message::decode(),
  // into one message object reused for a whole batch. (A proton::message
  // handed over per delivery costs a fresh pn_message, some twenty
  // allocations, where decoding into a reused one allocates nothing.)
  std::vector<char> encoded;
  proton::binary tag;  // the delivery tag (Service Bus: the lock token)
};

class Client {
 public:
  // Connects and opens the connection (SASL, TLS), waiting up to
  // options.connect_timeout. Errors name the problem: Errc::auth (SASL
  // refused), Errc::connection (unreachable, TLS handshake or certificate
  // check failed), Errc::timeout.
  static Result<std::unique_ptr<Client>> connect(ConnectionOptions options);

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends every message to address and waits until the peer has settled
  // each one, at most `timeout`. Errc::timeout names how many were
  // confirmed, how many never left (safe to send again) and how many have an
  // unknown outcome.
  Result<void> send(std::string_view address, std::vector<proton::message> messages, std::chrono::milliseconds timeout);

  // Up to max messages of address, waiting up to wait for the first.
  Result<std::vector<Incoming>> receive(std::string_view address, std::size_t max, std::chrono::milliseconds wait);

  // Up to max messages of address as they wait there, without taking any:
  // a receiver link of its own whose source has distribution-mode "copy" (a
  // browser), given max credit and drained, so the broker sends what it has
  // and says when it has no more; closed afterwards. The copies are
  // settled (accepted), which in copy mode removes nothing. At most timeout.
  Result<std::vector<std::vector<char>>> browse(std::string_view address, std::size_t max,
                                                std::chrono::milliseconds timeout);

  // Settles a held message with outcome. Returns once the disposition is
  // queued for the wire (rcv-settle-mode first: the broker does not answer).
  Result<void> settle(std::uint64_t id, Outcome outcome);

  // True while the connection is open.
  bool connected() const;

  // Releases buffered messages that nobody received (they go back without
  // counting a delivery), closes the connection, waiting at most deadline,
  // and stops the thread. Idempotent; the destructor calls it.
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5));

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace babelqueue::amqp10
