// SPDX-License-Identifier: Apache-2.0
// amqp10::Client against a peer of ours that sends what no broker here
// will: a transfer of no bytes, and transfers whose bytes are no AMQP
// message (a JSON document among them). Each is given back to the peer as
// failed (modified, delivery-failed), with its bytes untouched, and the
// messages around them are received. Before the client checked: an empty
// transfer ended the process (proton's decoder asserts a size), and proton
// took the others for empty messages without an error.
//
// The peer is a few dozen lines of proton's C proactor on 127.0.0.1.
#include "../../bench/support/proactor_loop.hpp"
#include "../../src/amqp10/client.hpp"
#include "../../src/artemis/artemis_projection.hpp"

#include <gtest/gtest.h>

#include <proton/connection.h>
#include <proton/delivery.h>
#include <proton/event.h>
#include <proton/link.h>
#include <proton/listener.h>
#include <proton/message.h>
#include <proton/netaddr.h>
#include <proton/proactor.h>
#include <proton/sasl.h>
#include <proton/session.h>
#include <proton/terminus.h>
#include <proton/transport.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace amqp = babelqueue::amqp10;
using namespace std::chrono_literals;

namespace {

// An AMQP 1.0 peer that sends `transfers` (each a delivery's bytes, sent
// as they are) to the first receiver that attaches, and records the outcome
// the client gives each.
class TransferringPeer {
 public:
  explicit TransferringPeer(std::vector<std::string> transfers)
      : transfers_(std::move(transfers)), outcomes_(transfers_.size(), 0) {
    pn_proactor_listen(proactor_, pn_listener(), "127.0.0.1:0", 16);
    thread_ = std::thread([this] { run(); });
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return port_ != 0 || failed_; });
  }
  ~TransferringPeer() {
    pn_proactor_interrupt(proactor_);
    thread_.join();
    pn_proactor_free(proactor_);
  }

  std::uint16_t port() const { return port_; }

  // The outcome (PN_ACCEPTED, PN_MODIFIED, ...) of each transfer, once the
  // client has settled all of them or after timeout (0: none yet).
  std::vector<std::uint64_t> outcomes(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return settled_ == transfers_.size(); });
    return outcomes_;
  }

  // Whether the outcome of transfer i marked it failed (delivery-failed).
  bool failed(std::size_t i) {
    std::lock_guard lock(mutex_);
    return delivery_failed_.size() > i && delivery_failed_[i];
  }

 private:
  void run() {
    babelqueue::bench::run_proactor(proactor_, [this](pn_event_t* e) { return handle(e); });
  }

  // True once the peer is to stop.
  bool handle(pn_event_t* e) {
    switch (pn_event_type(e)) {
      case PN_LISTENER_OPEN: {
        char host[64], port[16];
        pn_netaddr_host_port(pn_listener_addr(pn_event_listener(e)), host, sizeof host, port, sizeof port);
        std::lock_guard lock(mutex_);
        port_ = static_cast<std::uint16_t>(std::atoi(port));
        cv_.notify_all();
        break;
      }
      case PN_LISTENER_CLOSE: {
        std::lock_guard lock(mutex_);
        failed_ = true;
        cv_.notify_all();
        break;
      }
      case PN_LISTENER_ACCEPT: {
        pn_connection_t* c = pn_connection();
        pn_connection_set_container(c, "transferring-peer");
        pn_transport_t* t = pn_transport();
        pn_transport_set_server(t);
        pn_sasl_t* sasl = pn_sasl(t);
        pn_sasl_allowed_mechs(sasl, "ANONYMOUS");
        pn_listener_accept2(pn_event_listener(e), c, t);
        break;
      }
      case PN_CONNECTION_REMOTE_OPEN: pn_connection_open(pn_event_connection(e)); break;
      case PN_SESSION_REMOTE_OPEN: pn_session_open(pn_event_session(e)); break;
      case PN_LINK_REMOTE_OPEN: {
        pn_link_t* l = pn_event_link(e);
        pn_terminus_copy(pn_link_source(l), pn_link_remote_source(l));
        pn_terminus_copy(pn_link_target(l), pn_link_remote_target(l));
        pn_link_open(l);
        break;
      }
      case PN_LINK_FLOW: {
        pn_link_t* l = pn_event_link(e);
        while (pn_link_is_sender(l) && sent_ < transfers_.size() && pn_link_credit(l) > 0) {
          const std::string tag = std::to_string(sent_);
          pn_delivery(l, pn_dtag(tag.data(), tag.size()));
          const std::string& bytes = transfers_[sent_++];
          if (!bytes.empty()) pn_link_send(l, bytes.data(), bytes.size());
          pn_link_advance(l);
        }
        break;
      }
      case PN_DELIVERY: {
        pn_delivery_t* d = pn_event_delivery(e);
        const std::uint64_t state = pn_delivery_remote_state(d);
        if (!pn_link_is_sender(pn_delivery_link(d)) || state == 0) break;
        const pn_delivery_tag_t tag = pn_delivery_tag(d);
        const std::size_t i = static_cast<std::size_t>(std::stoul(std::string(tag.start, tag.size)));
        std::lock_guard lock(mutex_);
        outcomes_[i] = state;
        if (delivery_failed_.size() <= i) delivery_failed_.resize(i + 1);
        delivery_failed_[i] = pn_disposition_is_failed(pn_delivery_remote(d));
        ++settled_;
        pn_delivery_settle(d);
        cv_.notify_all();
        break;
      }
      case PN_CONNECTION_REMOTE_CLOSE: pn_connection_close(pn_event_connection(e)); break;
      case PN_PROACTOR_INTERRUPT: return true;
      default: break;
    }
    return false;
  }

  pn_proactor_t* proactor_ = pn_proactor();
  std::vector<std::string> transfers_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::uint16_t port_ = 0;
  bool failed_ = false;
  std::size_t sent_ = 0, settled_ = 0;  // sent_: the peer's thread only
  std::vector<std::uint64_t> outcomes_;
  std::vector<bool> delivery_failed_;
};

