// SPDX-License-Identifier: Apache-2.0
// amqp10::Client: one AMQP 1.0 connection over qpid-proton's C proactor,
// usable from any thread.
//
// Proton's connection, links and deliveries belong to the thread that
// handles their events: everything here runs on one such thread the client
// owns (its I/O thread, waiting on a proactor of its own), and the public
// methods reach it only by posting work and waking the connection
// (pn_connection_wake). What callers wait for (a publish's disposition, the
// next incoming message) is handed back through state guarded by a mutex,
// never through proton objects. (ADR 0058: the C proactor, not proton's C++
// container, whose per-message layer cost more than the rest of the
// client.)
//
//   - send(): one sender link per address, opened on first use with the
//     configured terminus capabilities. Messages travel encoded
//     (EncodedMessages): the I/O thread only copies their bytes
//     onto the link. A message is sent unsettled; it is done when the peer
//     settles it: accepted is success, rejected, released or modified an
//     Errc::broker error with the peer's condition. Messages wait (not
//     sent) while the link has no credit or the connection is down; at the
//     deadline those are dropped from the queue ("not sent"), while those
//     already on the wire become "outcome unknown". start_send() and
//     finish_send() split a send in two, so a caller can encode the next
//     messages while the first ones travel.
//   - receive(): one receiver link per address, opened on first use, with a
//     credit window the client tops up as receive() takes messages out of
//     its buffer, so the buffer never holds more than the window. A message
//     is read by the ConnectionOptions::reader on the connection's thread,
//     or handed over as proton decoded it, without a copy (see Incoming).
//   - browse(): a copy-mode receiver link per call, drained once, closed.
//   - settle(): each message received is held in a delivery table under an
//     id until it is settled, from any thread. An id that is unknown —
//     settled already, or its connection dropped (the broker redelivers it)
//     — is Errc::not_found. Settlements are queued and the I/O thread
//     applies all that are queued each time it runs them: a batch
//     settled together (settle() of several ids) costs it one wake-up.
//   - request(): a request/response node ($cbs, an entity's $management):
//     a sender to the node and a receiver from it whose target is the
//     reply-to address, opened on first use; a reply is matched to its
//     request by correlation-id.
//   - settle_confirmed(): rcv-settle-mode second (Service Bus PeekLock): the
//     outcome goes out unsettled and the call waits until the broker
//     settles back, so an outcome the broker refused (a lock that was lost)
//     is an error instead of a silent no-op.
//   - ConnectionOptions::claims (claims.hpp): before a link to an address
//     opens, a token for its audience is put on $cbs; tokens are put again
//     before they expire and after a reconnect. A refused token fails the
//     links that waited for it with Errc::auth and the broker's reason.
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
#include <optional>
#include <proton/binary.hpp>
#include <proton/message.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct pn_message_t;

namespace babelqueue::amqp10 {

// A message received and not yet settled.
struct Incoming {
  // Its key in the delivery table, for settle(). Below 2^56: a caller
  // spreading its work over several clients may keep which one in the top
  // byte (and take it off before settling).
  std::uint64_t id = 0;
  // With a ConnectionOptions::reader: what it read from the message (and
  // message and tag stay empty).
  std::unique_ptr<Read> read;
  // Without a reader: the message as proton decoded it off the wire. The
  // client swaps it out of proton's per-connection message and puts a used
  // one back, so nothing is copied or encoded again. Give the Incoming back
  // with Client::recycle() when done with it: its message's storage then
  // serves a later delivery (a fresh proton::message costs some twenty
  // allocations). Read its maps through their value() (a decoder), not
  // through the map interface, which copies the map into a std::map first.
  proton::message message;
  proton::binary tag;  // without a reader: the delivery tag (Service Bus: the lock token)
};

// Messages encoded for the wire (AMQP 1.0 message sections), back to back.
struct EncodedMessages {
  std::vector<char> bytes;
  std::vector<std::size_t> ends;  // message i is bytes [ends[i-1], ends[i])

