// SPDX-License-Identifier: Apache-2.0
#include "client.hpp"

#include "c_handles.hpp"
#include "ring.hpp"

#include <babelqueue/detail/message_size.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/uuid.hpp>

#include <proton/error.h>
#include <proton/message.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <proton/connection.hpp>
#include <proton/connection_options.hpp>
#include <proton/container.hpp>
#include <proton/delivery.hpp>
#include <proton/error_condition.hpp>
#include <proton/message_id.hpp>
#include <proton/messaging_handler.hpp>
#include <proton/receiver.hpp>
#include <proton/receiver_options.hpp>
#include <proton/sender.hpp>
#include <proton/sender_options.hpp>
#include <proton/source_options.hpp>
#include <proton/ssl.hpp>
#include <proton/target_options.hpp>
#include <proton/timestamp.hpp>
#include <proton/tracker.hpp>
#include <proton/transport.hpp>
#include <proton/work_queue.hpp>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace babelqueue::amqp10 {

namespace {

using Clock = std::chrono::steady_clock;

// How often the container's thread checks its deadlines (Impl::tick()).
const proton::duration kTick(100);

std::string describe(const proton::error_condition& e) {
  if (!e) return "no error condition";
  std::string text = e.name();
  if (!e.description().empty()) text += ": " + e.description();
  return text;
}

// What a connection or link failure means to the caller.
// The broker's condition as an ErrorInfo (classify adds its name and text).
ErrorInfo classify_condition(const proton::error_condition& e, std::string_view where) {
  const std::string name = e.name();
  const std::string text = std::string(where) + ": " + describe(e);
  if (name == "amqp:unauthorized-access") return ErrorInfo{Errc::auth, text + " (credentials refused)"};
  if (e.description().find("SSL") != std::string::npos || e.description().find("certificate") != std::string::npos) {
    return ErrorInfo{Errc::auth, text + " (TLS handshake failed: check tls_ca and tls_server_name)"};
  }
  if (name == "amqp:not-found") return ErrorInfo{Errc::not_found, text};
  if (name == "proton:io" || name == "amqp:connection:framing-error" || name.rfind("amqp:connection", 0) == 0 ||
      name == "proton:io:timeout") {
    return ErrorInfo{Errc::connection, text};
  }
  if (name.rfind("amqp:", 0) == 0) return ErrorInfo{Errc::broker, text};
  return ErrorInfo{Errc::connection, text};
}

ErrorInfo classify(const proton::error_condition& e, std::string_view where) {
  return classify_condition(e, where).with_native(e.name(), e.description());
}

proton::error_condition remote_condition(const proton::transfer& t) {
  pn_delivery_t* c = detail::CHandle<proton::transfer, pn_delivery_t>::of(t);
  pn_condition_t* cond = pn_disposition_condition(pn_delivery_remote(c));
  if (cond == nullptr || !pn_condition_is_set(cond)) return {};
  const char* name = pn_condition_get_name(cond);
  const char* description = pn_condition_get_description(cond);
  return proton::error_condition(name ? name : "", description ? description : "");
}

std::vector<proton::symbol> symbols(const std::vector<std::string>& names) {
  std::vector<proton::symbol> out;
  out.reserve(names.size());
  for (const auto& n : names) out.emplace_back(n);
  return out;
}

}  // namespace

// A send in progress (Client::start_send()). Guarded by Impl::mutex_.
struct SendOp {
  std::string address;
  EncodedMessages messages;
  std::size_t sent = 0;       // handed to the link (messages[sent] goes next)
  std::size_t settled = 0;    // the peer answered (or the wire failed)
  std::size_t confirmed = 0;  // answered accepted
  std::size_t unknown = 0;    // on the wire when the connection dropped
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::optional<ErrorInfo> error;
  bool abandoned = false;  // the caller gave up: send nothing more

  bool finished() const { return settled == messages.size() || (abandoned && settled == sent); }
};

// One address's receiver: its buffer is shared with receive() callers.
struct Inbound {
  std::string address;
  Ring<Incoming> buffer;           // Impl::mutex_
  std::optional<ErrorInfo> error;  // Impl::mutex_: the link failed; reported once
  bool open = false;               // Impl::mutex_: attached (or being attached)
  // Impl::mutex_: messages receive() took out since the link's credit was
  // last topped up (what a top-up would give back).
  std::size_t taken = 0;
  proton::receiver link;  // the container's thread only
};

// One browse(): a copy-mode receiver drained once.
struct BrowseOp {
  std::string address;
  std::size_t max = 0;
  std::vector<std::vector<char>> encoded;  // Impl::mutex_
  std::optional<ErrorInfo> error;          // Impl::mutex_
  bool done = false;                       // Impl::mutex_
  proton::receiver link;                   // the container's thread only
};

// A request() call in progress. Guarded by Impl::mutex_.
struct RequestOp {
  std::string node;
  proton::message message;
  std::optional<Result<proton::message>> reply;
};

// A settle_confirmed() call in progress. Guarded by Impl::mutex_.
struct ConfirmOp {
  std::vector<std::uint64_t> ids;
  Outcome outcome;
  std::vector<std::optional<ErrorInfo>> errors;
  std::vector<bool> answered;
  std::size_t remaining = 0;
};

class Client::Impl final : public proton::messaging_handler {
 public:
  explicit Impl(ConnectionOptions options)
      : options_(std::move(options)),
        container_(*this, options_.container_id.empty() ? "babelqueue-" + uuid_v4() : options_.container_id) {
    container_.auto_stop(false);
    spare_.reserve(std::min<std::size_t>(options_.credit_window, 1024) + 64);
    spare_reads_.reserve(spare_.capacity());
    io_reads_.reserve(spare_.capacity());
  }

  ~Impl() override { close(std::chrono::seconds(5)); }

  Result<void> start() {
    thread_ = std::thread([this] {
      try {
        container_.run();
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        last_error_ = ErrorInfo{Errc::internal, std::string("AMQP container stopped: ") + e.what()};
        state_ = State::closed;
        cv_.notify_all();
      }
    });
    std::unique_lock lock(mutex_);
    const bool settled = cv_.wait_for(lock, options_.connect_timeout + std::chrono::milliseconds(500), [&] {
      return state_ == State::open || first_attempt_failed_ || state_ == State::closed;
    });
    if (state_ == State::open) return {};
    (void)settled;
    ErrorInfo error =
        last_error_.value_or(ErrorInfo{Errc::timeout, "no AMQP connection to " + endpoint() + " within " +
                                                          std::to_string(options_.connect_timeout.count()) + " ms"});
    lock.unlock();
    close(std::chrono::seconds(1));
    return unexpected(std::move(error));
  }

  // ---- caller threads ----

  Result<std::shared_ptr<SendOp>> start_send(std::string_view address, EncodedMessages messages) {
    auto op = std::make_shared<SendOp>();
    op->address = std::string(address);
    op->messages = std::move(messages);
    std::lock_guard lock(mutex_);
    if (auto e = refuse_if_closed()) return unexpected(std::move(*e));
    if (op->messages.empty()) return op;
    sends_.push_back(op);
    post_drain_locked();
    return op;
  }