std::string encoded_message(const std::string& body) {
  pn_message_t* m = pn_message();
  pn_data_put_string(pn_message_body(m), pn_bytes(body.size(), body.data()));
  std::string out(256, '\0');
  std::size_t size = out.size();
  EXPECT_EQ(pn_message_encode(m, out.data(), &size), 0);
  out.resize(size);
  pn_message_free(m);
  return out;
}

// Receives from the peer with options (its port filled in) until two
// messages came or 5 s passed; the bodies, as the reader or proton read
// them.
std::vector<std::string> receive_two(amqp::ConnectionOptions options, std::uint16_t port) {
  options.port = port;
  options.connect_timeout = 5s;
  auto client = amqp::Client::connect(options);
  EXPECT_TRUE(client) << (client ? "" : client.error().message());
  if (!client) return {};
  std::vector<std::string> bodies;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (bodies.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    auto incoming = (*client)->receive("q", 10, 500ms);
    EXPECT_TRUE(incoming) << (incoming ? "" : incoming.error().message());
    if (!incoming) break;
    for (auto& in : *incoming) {
      if (in.read) {
        bodies.push_back(static_cast<const babelqueue::artemis::DeliveryRead&>(*in.read).delivery.body);
      } else {
        bodies.push_back(babelqueue::artemis::to_delivery("q", in.id, in.message).body);
      }
      EXPECT_TRUE((*client)->settle(in.id, amqp::Outcome::accepted()));
    }
  }
  return bodies;
}

void expect_bad_transfers_given_back(const amqp::ConnectionOptions& options) {
  // proton's decoder takes the last two bad ones for empty messages.
  TransferringPeer peer({encoded_message("first"), std::string(), std::string("\x01\x02\x03", 3),
                         R"({"job":"urn:babelqueue:job:orders.created:v1","data":{}})", encoded_message("last")});
  ASSERT_NE(peer.port(), 0);
  EXPECT_EQ(receive_two(options, peer.port()), (std::vector<std::string>{"first", "last"}));
  const auto outcomes = peer.outcomes(5s);
  EXPECT_EQ(outcomes, (std::vector<std::uint64_t>{PN_ACCEPTED, PN_MODIFIED, PN_MODIFIED, PN_MODIFIED, PN_ACCEPTED}));
  for (std::size_t bad = 1; bad <= 3; ++bad) {
    EXPECT_TRUE(peer.failed(bad)) << bad;  // counts a delivery: the broker's own dead-lettering ends its round trips
  }
}

}  // namespace

TEST(Amqp10PeerTransfers, AnEmptyTransferAndOneThatIsNoMessageAreGivenBackAsFailed) {
  expect_bad_transfers_given_back(amqp::ConnectionOptions{});
}

TEST(Amqp10PeerTransfers, TheSameWithTheArtemisReaders) {
  amqp::ConnectionOptions options;
  options.encoded_reader = babelqueue::artemis::read_encoded_delivery;
  options.reader = babelqueue::artemis::read_delivery;
  expect_bad_transfers_given_back(options);
}