  std::size_t size() const noexcept { return ends.size(); }
  bool empty() const noexcept { return ends.empty(); }
  std::string_view operator[](std::size_t i) const noexcept {
    const std::size_t begin = i == 0 ? 0 : ends[i - 1];
    return {bytes.data() + begin, ends[i] - begin};
  }
  // Appends message as encoded by proton.
  void append(const proton::message& message);
  // Appends the C message (pn_message_encode), growing the buffer as
  // needed. Errc::invalid_argument when proton cannot encode it.
  Result<void> append(pn_message_t* message);
};

// A send started by Client::start_send(), until finish_send() reports it.
struct SendOp;

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
  Result<void> send(std::string_view address, EncodedMessages messages, std::chrono::milliseconds timeout);
  Result<void> send(std::string_view address, std::vector<proton::message> messages, std::chrono::milliseconds timeout);

  // send() in two steps: start_send() queues the messages for the wire and
  // returns at once; finish_send() waits for the peer's answers until
  // deadline and reports as send() does (after it, the send is over: what
  // was not sent by then never will be).
  Result<std::shared_ptr<SendOp>> start_send(std::string_view address, EncodedMessages messages);
  Result<void> finish_send(SendOp& op, std::chrono::steady_clock::time_point deadline);

  // Up to max messages of address, waiting up to wait for the first.
  Result<std::vector<Incoming>> receive(std::string_view address, std::size_t max, std::chrono::milliseconds wait);

  // Up to max messages of address as they wait there, without taking any:
  // a receiver link of its own whose source has distribution-mode "copy" (a
  // browser), given max credit and drained, so the broker sends what it has
  // and says when it has no more; closed afterwards. The copies are
  // settled (accepted), which in copy mode removes nothing. At most timeout.
  Result<std::vector<std::vector<char>>> browse(std::string_view address, std::size_t max,
                                                std::chrono::milliseconds timeout);

  // Takes back messages received earlier (their settlement is not affected)
  // so that their storage serves later deliveries: their Read goes back to
  // the reader (MessageReader's reuse), their message to proton. Empties
  // used.
  void recycle(std::vector<Incoming>& used);

  // Settles a held message with outcome. Returns once the disposition is
  // queued for the wire (rcv-settle-mode first: the broker does not answer).
  Result<void> settle(std::uint64_t id, Outcome outcome);

  // Settles every id with outcome, in one hand-over to the I/O thread;
  // each id that is not held is appended to not_held (its index in ids)
  // and the others are settled all the same.
  // Errc::closed (nothing settled) once the client is closed.
  Result<void> settle(std::span<const std::uint64_t> ids, const Outcome& outcome, std::vector<std::size_t>& not_held);

  // Sends message to a request/response node (e.g. "$cbs" or
  // "orders/$management") and waits at most timeout for its reply. The
  // client sets the message-id and reply-to. The node's links need the
  // claims of the address (ConnectionOptions::claims) like any other.
  // Errc::connection when the connection is down or drops before the reply,
  // Errc::timeout when none came in time.
  Result<proton::message> request(std::string_view node, proton::message message, std::chrono::milliseconds timeout);

  // Settles held messages with outcome and waits, at most timeout, until
  // the broker has settled each one back (rcv-settle-mode second; see
  // ConnectionOptions::receiver_settles_second). One entry per id, empty
  // when the broker applied the outcome: Errc::not_found when the id is not
  // held or the broker answered that the message's lock is gone (Service
  // Bus com.microsoft:message-lock-lost), Errc::broker for another refusal,
  // Errc::connection or Errc::timeout when the answer never came (outcome
  // unknown).
  std::vector<std::optional<ErrorInfo>> settle_confirmed(std::span<const std::uint64_t> ids, const Outcome& outcome,
                                                         std::chrono::milliseconds timeout);

  // True while the connection is open.
  bool connected() const;

  // Connections opened again after one was lost, since connect().
  std::uint64_t reconnects() const noexcept;

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