  Result<void> finish_send(SendOp& op, Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    const bool done = cv_.wait_until(lock, deadline, [&] { return op.finished() || state_ == State::closed; });
    if (op.settled == op.messages.size()) {
      if (op.error) {
        if (op.messages.size() == 1) return unexpected(*op.error);
        return unexpected(op.error->with_message(op.error->message() + " (" + std::to_string(op.confirmed) + " of " +
                                                 std::to_string(op.messages.size()) + " messages were accepted)"));
      }
      return {};
    }
    op.abandoned = true;
    const std::size_t not_sent = op.messages.size() - op.sent;
    const std::size_t unknown = op.sent - std::min(op.sent, op.settled) + op.unknown;
    std::string text =
        done && state_ == State::closed ? "the AMQP client was closed" : "no disposition from the broker";
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - op.started);
    text += " for " + std::to_string(op.messages.size() - op.confirmed) + " of " + std::to_string(op.messages.size()) +
            " messages to '" + op.address + "' within " + std::to_string(waited.count()) +
            " ms: " + std::to_string(not_sent) + " not sent, " + std::to_string(unknown) +
            " with an unknown outcome (sent, unconfirmed)";
    if (op.error) text += "; " + op.error->message();
    // Sent and unconfirmed: the broker may hold them. Nothing sent: a plain
    // timeout (or the client closed), which a re-send repairs.
    Errc code = state_ == State::closed ? Errc::closed : Errc::timeout;
    if (unknown > 0 && state_ != State::closed) code = Errc::outcome_unknown;
    return unexpected(ErrorInfo{code, std::move(text)});
  }

  Result<std::vector<Incoming>> receive(std::string_view address, std::size_t max, std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    if (auto e = refuse_if_closed()) return unexpected(std::move(*e));
    auto it = inbound_.find(address);
    if (it == inbound_.end()) {
      auto in = std::make_shared<Inbound>();
      in->address = std::string(address);
      it = inbound_.emplace(in->address, in).first;
    }
    // A plain pointer (entries are never erased): a copy of the shared_ptr
    // would write its count, a line every receiving thread shares.
    Inbound* const in = it->second.get();
    if (!in->open) {
      in->open = true;
      opens_.push_back(it->second);
      post_drain_locked();
    }
    // A wait of 0 only looks: even an expired wait on the condition variable
    // gives the mutex up and makes a system call, and a caller taking from
    // several clients asks each of them so, many times a batch.
    if (wait.count() > 0) {
      cv_.wait_for(lock, wait, [&] { return !in->buffer.empty() || in->error || state_ == State::closed; });
    }
    if (state_ == State::closed) return unexpected(ErrorInfo{Errc::closed, "the AMQP client is closed"});
    std::vector<Incoming> out;
    if (in->buffer.empty() && !in->error) return out;
    if (in->buffer.empty() && in->error) {
      ErrorInfo e = std::move(*in->error);
      in->error.reset();
      return unexpected(std::move(e));
    }
    const std::size_t n = std::min(max, in->buffer.size());
    out.reserve(n);  // no reallocation: a proton::message moves by copy (its move may throw)
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(std::move(in->buffer.front()));
      in->buffer.pop_front();
    }
    // The container's thread tops the credit up each time it drains (for
    // settlements, sends, ...), and is woken for it only once a quarter of
    // the window was taken: a wake-up of that thread per receive() cost
    // more than the frame it sent, and a window left to run dry stalls the
    // broker.
    in->taken += n;
    if (n > 0 && in->taken >= top_up_threshold()) post_drain_locked();
    return out;
  }

  Result<std::vector<std::vector<char>>> browse(std::string_view address, std::size_t max,
                                                std::chrono::milliseconds timeout) {
    auto op = std::make_shared<BrowseOp>();
    op->address = std::string(address);
    op->max = max;
    std::unique_lock lock(mutex_);
    if (auto e = refuse_if_closed()) return unexpected(std::move(*e));
    post_locked([this, op] { open_browser(op); });
    cv_.wait_for(lock, timeout, [&] { return op->done || state_ == State::closed; });
    if (!op->done) {
      if (state_ != State::closed) post_locked([this, op] { end_browse(op, std::nullopt); });
      return unexpected(
          ErrorInfo{state_ == State::closed ? Errc::closed : Errc::timeout,
                    "browsing '" + op->address + "' did not end within " + std::to_string(timeout.count()) + " ms"});
    }
    if (op->error) return unexpected(*op->error);
    return std::move(op->encoded);
  }

  void recycle(std::vector<Incoming>& used) {
    {
      // Neither list ever reallocates (see receive()): what does not fit is
      // freed.
      std::lock_guard lock(mutex_);
      for (auto& in : used) {
        if (in.read) {
          if (spare_reads_.size() < spare_reads_.capacity()) spare_reads_.push_back(std::move(in.read));
        } else if (spare_.size() < spare_.capacity()) {
          spare_.push_back(std::move(in.message));
        }
      }
    }
    used.clear();
  }

  Result<void> settle(std::uint64_t id, Outcome outcome) {
    std::lock_guard lock(mutex_);
    if (auto e = refuse_if_closed()) return unexpected(std::move(*e));
    if (!claim_locked(id)) return unexpected(not_held_error());
    settlements_.emplace_back(id, std::move(outcome));
    post_drain_locked();
    return {};
  }

  Result<void> settle(std::span<const std::uint64_t> ids, const Outcome& outcome, std::vector<std::size_t>& not_held) {
    std::lock_guard lock(mutex_);
    if (auto e = refuse_if_closed()) return unexpected(std::move(*e));
    bool any = false;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!claim_locked(ids[i])) {
        not_held.push_back(i);
        continue;
      }
      settlements_.emplace_back(ids[i], outcome);
      any = true;
    }
    if (any) post_drain_locked();
    return {};
  }

  static ErrorInfo not_held_error() {
    return ErrorInfo{Errc::not_found,
                     "the delivery is no longer held (settled already, or its connection dropped and the broker "
                     "delivers it again)"};
  }

  Result<proton::message> request(std::string_view node, proton::message message, std::chrono::milliseconds timeout) {
    auto op = std::make_shared<RequestOp>();
    op->node = std::string(node);
    op->message = std::move(message);
    std::unique_lock lock(mutex_);
    if (auto e = refuse_if_closed()) return unexpected(std::move(*e));
    if (state_ != State::open) {
      return unexpected(ErrorInfo{
          Errc::connection,
          "no AMQP connection to " + endpoint() + " (reconnecting): no request to '" + op->node + "' can be sent"});
    }
    requests_.push_back(op);
    post_locked([this] { drain_requests(); });
    cv_.wait_for(lock, timeout, [&] { return op->reply.has_value() || state_ == State::closed; });
    if (op->reply) return std::move(*op->reply);
    op->reply = unexpected(Errc::timeout, "");  // a late reply finds it answered
    if (state_ == State::closed) return unexpected(ErrorInfo{Errc::closed, "the AMQP client is closed"});
    return unexpected(
        ErrorInfo{Errc::timeout, "no reply from '" + op->node + "' within " + std::to_string(timeout.count()) + " ms"});
  }

  std::vector<std::optional<ErrorInfo>> settle_confirmed(std::span<const std::uint64_t> ids, const Outcome& outcome,
                                                         std::chrono::milliseconds timeout) {
    auto op = std::make_shared<ConfirmOp>();
    op->ids.assign(ids.begin(), ids.end());
    op->outcome = outcome;
    op->errors.resize(ids.size());
    op->answered.resize(ids.size(), false);
    op->remaining = ids.size();
    std::unique_lock lock(mutex_);
    if (auto e = refuse_if_closed()) return std::vector<std::optional<ErrorInfo>>(ids.size(), *e);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!claim_locked(ids[i])) answer_locked(*op, i, not_held_error());
    }
    if (op->remaining == 0) return op->errors;
    confirms_.push_back(op);
    post_drain_locked();
    cv_.wait_for(lock, timeout, [&] { return op->remaining == 0 || state_ == State::closed; });
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (op->answered[i]) continue;
      answer_locked(*op, i,
                    state_ == State::closed
                        ? ErrorInfo{Errc::closed,
                                    "the AMQP client was closed before the broker confirmed the "
                                    "settlement (outcome unknown)"}
                        : ErrorInfo{Errc::timeout, "the broker did not confirm the settlement within " +
                                                       std::to_string(timeout.count()) +
                                                       " ms (outcome unknown: if it was not applied, the message "
                                                       "comes back when its lock ends)"});
    }
    return op->errors;
  }

  std::uint64_t reopened() const noexcept { return reopened_.load(std::memory_order_relaxed); }

  bool connected() const {
    std::lock_guard lock(mutex_);
    return state_ == State::open;
  }

  void close(std::chrono::milliseconds deadline) {
    {
      std::unique_lock lock(mutex_);
      if (state_ == State::closed || !thread_.joinable()) {
        state_ = State::closed;
        cv_.notify_all();
      } else {
        closing_ = true;
        post_locked([this] { begin_close(); });
        cv_.wait_for(lock, deadline, [&] { return state_ == State::closed; });
        state_ = State::closed;
        cv_.notify_all();
      }
    }
    if (thread_.joinable()) {
      container_.stop();
      thread_.join();
    }
  }

  // ---- the container's thread ----

  void on_container_start(proton::container& c) override {
    {
      std::lock_guard lock(mutex_);
      work_ = std::make_unique<proton::work_queue>(c);
    }
    connect_now();
    work_->schedule(kTick, proton::work([this] { tick(); }));
  }

  void on_connection_open(proton::connection& c) override {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    connection_ = c;
    connection_work_ = &c.work_queue();
    connect_deadline_.reset();
    state_ = State::open;
    attempt_ = 0;
    last_error_.reset();
    if (reconnects_ > 0) {
      reopened_.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::info, "AMQP connection to " + endpoint() + " is back");
    }
    for (auto& [address, in] : inbound_) {
      if (in->open) opens_.push_back(in);
    }
    post_drain_locked();
    cv_.notify_all();
  }

  void on_transport_error(proton::transport& t) override {
    lost(t.connection(), t.error(), "AMQP connection to " + endpoint());
  }

  void on_connection_error(proton::connection& c) override {
    lost(c, c.error(), "AMQP connection to " + endpoint() + " closed by the broker");
  }

  void on_transport_close(proton::transport& t) override {
    bool done = false;
    {
      std::lock_guard lock(mutex_);
      done = closing_;
    }
    if (done) {
      finish_close();
    } else {
      lost(t.connection(), proton::error_condition("proton:io", "connection closed"),
           "AMQP connection to " + endpoint());
    }
  }

  void on_connection_close(proton::connection&) override {
    bool done = false;
    {
      std::lock_guard lock(mutex_);
      done = closing_;
    }
    if (done) finish_close();
  }

  void on_sendable(proton::sender& s) override {
    auto it = sender_address_.find(s);
    if (it != sender_address_.end()) pump(it->second);
    if (auto node = channel_senders_.find(s); node != channel_senders_.end()) service_channel(node->second);
  }

  void on_sender_error(proton::sender& s) override {
    if (!channel_link_failed(s, s.error())) sender_failed(s, s.error());
  }
  void on_sender_close(proton::sender& s) override {
    if (!channel_link_failed(s, s.error())) sender_failed(s, s.error());
  }

  void on_receiver_error(proton::receiver& r) override {
    if (browser_failed(r)) return;
    if (!channel_link_failed(r, r.error())) receiver_failed(r, r.error());
  }
  void on_receiver_close(proton::receiver& r) override {
    if (browser_failed(r)) return;
    if (!channel_link_failed(r, r.error())) receiver_failed(r, r.error());
  }

  // A browser's link is attached: ask for up to max messages, and for the
  // broker to say when it has sent all it has (drain).
  void on_receiver_open(proton::receiver& r) override {
    auto it = browsers_.find(r);
    if (it == browsers_.end()) return;
    r.add_credit(static_cast<std::uint32_t>(std::min<std::size_t>(it->second->max, 1U << 20U)));
    r.drain();
  }

  void on_receiver_drain_finish(proton::receiver& r) override {
    auto it = browsers_.find(r);
    if (it != browsers_.end()) end_browse(it->second, std::nullopt);
  }

  // The broker settled a delivery the client had given an outcome without
  // settling it (settle_confirmed()).
  void on_delivery_settle(proton::delivery& d) override {
    auto it = awaiting_.find(d);
    if (it == awaiting_.end()) return;
    auto [op, index] = it->second;
    awaiting_.erase(it);
    std::optional<ErrorInfo> error = refusal_of(d, op->outcome);
    d.settle();
    std::lock_guard lock(mutex_);
    if (!op->answered[index]) answer_locked(*op, index, std::move(error));
    if (op->remaining == 0) cv_.notify_all();
  }

  void on_message(proton::delivery& d, proton::message& m) override {
    // The browsers and request/response channels are looked up only when
    // there are any: each lookup wraps the link in a proton::receiver.
    if (auto browser = browsers_.empty() ? browsers_.end() : browsers_.find(d.receiver()); browser != browsers_.end()) {
      const std::shared_ptr<BrowseOp> op = browser->second;
      std::vector<char> encoded;
      m.encode(encoded);
      d.accept();  // a copy: settling it takes nothing from the queue
      bool full = false;
      {
        std::lock_guard lock(mutex_);
        op->encoded.push_back(std::move(encoded));
        full = op->encoded.size() >= op->max;
      }
      if (full) end_browse(op, std::nullopt);
      return;
    }
    if (!channel_receivers_.empty() && on_reply(d, m)) return;
    pn_link_t* const link = pn_delivery_link(detail::c_delivery(d));
    auto it = receivers_.find(link);
    if (it == receivers_.end()) {
      d.release();
      return;
    }
    Incoming incoming;
    if (options_.reader) {
      // Read here, from the message proton reuses for every delivery.
      std::unique_ptr<Read> reuse;
      if (!io_reads_.empty()) {
        reuse = std::move(io_reads_.back());
        io_reads_.pop_back();
      }
      try {
        incoming.read = options_.reader(it->second->address, m, std::move(reuse));
      } catch (...) {
        incoming.read.reset();  // handed over instead (see MessageReader)
      }
    }
    if (!incoming.read) incoming.tag = d.tag();
    // Deliveries of the same read still queued behind this one are buffered
    // next, before proton writes or waits: receive() is woken once, after the
    // last of them, instead of once per message (a wake per message cost a
    // context switch each and handed receive() one message at a time). A
    // delivery still arriving in parts counts as queued too: the wake then
    // waits for its last frame, or for the receive()'s own deadline.
    const bool more_queued = pn_link_queued(link) > 1;
    std::lock_guard lock(mutex_);
    // The message proton decoded is handed over as it is: swapped with a
    // recycled one, which proton decodes the next delivery into.
    if (!incoming.read) {
      if (!spare_.empty()) {
        incoming.message = std::move(spare_.back());
        spare_.pop_back();
      }
      swap(incoming.message, m);
    }
    // The reads recycle() gave back, for the next deliveries (this thread
    // takes them without the lock).
    if (io_reads_.empty()) io_reads_.swap(spare_reads_);
    const std::uint32_t index = take_slot_locked();
    Slot& slot = slots_[index];
    slot.delivery = d;
    slot.state = Slot::State::held;
    incoming.id = (static_cast<std::uint64_t>(slot.generation) << 32) | index;
    it->second->buffer.push_back(std::move(incoming));
    if (!more_queued) {
      cv_.notify_all();
      if (options_.arrivals) options_.arrivals->ring_one();
    }
  }

  void on_tracker_accept(proton::tracker& t) override { tracker_done(t, std::nullopt); }

  void on_tracker_reject(proton::tracker& t) override {
    const proton::error_condition condition = remote_condition(t);
    tracker_done(t, ErrorInfo{Errc::broker, "the broker rejected the message: " + describe(condition)}.with_native(
                        condition.name(), condition.description()));
  }

  void on_tracker_release(proton::tracker& t) override {
    tracker_done(t, ErrorInfo{Errc::broker, "the broker released the message instead of accepting it"});
  }

  void on_tracker_settle(proton::tracker& t) override {
    tracker_done(t, ErrorInfo{Errc::broker, "the broker settled the message without an outcome"});
  }

 private:
  enum class State { connecting, open, reconnecting, closed };

  std::string endpoint() const { return options_.host + ":" + std::to_string(options_.port); }

  void log(LogLevel level, const std::string& text) const {
    if (options_.log) options_.log(level, text);
  }

  std::optional<ErrorInfo> refuse_if_closed() const {
    if (state_ == State::closed || closing_) return ErrorInfo{Errc::closed, "the AMQP client is closed"};
    return std::nullopt;
  }

  // Runs fn on the container's thread. mutex_ held. Work for an open
  // connection goes through the connection's own queue: proton writes what
  // the work produced (frames) only after work that ran in the connection's
  // context; the container's queue serves the gaps between connections.
  void post_locked(std::function<void()> fn) {
    if (connection_work_ != nullptr && connection_work_->add(proton::work(fn))) return;
    if (work_) work_->add(proton::work(std::move(fn)));
  }

  void post_drain_locked() {
    if (drain_posted_) return;
    drain_posted_ = true;
    post_locked([this] { drain(); });
  }

  proton::connection_options connection_options() const {
    proton::connection_options o;
    o.idle_timeout(proton::duration(options_.idle_timeout.count()));
    o.sasl_enabled(true);
    if (!options_.user.empty()) {
      o.user(options_.user);
      o.password(options_.password);
      o.sasl_allowed_mechs("PLAIN");
      // PLAIN over a plain socket is what the broker's acceptor offers; TLS
      // protects the password where it is on.
      o.sasl_allow_insecure_mechs(true);
    } else {
      o.sasl_allowed_mechs("ANONYMOUS");
    }
    const std::string& name = !options_.tls.server_name.empty() ? options_.tls.server_name : options_.virtual_host;
    if (!name.empty()) o.virtual_host(name);
    if (options_.tls.enabled) {
      const auto mode = options_.tls.verify ? proton::ssl::VERIFY_PEER_NAME : proton::ssl::ANONYMOUS_PEER;
      if (!options_.tls.cert_file.empty()) {
        proton::ssl_certificate cert(options_.tls.cert_file, options_.tls.key_file);
        o.ssl_client_options(proton::ssl_client_options(cert, options_.tls.ca_file, mode));
      } else if (!options_.tls.ca_file.empty()) {
        o.ssl_client_options(proton::ssl_client_options(options_.tls.ca_file, mode));
      } else {
        o.ssl_client_options(proton::ssl_client_options(mode));
      }
    }
    return o;
  }

  void connect_now() {
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      state_ = attempt_ == 0 && reconnects_ == 0 ? State::connecting : State::reconnecting;
    }
    const std::string url = std::string(options_.tls.enabled ? "amqps://" : "amqp://") + endpoint();
    try {
      connection_attempt_ = container_.connect(url, connection_options());
    } catch (const std::exception& e) {
      lost(connection_attempt_, proton::error_condition("proton:io", e.what()), "AMQP connection to " + endpoint());
      return;
    }
    // A connect that neither opens nor fails in time is given up (tick()).
    connect_deadline_ = Clock::now() + options_.connect_timeout;
  }

  // Timers without long proton timers: proton cannot cancel scheduled work,
  // and container::run() does not return before it has run, so one short
  // tick checks the connect deadline and the reconnect time.
  void tick() {
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
    }
    const auto now = Clock::now();
    if (connect_deadline_ && now >= *connect_deadline_) {
      connect_deadline_.reset();
      bool open = false;
      {
        std::lock_guard lock(mutex_);
        open = state_ == State::open;
      }
      if (!open) {
        proton::connection attempted = connection_attempt_;
        lost(attempted,
             proton::error_condition("proton:io:timeout",
                                     "no answer within " + std::to_string(options_.connect_timeout.count()) + " ms"),
             "AMQP connection to " + endpoint());
      }
    }
    if (reconnect_at_ && now >= *reconnect_at_) {
      reconnect_at_.reset();
      connect_now();
    }
    if (!audiences_.empty()) {
      // In the connection's context, so that the put-tokens it sends are
      // written at once (see post_locked()).
      std::lock_guard lock(mutex_);
      post_locked([this] { claims_tick(); });
    }
    work_->schedule(kTick, proton::work([this] { tick(); }));
  }

  // Events of a connection given up already (the transport closing after
  // its error) are ignored.
  void lost(const proton::connection& which, const proton::error_condition& condition, const std::string& where) {
    if (!(which == connection_attempt_)) return;
    if (connection_attempt_ && !connection_attempt_.closed()) connection_attempt_.close();
    connect_deadline_.reset();
    ErrorInfo error = classify(condition, where);
    std::vector<std::shared_ptr<SendOp>> touched;
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      connection_work_ = nullptr;
      const bool was_open = state_ == State::open;
      last_error_ = error;
      if (state_ == State::connecting) first_attempt_failed_ = true;
      state_ = State::reconnecting;
      // Sends on the wire: their outcome is unknown.
      fail_in_flight_locked(ErrorInfo{Errc::outcome_unknown,
                                      "the connection dropped before the broker confirmed (outcome unknown: the "
                                      "message may have arrived): " +
                                          error.message()});
      // Messages buffered or held: the broker delivers them again. The
      // receiver links died with the connection: forgetting them lets
      // on_connection_open() attach new ones (open_receiver() skips an
      // address whose link reports itself active, and a link of the
      // dropped connection still does).
      for (std::uint32_t index = 0; index < slots_.size(); ++index) {
        if (slots_[index].state != Slot::State::free) free_slot_locked(index);
      }
      for (auto& [address, in] : inbound_) {
        for (std::size_t i = 0; i < in->buffer.size(); ++i) {
          Incoming& m = in->buffer[i];
          if (!m.read && spare_.size() < spare_.capacity()) spare_.push_back(std::move(m.message));
        }
        in->buffer.clear();
        in->taken = 0;
        in->link = proton::receiver();
      }
      // A drain posted to the dropped connection's work queue may never
      // run once that connection is gone: left set, the flag would keep
      // every later drain from being posted, on_connection_open()'s
      // included. A drain that does run late is harmless.
      drain_posted_ = false;
      if (was_open) {
        ++reconnects_;
        log(LogLevel::warning, error.message() + "; reconnecting");
      }
      cv_.notify_all();
    }
    drop_request_state(
        ErrorInfo{Errc::connection, "the connection dropped before the broker answered: " + error.message()});
    receivers_.clear();
    // Browses in progress end with the connection (mutex_ not held here).
    const auto browsing = std::move(browsers_);
    browsers_.clear();
    for (const auto& [link, op] : browsing) {
      op->link = proton::receiver();
      end_browse(op, ErrorInfo{Errc::connection, "the connection dropped while browsing '" + op->address + "'"});
    }
    for (auto& [address, state] : senders_) {
      // Not yet sent: kept for the next connection.
      state.link = proton::sender();
    }
    sender_address_.clear();
    connection_ = proton::connection();
    connection_attempt_ = proton::connection();
    // Only the first connect reports to start(); it does not retry.
    bool retry = false;
    {
      std::lock_guard lock(mutex_);
      retry = !first_attempt_failed_ || reconnects_ > 0;
    }
    if (!retry) return;
    reconnect_at_ = Clock::now() + options_.reconnect.delay_for(attempt_++);
  }

  void drain() {
    std::vector<std::shared_ptr<SendOp>> sends;
    std::vector<std::shared_ptr<Inbound>> opens;
    bool open = false;
    {
      std::lock_guard lock(mutex_);
      drain_posted_ = false;
      open = state_ == State::open && connection_;
      if (!sends_.empty()) sends.swap(sends_);
      applying_.swap(settlements_);  // both keep their capacity: no allocation per drain
      confirming_.swap(confirms_);
      topups_.clear();
      if (open) {
        if (!opens_.empty()) opens.swap(opens_);
        for (const auto& [address, in] : inbound_) {
          if (in->taken > 0) topups_.push_back(in);
        }
      }
    }
    apply_settlements();
    apply_confirms();
    for (auto& op : sends) senders_[op->address].pending.push_back(std::move(op));
    if (!open) return;
    for (auto& in : opens) open_receiver(in);
    for (const auto& in : topups_) top_up(*in);
    for (auto& [address, state] : senders_) {
      if (!state.pending.empty()) pump(address);
    }
  }

  // ---- the delivery table ----

  // Marks a held id as being settled. False when it is not held (settled
  // already, stale, or never issued). mutex_ held.
  bool claim_locked(std::uint64_t id) {
    const auto index = static_cast<std::uint32_t>(id);
    if (index >= slots_.size()) return false;
    Slot& slot = slots_[index];
    if (slot.generation != static_cast<std::uint32_t>(id >> 32) || slot.state != Slot::State::held) return false;
    slot.state = Slot::State::settling;
    return true;
  }

  // A free slot's index, growing the table when none is. mutex_ held.
  std::uint32_t take_slot_locked() {
    if (!free_slots_.empty()) {
      const std::uint32_t index = free_slots_.back();
      free_slots_.pop_back();
      return index;
    }
    slots_.emplace_back();
    return static_cast<std::uint32_t>(slots_.size() - 1);
  }

  // Frees a slot: its id no longer matches. mutex_ held.
  void free_slot_locked(std::uint32_t index) {
    Slot& slot = slots_[index];
    slot.delivery = proton::delivery();
    slot.state = Slot::State::free;
    slot.generation = (slot.generation + 1) & kGenerationMask;
    if (slot.generation == 0) slot.generation = 1;
    free_slots_.push_back(index);
  }

  // Applies the settlements in applying_ (claimed by settle()), then frees
  // their slots under one lock.
  void apply_settlements() {
    if (applying_.empty()) return;
    applied_.clear();
    for (const auto& [id, outcome] : applying_) {
      const auto index = static_cast<std::uint32_t>(id);
      // Claimed (settling) slots change only here, on this thread; a slot
      // freed since (the connection dropped) has a new generation.
      if (index >= slots_.size()) continue;
      Slot& slot = slots_[index];
      if (slot.generation != static_cast<std::uint32_t>(id >> 32) || slot.state != Slot::State::settling) continue;
      settle_now(slot.delivery, outcome);
      applied_.push_back(index);
    }
    applying_.clear();
    std::lock_guard lock(mutex_);
    for (const std::uint32_t index : applied_) free_slot_locked(index);
  }

  static void settle_now(proton::delivery& d, const Outcome& outcome) {
    switch (outcome.kind) {
      case Outcome::Kind::accepted: d.accept(); break;
      case Outcome::Kind::released: d.release(); break;
      case Outcome::Kind::failed: detail::settle_modified_failed(d, false); break;
      case Outcome::Kind::failed_undeliverable: detail::settle_modified_failed(d, true); break;
      case Outcome::Kind::rejected: {
        pn_delivery_t* c = detail::c_delivery(d);
        pn_condition_t* cond = pn_disposition_condition(pn_delivery_local(c));
        if (!outcome.condition.empty()) pn_condition_set_name(cond, outcome.condition.c_str());
        if (!outcome.description.empty()) pn_condition_set_description(cond, outcome.description.c_str());
        pn_delivery_update(c, PN_REJECTED);
        pn_delivery_settle(c);
        break;
      }
    }
  }

  void open_receiver(const std::shared_ptr<Inbound>& in) {
    if (in->link && in->link.active()) return;
    const bool authorised = claims_ready("r:" + in->address, in->address, [this, in](std::optional<ErrorInfo> error) {
      if (error) {
        receiver_failed_for(in, std::move(*error));
      } else {
        open_receiver(in);
      }
    });
    if (!authorised) return;
    proton::source_options source;
    if (!options_.terminus_capabilities.empty()) source.capabilities(symbols(options_.terminus_capabilities));
    proton::receiver_options ro;
    ro.source(source);
    ro.credit_window(0);  // credit is ours to give: see top_up()
    ro.auto_accept(false);
    try {
      in->link = connection_.open_receiver(in->address, ro);
    } catch (const std::exception& e) {
      receiver_failed_for(
          in, ErrorInfo{Errc::connection, "could not open a receiver on '" + in->address + "': " + e.what()});
      return;
    }
    if (options_.receiver_settles_second) detail::request_receiver_settles_second(in->link);
    receivers_[detail::c_link(in->link)] = in;
    in->link.add_credit(options_.credit_window);
    std::lock_guard lock(mutex_);
    in->taken = 0;
  }

  void open_browser(const std::shared_ptr<BrowseOp>& op) {
    if (!connection_ || !connection_.active()) {
      end_browse(op, ErrorInfo{Errc::connection,
                               "no AMQP connection to " + endpoint() + " to browse '" + op->address + "' on"});
      return;
    }
    proton::source_options source;
    source.distribution_mode(proton::source::COPY);
    if (!options_.terminus_capabilities.empty()) source.capabilities(symbols(options_.terminus_capabilities));
    proton::receiver_options ro;
    ro.source(source);
    ro.credit_window(0);  // max credit once attached: see on_receiver_open()
    ro.auto_accept(false);
    try {
      op->link = connection_.open_receiver(op->address, ro);
    } catch (const std::exception& e) {
      end_browse(op, ErrorInfo{Errc::connection, "could not browse '" + op->address + "': " + e.what()});
      return;
    }
    browsers_[op->link] = op;
  }

  // Ends a browse (once): closes its link and wakes its caller.
  void end_browse(const std::shared_ptr<BrowseOp>& op, std::optional<ErrorInfo> error) {
    if (op->link) {
      browsers_.erase(op->link);
      if (op->link.active()) op->link.close();
      op->link = proton::receiver();
    }
    std::lock_guard lock(mutex_);
    if (op->done) return;
    op->done = true;
    if (error) op->error = std::move(error);
    cv_.notify_all();
  }

  // A browser's link closed or failed before its drain finished: an error
  // unless the broker merely closed it (then what came is all there is).
  bool browser_failed(proton::receiver& r) {
    auto it = browsers_.find(r);
    if (it == browsers_.end()) return false;
    const std::shared_ptr<BrowseOp> op = it->second;
    const proton::error_condition condition = r.error();
    end_browse(op, condition.empty() ? std::nullopt
                                     : std::optional<ErrorInfo>(classify(
                                           condition, "browsing '" + op->address + "' was refused by the broker")));
    return true;
  }
  // How much of the window receive() takes before it wakes the container's
  // thread for a top-up.
  std::size_t top_up_threshold() const { return std::max<std::size_t>(1, options_.credit_window / 4); }

  // Gives the broker credit for what receive() took out of the buffer.
  void top_up(Inbound& in) {
    if (!in.link || !in.link.active()) return;
    std::lock_guard lock(mutex_);
    const std::int64_t window = options_.credit_window;
    const std::int64_t want = window - in.link.credit() - static_cast<std::int64_t>(in.buffer.size());
    if (want > 0) in.link.add_credit(static_cast<std::uint32_t>(want));
    in.taken = 0;
  }

  void receiver_failed(proton::receiver& r, const proton::error_condition& condition) {
    auto it = receivers_.find(detail::c_link(r));
    if (it == receivers_.end()) return;
    auto in = it->second;
    receivers_.erase(it);
    bool closing = false;
    {
      std::lock_guard lock(mutex_);
      closing = closing_;
    }
    if (closing) return;
    receiver_failed_for(in, classify(condition, "the receiver on '" + in->address + "' was closed by the broker"));
  }

  void receiver_failed_for(const std::shared_ptr<Inbound>& in, ErrorInfo error) {
    in->link = proton::receiver();
    std::lock_guard lock(mutex_);
    in->open = false;  // the next receive() opens it again
    in->error = std::move(error);
    cv_.notify_all();
    if (options_.arrivals) options_.arrivals->ring();
  }

  struct SenderState {
    proton::sender link;
    std::deque<std::shared_ptr<SendOp>> pending;  // each sends from its messages[sent] on
    std::uint64_t next_tag = 0;
  };

  // Sends what waits for address while the link has credit.
  void pump(const std::string& address) {
    auto& state = senders_[address];
    if (!state.link) {
      if (!connection_) return;
      const bool authorised = claims_ready("s:" + address, address, [this, address](std::optional<ErrorInfo> error) {
        if (error) {
          fail_pending(senders_[address], *error);
        } else {
          pump(address);
        }
      });
      if (!authorised) return;
      proton::target_options target;
      if (!options_.terminus_capabilities.empty()) target.capabilities(symbols(options_.terminus_capabilities));
      try {
        state.link = connection_.open_sender(address, proton::sender_options().target(target));
      } catch (const std::exception& e) {
        fail_pending(state, ErrorInfo{Errc::connection, "could not open a sender on '" + address + "': " + e.what()});
        return;
      }
      sender_address_[state.link] = address;
      return;  // on_sendable calls again once the broker gives credit
    }
    // The bytes are encoded already: a transfer is a delivery, the bytes
    // and an advance on the C link, where proton::sender::send() would
    // encode a proton::message first.
    pn_link_t* link = detail::c_link(state.link);
    std::lock_guard lock(mutex_);
    while (!state.pending.empty() && state.link.active() && pn_link_credit(link) > 0) {
      const std::shared_ptr<SendOp>& op = state.pending.front();
      if (op->abandoned || op->sent == op->messages.size()) {
        state.pending.pop_front();
        continue;
      }
      const std::string_view bytes = op->messages[op->sent];
      if (auto refused = oversized(link, address, bytes.size())) {
        // Not sent: the peer would detach the link with an error, failing
        // every send behind this one.
        op->sent++;
        op->settled++;
        if (!op->error) op->error = std::move(refused);
        if (op->finished()) cv_.notify_all();
        continue;
      }
      char tag[sizeof state.next_tag];
      std::memcpy(tag, &state.next_tag, sizeof tag);
      ++state.next_tag;
      pn_delivery_t* delivery = pn_delivery(link, pn_dtag(tag, sizeof tag));
      pn_link_send(link, bytes.data(), bytes.size());
      pn_link_advance(link);
      op->sent++;
      in_flight_.emplace(delivery, op);
    }
  }

  // The error of a message larger than this client's limit or the one the
  // link's peer announced at attach (max-message-size; 0: none); nullopt
  // when it fits.
  std::optional<ErrorInfo> oversized(pn_link_t* link, const std::string& address, std::size_t size) const {
    const std::uint64_t ours = options_.max_message_size;
    const std::uint64_t peers = pn_link_remote_max_message_size(link);
    if (peers != 0 && size > peers && (ours == 0 || peers <= ours)) {
      return ::babelqueue::detail::message_too_large(address, size, "the broker", static_cast<std::size_t>(peers),
                                                     "the link's max-message-size");
    }
    if (ours != 0 && size > ours) {
      return ::babelqueue::detail::message_too_large(address, size, "this transport", static_cast<std::size_t>(ours),
                                                     "max_message_size");
    }
    return std::nullopt;
  }

  void fail_pending(SenderState& state, const ErrorInfo& error) {
    std::lock_guard lock(mutex_);
    fail_unsent_locked(state, error);
    cv_.notify_all();
  }

  // The messages of state that were not sent fail with error. mutex_ held.
  static void fail_unsent_locked(SenderState& state, const ErrorInfo& error) {
    for (auto& op : state.pending) {
      if (op->abandoned) continue;
      const std::size_t unsent = op->messages.size() - op->sent;
      op->sent += unsent;
      op->settled += unsent;
      if (!op->error) op->error = error;
    }
    state.pending.clear();
  }

  void sender_failed(proton::sender& s, const proton::error_condition& condition) {
    auto it = sender_address_.find(s);
    if (it == sender_address_.end()) return;
    const std::string address = it->second;
    sender_address_.erase(it);
    auto& state = senders_[address];
    state.link = proton::sender();
    ErrorInfo error = classify(condition, "the sender on '" + address + "' was closed by the broker");
    std::lock_guard lock(mutex_);
    if (closing_) return;
    pn_link_t* link = detail::c_link(s);
    for (auto t = in_flight_.begin(); t != in_flight_.end();) {
      if (pn_delivery_link(t->first) == link) {
        auto& op = t->second;
        op->settled++;
        op->unknown++;
        if (!op->error) op->error = error;
        t = in_flight_.erase(t);
      } else {
        ++t;
      }
    }
    fail_unsent_locked(state, error);
    cv_.notify_all();
  }

  void tracker_done(proton::tracker& t, std::optional<ErrorInfo> error) {
    std::lock_guard lock(mutex_);
    auto it = in_flight_.find(detail::c_delivery(t));
    if (it == in_flight_.end()) return;
    const std::shared_ptr<SendOp> op = std::move(it->second);  // erase() below frees the entry
    op->settled++;
    if (error) {
      if (!op->error) op->error = std::move(error);
    } else {
      op->confirmed++;
    }
    in_flight_.erase(it);
    if (op->finished()) cv_.notify_all();
  }

  void begin_close() {
    // Messages nobody took go back without counting a delivery.
    {
      std::lock_guard lock(mutex_);
      for (auto& [address, in] : inbound_) {
        for (std::size_t i = 0; i < in->buffer.size(); ++i) {
          const std::uint64_t id = in->buffer[i].id;
          if (claim_locked(id)) applying_.emplace_back(id, Outcome::released());
        }
        in->buffer.clear();
      }
    }
    apply_settlements();
    if (connection_ && connection_.active()) {
      connection_.close();
    } else {
      if (connection_attempt_) connection_attempt_.close();
      finish_close();
    }
  }

  // Every send on the wire settles as "outcome unknown" with error. mutex_ held.
  void fail_in_flight_locked(const ErrorInfo& error) {
    for (auto& [delivery, op] : in_flight_) {
      op->settled++;
      op->unknown++;
      if (!op->error) op->error = error;
    }
    in_flight_.clear();
    cv_.notify_all();
  }

  void finish_close() {
    drop_request_state(ErrorInfo{Errc::closed, "the AMQP client was closed before the broker answered"});
    std::lock_guard lock(mutex_);
    connection_work_ = nullptr;
    state_ = State::closed;
    // Sends still on the wire: the caller must not read them as accepted.
    fail_in_flight_locked(ErrorInfo{Errc::closed,
                                    "the AMQP client was closed before the broker confirmed (outcome unknown: the "
                                    "message may have arrived)"});
    cv_.notify_all();
  }

  // ==== Request/response nodes, claims and confirmed settlement ====

  using ReplyHandler = std::function<void(Result<proton::message>)>;
  using ClaimsWaiter = std::function<void(std::optional<ErrorInfo>)>;

  // mutex_ held.
  static void answer_locked(ConfirmOp& op, std::size_t index, std::optional<ErrorInfo> error) {
    op.errors[index] = std::move(error);
    op.answered[index] = true;
    --op.remaining;
  }

  // What the broker's settlement says about the outcome the client sent:
  // empty when it applied it. A rejected carrying an error is a refusal;
  // Service Bus names a lock it no longer holds
  // com.microsoft:message-lock-lost (the message comes back, or came back
  // already, to another receiver).
  static std::optional<ErrorInfo> refusal_of(const proton::delivery& d, const Outcome& sent) {
    pn_delivery_t* c = detail::c_delivery(d);
    if (pn_delivery_remote_state(c) != PN_REJECTED) return std::nullopt;
    pn_condition_t* cond = pn_disposition_condition(pn_delivery_remote(c));
    if (cond == nullptr || !pn_condition_is_set(cond)) {
      if (sent.kind == Outcome::Kind::rejected) return std::nullopt;
      return ErrorInfo{Errc::broker, "the broker rejected the settlement"};
    }
    const char* name = pn_condition_get_name(cond);
    const char* description = pn_condition_get_description(cond);
    const proton::error_condition e(name ? name : "", description ? description : "");
    if (e.name().find("lock-lost") != std::string::npos) {
      return ErrorInfo{Errc::not_found,
                       "the message's lock is gone (it expired, or the message was settled "
                       "already), so the broker delivers it again: " +
                           describe(e)};
    }
    return ErrorInfo{Errc::broker, "the broker refused the settlement: " + describe(e)};
  }

  // Sends the outcomes of the settle_confirmed() calls in confirming_
  // (their ids claimed by the caller) without settling, and frees their
  // slots: from here on each delivery waits in awaiting_ for the broker's
  // settlement. A call its caller gave up on (timeout) is sent all the
  // same, as the caller was told the outcome is unknown. An id whose slot
  // was freed since (the connection dropped) is not held.
  void apply_confirms() {
    if (confirming_.empty()) return;
    std::lock_guard lock(mutex_);
    for (const auto& op : confirming_) {
      for (std::size_t i = 0; i < op->ids.size(); ++i) {
        const std::uint64_t id = op->ids[i];
        const auto index = static_cast<std::uint32_t>(id);
        if (index >= slots_.size() || slots_[index].generation != static_cast<std::uint32_t>(id >> 32) ||
            slots_[index].state != Slot::State::settling) {
          if (!op->answered[i]) answer_locked(*op, i, not_held_error());
          continue;
        }
        detail::update_unsettled(slots_[index].delivery, op->outcome);
        awaiting_.emplace(slots_[index].delivery, std::make_pair(op, i));
        free_slot_locked(index);
      }
      if (op->remaining == 0) cv_.notify_all();
    }
    confirming_.clear();
  }

  void drain_requests() {
    std::vector<std::shared_ptr<RequestOp>> ops;
    {
      std::lock_guard lock(mutex_);
      ops.swap(requests_);
    }
    for (auto& op : ops) {
      send_request(op->node, std::move(op->message), [this, op](Result<proton::message> reply) {
        std::lock_guard lock(mutex_);
        if (!op->reply) op->reply = std::move(reply);
        cv_.notify_all();
      });
    }
  }

  // A request/response node: a sender to it, and a receiver from it whose
  // target is the reply-to address the node answers on.
  struct Channel {
    std::string node;
    std::string reply_to;
    proton::sender sender;
    proton::receiver receiver;
    std::deque<std::pair<proton::message, ReplyHandler>> waiting;  // for the links or credit
    std::map<std::string, ReplyHandler> outstanding;               // by message-id
  };

  static constexpr std::string_view kCbsNode = "$cbs";
  static constexpr int kReplyCredit = 100;

  void send_request(const std::string& node, proton::message message, ReplyHandler done) {
    if (!connection_) {
      done(unexpected(
          ErrorInfo{Errc::connection, "no AMQP connection to " + endpoint() + " for a request to '" + node + "'"}));
      return;
    }
    Channel& channel = channels_[node];
    channel.node = node;
    channel.waiting.emplace_back(std::move(message), std::move(done));
    service_channel(node);
  }

  void service_channel(const std::string& node) {
    auto it = channels_.find(node);
    if (it == channels_.end() || !connection_) return;
    Channel& channel = it->second;
    if (!channel.sender) {
      if (node != kCbsNode) {
        const bool authorised = claims_ready("m:" + node, node, [this, node](std::optional<ErrorInfo> error) {
          if (error) {
            fail_channel(node, *error);
          } else {
            service_channel(node);
          }
        });
        if (!authorised) return;
      }
      channel.reply_to = "babelqueue-reply-" + uuid_v4();
      try {
        proton::receiver_options ro;
        ro.target(proton::target_options().address(channel.reply_to));
        ro.credit_window(kReplyCredit);
        // The receiver first: its attach reaches the node before any request.
        channel.receiver = connection_.open_receiver(node, ro);
        channel.sender = connection_.open_sender(node);
      } catch (const std::exception& e) {
        fail_channel(node, ErrorInfo{Errc::connection, "could not open links to '" + node + "': " + e.what()});
        return;
      }
      channel_receivers_[channel.receiver] = node;
      channel_senders_[channel.sender] = node;
      return;  // on_sendable comes back once the node gives credit
    }
    while (!channel.waiting.empty() && channel.sender.active() && channel.sender.credit() > 0) {
      auto [message, done] = std::move(channel.waiting.front());
      channel.waiting.pop_front();
      const std::string id = uuid_v4();
      message.id(id);
      message.reply_to(channel.reply_to);
      channel.outstanding.emplace(id, std::move(done));
      channel.sender.send(message);
    }
  }

  static std::string id_text(const proton::message_id& id) {
    if (id.type() == proton::STRING) return proton::get<std::string>(id);
    return proton::to_string(id);
  }

  // A reply on a channel's receiver: handed to its request.
  bool on_reply(proton::delivery& d, proton::message& m) {
    auto node = channel_receivers_.find(d.receiver());
    if (node == channel_receivers_.end()) return false;
    d.accept();
    auto channel = channels_.find(node->second);
    if (channel == channels_.end()) return true;
    auto pending = channel->second.outstanding.find(id_text(m.correlation_id()));
    if (pending == channel->second.outstanding.end()) return true;  // its caller gave up
    ReplyHandler done = std::move(pending->second);
    channel->second.outstanding.erase(pending);
    done(m);
    return true;
  }

  // A channel's link closed: every request on it fails. False for links of
  // no channel.
  template <class Link>
  bool channel_link_failed(const Link& link, const proton::error_condition& condition) {
    std::string node;
    if constexpr (std::is_same_v<Link, proton::sender>) {
      auto it = channel_senders_.find(link);
      if (it == channel_senders_.end()) return false;
      node = it->second;
    } else {
      auto it = channel_receivers_.find(link);
      if (it == channel_receivers_.end()) return false;
      node = it->second;
    }
    fail_channel(node, classify(condition, "the link to '" + node + "' was closed by the broker"));
    return true;
  }

  void fail_channel(const std::string& node, const ErrorInfo& error) {
    auto it = channels_.find(node);
    if (it == channels_.end()) return;
    Channel channel = std::move(it->second);
    channels_.erase(it);
    channel_senders_.erase(channel.sender);
    channel_receivers_.erase(channel.receiver);
    if (channel.sender && channel.sender.active()) channel.sender.close();
    if (channel.receiver && channel.receiver.active()) channel.receiver.close();
    for (auto& [message, done] : channel.waiting) done(unexpected(error));
    for (auto& [id, done] : channel.outstanding) done(unexpected(error));
  }

  // ---- claims-based security ----

  // An audience's token on this connection.
  struct Audience {
    bool granted = false;     // a put-token was answered with success
    bool refreshing = false;  // a put-token for a fresh token is under way
    Clock::time_point refresh_at;
    Clock::time_point answer_by;                  // the put-token under way times out then
    std::map<std::string, ClaimsWaiter> waiters;  // by who waits: "s:address", "r:address", "m:node"
  };

  // True when a link to address may open now. Otherwise its audience's
  // token is being put, and then() runs once the broker answered (with the
  // error if it refused). key names the waiter, so that asking again
  // replaces the earlier wish instead of adding one.
  bool claims_ready(const std::string& key, std::string_view address, ClaimsWaiter then) {
    if (!options_.claims.token) return true;
    const std::string audience =
        options_.claims.audience_of ? options_.claims.audience_of(address) : std::string(address);
    auto it = audiences_.find(audience);
    if (it != audiences_.end() && it->second.granted) return true;
    const bool fresh = it == audiences_.end();
    if (fresh) it = audiences_.emplace(audience, Audience{}).first;
    it->second.waiters[key] = std::move(then);
    if (fresh) put_token(audience);
    return false;
  }

  void put_token(const std::string& audience) {
    auto token = options_.claims.token(audience);
    if (!token) {
      claims_answered(audience, token.error());
      return;
    }
    auto it = audiences_.find(audience);
    if (it == audiences_.end()) return;
    it->second.answer_by = Clock::now() + options_.claims.put_timeout;
    proton::message m;
    m.body(token->token);
    m.properties().put("operation", std::string("put-token"));
    m.properties().put("type", token->type);
    m.properties().put("name", audience);
    m.properties().put(
        "expiration",
        proton::timestamp(
            std::chrono::duration_cast<std::chrono::milliseconds>(token->expires_at.time_since_epoch()).count()));
    const auto lifetime = token->expires_at - std::chrono::system_clock::now();
    send_request(std::string(kCbsNode), std::move(m), [this, audience, lifetime](Result<proton::message> reply) {
      if (!reply) {
        claims_answered(audience, reply.error());
        return;
      }
      std::int64_t status = 0;
      std::string description;
      const auto& props = reply->properties();
      if (props.exists("status-code")) status = proton::coerce<std::int64_t>(props.get("status-code"));
      if (props.exists("status-description")) description = proton::to_string(props.get("status-description"));
      if (status == 200 || status == 202) {
        if (auto a = audiences_.find(audience); a != audiences_.end()) {
          const auto refresh_in = std::chrono::duration_cast<Clock::duration>(lifetime * options_.claims.refresh_after);
          a->second.refresh_at = Clock::now() + std::max(refresh_in, Clock::duration(std::chrono::seconds(1)));
        }
        claims_answered(audience, std::nullopt);
        return;
      }
      claims_answered(audience, ErrorInfo{status == 401 || status == 403 ? Errc::auth : Errc::broker,
                                          "the broker refused the token for '" + audience + "' (status " +
                                              std::to_string(status) + ": " + description + ")"});
    });
  }

  void claims_answered(const std::string& audience, std::optional<ErrorInfo> error) {
    auto it = audiences_.find(audience);
    if (it == audiences_.end()) return;
    Audience& a = it->second;
    if (a.granted) {
      // A refresh: the links keep the token they have until it expires.
      a.refreshing = false;
      if (error) {
        log(LogLevel::warning,
            "could not put a fresh token for '" + audience + "': " + error->message() + "; trying again in 5 s");
        a.refresh_at = Clock::now() + std::chrono::seconds(5);
      }
      return;
    }
    std::map<std::string, ClaimsWaiter> waiters = std::move(a.waiters);
    if (error) {
      audiences_.erase(it);  // the next link asks again
    } else {
      a.granted = true;
    }
    for (auto& [key, then] : waiters) then(error);
  }

  // Puts fresh tokens before the old ones expire; a put-token unanswered
  // in time fails its waiters.
  void claims_tick() {
    if (audiences_.empty()) return;
    const auto now = Clock::now();
    std::vector<std::string> refresh;
    std::vector<std::string> late;
    for (auto& [audience, a] : audiences_) {
      if (a.granted && !a.refreshing && now >= a.refresh_at) refresh.push_back(audience);
      if (!a.granted && now >= a.answer_by) late.push_back(audience);
    }
    for (const auto& audience : late) {
      claims_answered(audience,
                      ErrorInfo{Errc::timeout, "no answer to the put-token for '" + audience + "' within " +
                                                   std::to_string(options_.claims.put_timeout.count()) + " ms"});
    }
    for (const auto& audience : refresh) {
      if (auto it = audiences_.find(audience); it != audiences_.end()) {
        it->second.refreshing = true;
        put_token(audience);
      }
    }
  }

  // The connection is gone (or closing): its tokens, channels and pending
  // confirmations with it.
  void drop_request_state(const ErrorInfo& error) {
    audiences_.clear();  // the links that waited are opened again, and ask again, on the next connection
    std::vector<std::string> nodes;
    for (const auto& [node, channel] : channels_) nodes.push_back(node);
    for (const auto& node : nodes) fail_channel(node, error);
    channel_senders_.clear();
    channel_receivers_.clear();
    std::lock_guard lock(mutex_);
    for (auto& [d, ref] : awaiting_) {
      auto& [op, index] = ref;
      if (!op->answered[index]) answer_locked(*op, index, error);
    }
    awaiting_.clear();
    for (auto& op : confirms_) {
      for (std::size_t i = 0; i < op->ids.size(); ++i) {
        if (!op->answered[i]) answer_locked(*op, i, error);
      }
    }
    confirms_.clear();
    for (auto& op : requests_) {
      if (!op->reply) op->reply = unexpected(error);
    }
    requests_.clear();
    cv_.notify_all();
  }

  ConnectionOptions options_;
  proton::container container_;
  std::thread thread_;

  // Shared with the callers.
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  State state_ = State::connecting;
  bool closing_ = false;
  bool first_attempt_failed_ = false;
  std::optional<ErrorInfo> last_error_;
  int reconnects_ = 0;
  // Connections opened again after one was lost; read from any thread.
  std::atomic<std::uint64_t> reopened_{0};
  bool drain_posted_ = false;
  std::map<std::string, std::shared_ptr<Inbound>, std::less<>> inbound_;
  std::vector<std::shared_ptr<SendOp>> sends_;
  std::vector<std::shared_ptr<Inbound>> opens_;
  std::vector<std::pair<std::uint64_t, Outcome>> settlements_;
  std::unordered_map<pn_delivery_t*, std::shared_ptr<SendOp>> in_flight_;
  // Messages received and handed out, for proton to decode later deliveries
  // into (recycle()); its capacity is fixed (see receive()).
  std::vector<proton::message> spare_;
  // Reads handed out and given back by recycle(), for the reader to fill
  // again: a Read allocated on this thread and freed on a receiving one each
  // time is the allocator's slow path. Both keep the same fixed capacity.
  std::vector<std::unique_ptr<Read>> spare_reads_;  // mutex_
  std::vector<std::unique_ptr<Read>> io_reads_;     // the container's thread only

  // The delivery table: a received message's slot from on_message() until
  // its settlement is applied. An id is the slot's index (low 32 bits) and
  // its generation (the 24 bits above: the top byte stays the caller's, see
  // Incoming::id), which changes each time the slot is freed, so a stale id
  // no longer matches. The table grows under mutex_ on
  // the container's thread; generation and state are read and written under
  // mutex_, delivery on the container's thread only.
  static constexpr std::uint32_t kGenerationMask = 0xFFFFFF;
  struct Slot {
    proton::delivery delivery;
    std::uint32_t generation = 1;
    enum class State : std::uint8_t { free, held, settling } state = State::free;
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;

  // Set on the container's thread under mutex_, used by post_locked().
  std::unique_ptr<proton::work_queue> work_;
  proton::work_queue* connection_work_ = nullptr;

  // The container's thread only.
  proton::connection connection_;
  proton::connection connection_attempt_;
  std::int64_t attempt_ = 0;
  std::optional<Clock::time_point> connect_deadline_;
  std::optional<Clock::time_point> reconnect_at_;
  std::map<std::string, SenderState> senders_;
  std::map<proton::sender, std::string> sender_address_;
  std::unordered_map<pn_link_t*, std::shared_ptr<Inbound>> receivers_;
  std::map<proton::receiver, std::shared_ptr<BrowseOp>> browsers_;
  std::vector<std::pair<std::uint64_t, Outcome>> applying_;  // apply_settlements()'s batch
  std::vector<std::uint32_t> applied_;
  std::vector<std::shared_ptr<Inbound>> topups_;  // drain()'s: receivers with credit to give back

  // Request/response, claims and confirmed settlement. Under mutex_:
  std::vector<std::shared_ptr<RequestOp>> requests_;
  std::vector<std::shared_ptr<ConfirmOp>> confirms_;
  std::vector<std::shared_ptr<ConfirmOp>> confirming_;  // apply_confirms()'s batch (the container's thread)
  // The container's thread only:
  std::map<std::string, Channel> channels_;
  std::map<proton::sender, std::string> channel_senders_;
  std::map<proton::receiver, std::string> channel_receivers_;
  std::map<std::string, Audience> audiences_;
  std::map<proton::delivery, std::pair<std::shared_ptr<ConfirmOp>, std::size_t>> awaiting_;
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::connect(ConnectionOptions options) {
  if (auto checked = options.tls.check(); !checked) return unexpected(checked.error());
  if (auto usable = options.tls.check_files(); options.tls.enabled && !usable) return unexpected(usable.error());
  if (options.tls.enabled) {
    // Proton reports an unreadable file only as a failed handshake.
    for (const auto& [name, path] :
         {std::pair{"tls_ca", &options.tls.ca_file}, std::pair{"tls_cert", &options.tls.cert_file},
          std::pair{"tls_key", &options.tls.key_file}}) {
      if (!path->empty() && !std::ifstream(*path).good()) {
        return unexpected(Errc::invalid_argument, std::string(name) + " '" + *path + "' cannot be read");
      }
    }
  }
  if (options.host.empty()) return unexpected(ErrorInfo{Errc::invalid_argument, "the AMQP host is empty"});
  if (options.credit_window == 0) {
    return unexpected(ErrorInfo{Errc::invalid_argument, "the AMQP credit window must be at least 1"});
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  if (auto started = impl->start(); !started) return unexpected(started.error());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Result<std::shared_ptr<SendOp>> Client::start_send(std::string_view address, EncodedMessages messages) {
  return impl_->start_send(address, std::move(messages));
}

Result<void> Client::finish_send(SendOp& op, std::chrono::steady_clock::time_point deadline) {
  return impl_->finish_send(op, deadline);
}

Result<void> Client::send(std::string_view address, EncodedMessages messages, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto op = start_send(address, std::move(messages));
  if (!op) return unexpected(op.error());
  return finish_send(**op, deadline);
}

Result<void> Client::send(std::string_view address, std::vector<proton::message> messages,
                          std::chrono::milliseconds timeout) {
  EncodedMessages encoded;
  for (const auto& m : messages) encoded.append(m);
  return send(address, std::move(encoded), timeout);
}

Result<std::vector<Incoming>> Client::receive(std::string_view address, std::size_t max,
                                              std::chrono::milliseconds wait) {
  return impl_->receive(address, max, wait);
}

Result<std::vector<std::vector<char>>> Client::browse(std::string_view address, std::size_t max,
                                                      std::chrono::milliseconds timeout) {
  return impl_->browse(address, max, timeout);
}
void Client::recycle(std::vector<Incoming>& used) { impl_->recycle(used); }

Result<void> Client::settle(std::uint64_t id, Outcome outcome) { return impl_->settle(id, std::move(outcome)); }

Result<void> Client::settle(std::span<const std::uint64_t> ids, const Outcome& outcome,
                            std::vector<std::size_t>& not_held) {
  return impl_->settle(ids, outcome, not_held);
}

Result<proton::message> Client::request(std::string_view node, proton::message message,
                                        std::chrono::milliseconds timeout) {
  return impl_->request(node, std::move(message), timeout);
}

std::vector<std::optional<ErrorInfo>> Client::settle_confirmed(std::span<const std::uint64_t> ids,
                                                               const Outcome& outcome,
                                                               std::chrono::milliseconds timeout) {
  return impl_->settle_confirmed(ids, outcome, timeout);
}

std::uint64_t Client::reconnects() const noexcept { return impl_->reopened(); }

void EncodedMessages::append(const proton::message& message) {
  std::vector<char> encoded;
  message.encode(encoded);
  bytes.insert(bytes.end(), encoded.begin(), encoded.end());
  ends.push_back(bytes.size());
}

Result<void> EncodedMessages::append(pn_message_t* message) {
  const std::size_t start = bytes.size();
  // Room for twice the last message, the first time 1 KiB: one attempt
  // nearly always.
  std::size_t room = 1024;
  if (!ends.empty()) room = std::max(room, 2 * (ends.back() - (ends.size() > 1 ? ends[ends.size() - 2] : 0)));
  for (;;) {
    bytes.resize(start + room);
    std::size_t size = room;
    const int err = pn_message_encode(message, bytes.data() + start, &size);
    if (err == 0) {
      bytes.resize(start + size);
      ends.push_back(bytes.size());
      return {};
    }
    if (err != PN_OVERFLOW) {
      bytes.resize(start);
      return unexpected(Errc::invalid_argument, std::string("the AMQP message cannot be encoded: ") + pn_code(err));
    }
    room *= 2;
  }
}

bool Client::connected() const { return impl_->connected(); }

void Client::close(std::chrono::milliseconds deadline) { impl_->close(deadline); }

}  // namespace babelqueue::amqp10
