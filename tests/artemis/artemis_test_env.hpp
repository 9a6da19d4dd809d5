// SPDX-License-Identifier: Apache-2.0
// Shared by the Artemis tests: the broker's URLs and a raw proton peer that
// sends and receives without the SDK, to check what is on the wire.
#pragma once

#include "broker_env.hpp"

#include <babelqueue/artemis/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <chrono>
#include <optional>
#include <proton/connection.hpp>
#include <proton/connection_options.hpp>
#include <proton/container.hpp>
#include <proton/delivery.hpp>
#include <proton/message.hpp>
#include <proton/messaging_handler.hpp>
#include <proton/receiver_options.hpp>
#include <proton/sender.hpp>
#include <proton/sender_options.hpp>
#include <proton/source_options.hpp>
#include <proton/target_options.hpp>
#include <proton/tracker.hpp>
#include <proton/work_queue.hpp>
#include <string>
#include <thread>
#include <vector>

namespace babelqueue::testing {

inline std::string artemis_url(const std::string& query = {}) {
  static const std::string base = broker_url("artemis");
  return query.empty() ? base : base + "?" + query;
}

inline std::string unique_queue(const std::string& role) { return "bq-test-" + role + "-" + uuid_v4().substr(0, 8); }

// "amqp://127.0.0.1:port" of the broker, and its user and password.
struct RawEndpoint {
  std::string url;
  std::string user;
  std::string password;
};

inline RawEndpoint raw_endpoint() {
  auto info = broker_info("artemis");
  return {"amqp://127.0.0.1:" + info.at("port"), info.at("user"), info.at("password")};
}

// Plain proton, one blocking call per container run: receives up to count
// messages of address (waiting at most `wait`), settling each with
// `settle` (accept by default), or sends messages to it.
class RawPeer : public proton::messaging_handler {
 public:
  enum class Settle { accept, release, modify_failed };

  static std::vector<proton::message> receive(const std::string& address, std::size_t count,
                                              std::chrono::milliseconds wait, Settle settle = Settle::accept,
                                              bool queue_capability = true) {
    RawPeer peer;
    peer.address_ = address;
    peer.count_ = count;
    peer.wait_ = wait;
    peer.settle_ = settle;
    peer.queue_capability_ = queue_capability;
    proton::container(peer).run();
    return std::move(peer.received_);
  }

  static void send(const std::string& address, std::vector<proton::message> messages, bool queue_capability = true) {
    RawPeer peer;
    peer.address_ = address;
    peer.to_send_ = std::move(messages);
    peer.queue_capability_ = queue_capability;
    proton::container(peer).run();
  }

  void on_container_start(proton::container& c) override {
    const RawEndpoint e = raw_endpoint();
    proton::connection_options o;
    o.user(e.user).password(e.password).sasl_allowed_mechs("PLAIN").sasl_allow_insecure_mechs(true);
    proton::connection connection = c.connect(e.url, o);
    std::vector<proton::symbol> caps;
    if (queue_capability_) caps.emplace_back("queue");
    if (to_send_.empty()) {
      proton::source_options source;
      source.capabilities(caps);
      connection.open_receiver(address_, proton::receiver_options().source(source).auto_accept(false).credit_window(
                                             static_cast<int>(count_)));
      deadline_ = std::chrono::steady_clock::now() + wait_;
      c.schedule(proton::duration(wait_.count()), proton::work([connection]() mutable {
                   if (connection.active()) connection.close();
                 }));
    } else {
      proton::target_options target;
      target.capabilities(caps);
      connection.open_sender(address_, proton::sender_options().target(target));
    }
  }

  // Both sides closed: the dispositions went out before our close, so stop
  // now rather than wait for the receive timer.
  void on_connection_close(proton::connection& c) override { c.container().stop(); }

  void on_sendable(proton::sender& s) override {
    while (next_ < to_send_.size() && s.credit() > 0) s.send(to_send_[next_++]);
  }

  void on_tracker_settle(proton::tracker& t) override {
    if (++settled_ == to_send_.size()) t.connection().close();
  }

  void on_message(proton::delivery& d, proton::message& m) override {
    if (received_.size() >= count_ || std::chrono::steady_clock::now() >= deadline_) {
      d.release();
      return;
    }
    received_.push_back(m);
    switch (settle_) {
      case Settle::accept: d.accept(); break;
      case Settle::release: d.release(); break;
      case Settle::modify_failed: d.modify(); break;
    }
    if (received_.size() == count_) d.connection().close();
  }

 private:
  std::string address_;
  std::size_t count_ = 0;
  std::chrono::milliseconds wait_{0};
  std::chrono::steady_clock::time_point deadline_;
  Settle settle_ = Settle::accept;
  bool queue_capability_ = true;
  std::vector<proton::message> to_send_;
  std::size_t next_ = 0;
  std::size_t settled_ = 0;
  std::vector<proton::message> received_;
};

}  // namespace babelqueue::testing
