// SPDX-License-Identifier: Apache-2.0
#include "client.hpp"

#include "c_handles.hpp"
#include "c_message.hpp"
#include "encoded_message.hpp"
#include "ring.hpp"

#include <babelqueue/detail/message_size.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/uuid.hpp>

#include <proton/condition.h>
#include <proton/connection.h>
#include <proton/delivery.h>
#include <proton/disposition.h>
#include <proton/error.h>
#include <proton/event.h>
#include <proton/link.h>
#include <proton/message.h>
#include <proton/proactor.h>
#include <proton/sasl.h>
#include <proton/session.h>
#include <proton/ssl.h>
#include <proton/terminus.h>
#include <proton/transport.h>

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
#include <proton/error.hpp>
#include <proton/message_id.hpp>
#include <proton/timestamp.hpp>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace babelqueue::amqp10 {

namespace {

using Clock = std::chrono::steady_clock;

// How often the I/O thread checks its deadlines (Impl::tick()), in ms.
constexpr pn_millis_t kTickMs = 100;

// A condition as the peer (or proton) stated it.
struct Condition {
  std::string name;
  std::string description;
  bool empty() const { return name.empty(); }
};

Condition condition_of(pn_condition_t* c) {
  if (c == nullptr || !pn_condition_is_set(c)) return {};
  const char* name = pn_condition_get_name(c);
  const char* description = pn_condition_get_description(c);
  return Condition{name ? name : "", description ? description : ""};
}

std::string describe(const Condition& e) {
  if (e.empty()) return "no error condition";
  std::string text = e.name;
  if (!e.description.empty()) text += ": " + e.description;
  return text;
}

// What a connection or link failure means to the caller.
ErrorInfo classify_condition(const Condition& e, std::string_view where) {
  const std::string& name = e.name;
  const std::string text = std::string(where) + ": " + describe(e);
  if (name == "amqp:unauthorized-access") return ErrorInfo{Errc::auth, text + " (credentials refused)"};
  if (e.description.find("SSL") != std::string::npos || e.description.find("certificate") != std::string::npos) {
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

// The broker's condition as an ErrorInfo (classify adds its name and text).
ErrorInfo classify(const Condition& e, std::string_view where) {
  return classify_condition(e, where).with_native(e.name, e.description);
}

// Sets a terminus's capabilities: an array of symbols.
void put_capabilities(pn_terminus_t* terminus, const std::vector<std::string>& names) {
  if (names.empty()) return;
  pn_data_t* caps = pn_terminus_capabilities(terminus);
  pn_data_clear(caps);
  pn_data_put_array(caps, false, PN_SYMBOL);
  pn_data_enter(caps);
  for (const auto& n : names) pn_data_put_symbol(caps, pn_bytes(n.size(), n.data()));
  pn_data_exit(caps);
}

// Attached locally and not closed by the peer.
bool link_usable(pn_link_t* link) {
  const pn_state_t state = pn_link_state(link);
  return (state & PN_LOCAL_ACTIVE) != 0 && (state & PN_REMOTE_CLOSED) == 0;
}

// Puts bytes on link as one unsettled transfer tagged with the next tag.
pn_delivery_t* transfer(pn_link_t* link, std::string_view bytes, std::uint64_t& next_tag) {
  char tag[sizeof next_tag];
  std::memcpy(tag, &next_tag, sizeof tag);
  ++next_tag;
  pn_delivery_t* delivery = pn_delivery(link, pn_dtag(tag, sizeof tag));
  pn_link_send(link, bytes.data(), bytes.size());
  pn_link_advance(link);
  return delivery;
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
  pn_link_t* link = nullptr;  // the I/O thread only
};

// One browse(): a copy-mode receiver drained once.
struct BrowseOp {
  std::string address;
  std::size_t max = 0;
  std::vector<std::vector<char>> encoded;  // Impl::mutex_
  std::optional<ErrorInfo> error;          // Impl::mutex_
  bool done = false;                       // Impl::mutex_
  pn_link_t* link = nullptr;               // the I/O thread only
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

class Client::Impl final {
 public:
  explicit Impl(ConnectionOptions options)
      : options_(std::move(options)),
        container_id_(options_.container_id.empty() ? "babelqueue-" + uuid_v4() : options_.container_id),
        proactor_(pn_proactor()) {
    spare_.reserve(std::min<std::size_t>(options_.credit_window, 1024) + 64);
    spare_reads_.reserve(spare_.capacity());
    io_reads_.reserve(spare_.capacity());
  }

  ~Impl() {
    close(std::chrono::seconds(5));
    if (proactor_ != nullptr) pn_proactor_free(proactor_);
  }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Result<void> start() {
    thread_ = std::thread([this] { run(); });
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
    // The I/O thread tops the credit up each time it drains (for
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
      stopping_.store(true);
      pn_proactor_interrupt(proactor_);
      thread_.join();
    }
  }

  // ---- the I/O thread ----

  // Waits for proton's events and handles them, until close() stops it.
  void run() {
    connect_now();
    pn_proactor_set_timeout(proactor_, kTickMs);
    bool running = true;
    while (running) {
      pn_event_batch_t* batch = pn_proactor_wait(proactor_);
      try {
        while (pn_event_t* event = pn_event_batch_next(batch)) {
          if (!handle(event)) running = false;
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        last_error_ = ErrorInfo{Errc::internal, std::string("the AMQP client's I/O thread stopped: ") + e.what()};
        state_ = State::closed;
        cv_.notify_all();
        running = false;
      }
      pn_proactor_done(proactor_, batch);
    }
  }

  // One event; false once the thread is to stop.
  bool handle(pn_event_t* event) {
    switch (pn_event_type(event)) {
      case PN_DELIVERY: on_delivery(pn_event_delivery(event)); break;
      case PN_LINK_FLOW: on_link_flow(pn_event_link(event)); break;
      case PN_CONNECTION_WAKE: run_work(); break;
      case PN_PROACTOR_INTERRUPT:
        if (stopping_.load()) return false;
        run_work_outside();
        break;
      case PN_PROACTOR_TIMEOUT:
        if (stopping_.load()) return false;
        tick();
        run_work_outside();
        pn_proactor_set_timeout(proactor_, kTickMs);
        break;
      case PN_CONNECTION_REMOTE_OPEN: on_connection_open(pn_event_connection(event)); break;
      case PN_CONNECTION_REMOTE_CLOSE: on_connection_remote_close(pn_event_connection(event)); break;
      case PN_TRANSPORT_CLOSED: on_transport_closed(pn_event_connection(event), pn_event_transport(event)); break;
      case PN_LINK_REMOTE_OPEN: on_link_open(pn_event_link(event)); break;
      case PN_LINK_REMOTE_CLOSE:
      case PN_LINK_REMOTE_DETACH: on_link_remote_close(pn_event_link(event)); break;
      default: break;
    }
    return true;
  }

  // Runs the work callers posted (post_locked()), in the context of the
  // connection's own events, so proton writes what it produced at once.
  // False when there was none.
  bool run_work() {
    {
      std::lock_guard lock(mutex_);
      wake_posted_ = false;
      if (work_.empty()) return false;
      running_.swap(work_);
    }
    for (auto& fn : running_) fn();
    running_.clear();
    return true;
  }

  // The same outside the connection's events (no connection was open when
  // the work was posted): the connection, if one is there now, is woken
  // so that proton writes what the work produced (none: no wake, which
  // each tick would otherwise cost an idle client).
  void run_work_outside() {
    if (run_work() && connection_attempt_ != nullptr) pn_connection_wake(connection_attempt_);
  }

  void on_connection_open(pn_connection_t* c) {
    if (c != connection_attempt_) return;
    std::lock_guard lock(mutex_);
    if (closing_) return;
    connection_ = c;
    wakeable_ = c;
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

  void on_connection_remote_close(pn_connection_t* c) {
    const Condition condition = condition_of(pn_connection_remote_condition(c));
    bool done = false;
    {
      std::lock_guard lock(mutex_);
      done = closing_;
    }
    if (done) {
      finish_close();
    } else if (!condition.empty()) {
      lost(c, condition, "AMQP connection to " + endpoint() + " closed by the broker");
    }
    if ((pn_connection_state(c) & PN_LOCAL_CLOSED) == 0) pn_connection_close(c);
  }

  // The connection's last event: proton frees it (its links and deliveries
  // too) once this batch is done.
  void on_transport_closed(pn_connection_t* c, pn_transport_t* t) {
    bool done = false;
    {
      std::lock_guard lock(mutex_);
      forget_wakeable_locked(c);
      done = closing_;
    }
    if (done) {
      if (c == connection_attempt_ || connection_attempt_ == nullptr) finish_close();
    } else {
      Condition condition = condition_of(pn_transport_condition(t));
      if (condition.empty()) condition = Condition{"proton:io", "connection closed"};
      lost(c, condition, "AMQP connection to " + endpoint());
    }
    if (c == connection_attempt_) {
      connection_attempt_ = nullptr;
      connection_ = nullptr;
    }
  }

  void on_link_flow(pn_link_t* link) {
    if (pn_link_is_sender(link)) {
      if (pn_link_credit(link) <= 0) return;
      if (auto it = sender_address_.find(link); it != sender_address_.end()) pump(it->second);
      if (auto node = channel_senders_.find(link); node != channel_senders_.end()) service_channel(node->second);
      return;
    }
    // A browser's drain is over once the broker used up or took back all
    // its credit.
    if (browsers_.empty()) return;
    auto it = browsers_.find(link);
    if (it != browsers_.end() && pn_link_get_drain(link) && !pn_link_draining(link))
      end_browse(it->second, std::nullopt);
  }

  // A link the peer attached: a browser asks for up to max messages, and
  // for the broker to say when it has sent all it has (drain).
  void on_link_open(pn_link_t* link) {
    auto it = browsers_.find(link);
    if (it == browsers_.end()) return;
    pn_link_drain(link, static_cast<int>(std::min<std::size_t>(it->second->max, 1U << 20U)));
  }

  void on_link_remote_close(pn_link_t* link) {
    const Condition condition = condition_of(pn_link_remote_condition(link));
    if (pn_link_is_sender(link)) {
      if (!channel_link_failed(link, condition, true)) sender_failed(link, condition);
    } else if (!browser_failed(link, condition) && !channel_link_failed(link, condition, false)) {
      receiver_failed(link, condition);
    }
    if ((pn_link_state(link) & PN_LOCAL_CLOSED) == 0) pn_link_close(link);
    // A link of ours done with (a browser's, a request channel's) holds no
    // delivery anyone refers to: freed now, not with the connection.
    if (finished_links_.erase(link) > 0) pn_link_free(link);
  }

  void on_delivery(pn_delivery_t* d) {
    pn_link_t* const link = pn_delivery_link(d);
    if (pn_link_is_sender(link)) {
      if (pn_delivery_updated(d)) on_outcome(d);
      return;
    }
    if (pn_delivery_aborted(d)) {
      if (d == pn_link_current(link)) pn_link_advance(link);
      pn_delivery_settle(d);
      return;
    }
    if (pn_delivery_readable(d)) {
      if (!pn_delivery_partial(d)) on_message(d, link);
      return;
    }
    if (pn_delivery_updated(d) && pn_delivery_settled(d)) on_delivery_settle(d);
  }

  // Reads a whole delivery's bytes into recv_ and moves the link on.
  void read_delivery(pn_delivery_t* d, pn_link_t* link) {
    recv_.resize(pn_delivery_pending(d));
    std::size_t have = 0;
    for (;;) {
      if (have == recv_.size()) recv_.resize(std::max<std::size_t>(have * 2, 1024));
      const ssize_t n = pn_link_recv(link, recv_.data() + have, recv_.size() - have);
      if (n <= 0) break;  // PN_EOS: the delivery is read
      have += static_cast<std::size_t>(n);
    }
    recv_.resize(have);
    pn_link_advance(link);
  }

  // False (and the delivery given back to the broker as failed) when recv_
  // is not a run of AMQP message sections, before proton's decoder sees
  // it: that asserts a size (a transfer of no bytes would end the process)
  // and takes other bytes, a JSON document say, for an empty message
  // without an error, whose bytes a consumer would then never see.
  bool holds_sections(pn_delivery_t* d, std::string_view address) {
    if (recv_.empty()) {
      give_back_undecodable(d, address, "the transfer holds no bytes");
      return false;
    }
    if (well_formed_sections(std::string_view(recv_.data(), recv_.size()))) return true;
    static constexpr char kHex[] = "0123456789abcdef";
    std::string start;
    for (std::size_t i = 0; i < recv_.size() && i < 8; ++i) {
      const auto byte = static_cast<unsigned char>(recv_[i]);
      start += (i == 0 ? "" : " ");
      start += kHex[byte >> 4];
      start += kHex[byte & 0xf];
    }
    give_back_undecodable(d, address,
                          "its " + std::to_string(recv_.size()) +
                              " bytes are not AMQP 1.0 message sections (they start with " + start + ")");
    return false;
  }

  // Decodes recv_ into message; false (and the delivery given back to the
  // broker as failed) when it is no AMQP message.
  bool decode_into(proton::message& message, pn_delivery_t* d, std::string_view address) {
    if (!holds_sections(d, address)) return false;
    try {
      message.decode(recv_);
      return true;
    } catch (const std::exception& e) {
      give_back_undecodable(d, address, e.what());
      return false;
    }
  }

  // A delivery that is no AMQP message: kept, given back to the broker as
  // failed (it counts a delivery, so the broker's own dead-lettering ends
  // its round trips).
  void give_back_undecodable(pn_delivery_t* d, std::string_view address, const std::string& why) {
    log(LogLevel::error, "a message from '" + std::string(address) +
                             "' is not a valid AMQP message; it goes back to the broker as failed: " + why);
    detail::settle_modified_failed(d, false);
  }

  // The broker settled a delivery the client had given an outcome without
  // settling it (settle_confirmed()).
  void on_delivery_settle(pn_delivery_t* d) {
    auto it = awaiting_.find(d);
    if (it == awaiting_.end()) return;
    auto [op, index] = it->second;
    awaiting_.erase(it);
    std::optional<ErrorInfo> error = refusal_of(d, op->outcome);
    pn_delivery_settle(d);
    std::lock_guard lock(mutex_);
    if (!op->answered[index]) answer_locked(*op, index, std::move(error));
    if (op->remaining == 0) cv_.notify_all();
  }

  void on_message(pn_delivery_t* d, pn_link_t* link) {
    // The browsers and request/response channels are looked up only when
    // there are any.
    if (!browsers_.empty()) {
      if (auto browser = browsers_.find(link); browser != browsers_.end()) {
        const std::shared_ptr<BrowseOp> op = browser->second;
        read_delivery(d, link);
        settle_now(d, Outcome::accepted());  // a copy: settling it takes nothing from the queue
        bool full = false;
        {
          std::lock_guard lock(mutex_);
          op->encoded.push_back(recv_);
          full = op->encoded.size() >= op->max;
        }
        if (full) end_browse(op, std::nullopt);
        return;
      }
    }
    if (!channel_receivers_.empty() && on_reply(d, link)) return;
    auto it = receivers_.find(link);
    if (it == receivers_.end()) {
      read_delivery(d, link);
      settle_now(d, Outcome::released());
      return;
    }
    // Deliveries of the same read still queued behind this one are buffered
    // next, before proton writes or waits: receive() is woken once, after the
    // last of them, instead of once per message (a wake per message cost a
    // context switch each and handed receive() one message at a time). A
    // delivery still arriving in parts counts as queued too: the wake then
    // waits for its last frame, or for the receive()'s own deadline.
    const bool more_queued = pn_link_queued(link) > 1;
    read_delivery(d, link);
    const std::string& address = it->second->address;
    Incoming incoming;
    std::unique_ptr<Read> reuse;
    if ((options_.encoded_reader || options_.reader) && !io_reads_.empty()) {
      reuse = std::move(io_reads_.back());
      io_reads_.pop_back();
    }
    if (options_.encoded_reader) {
      // Read off the bytes, when the message is one that reading covers.
      try {
        incoming.read = options_.encoded_reader(address, std::string_view(recv_.data(), recv_.size()), reuse);
      } catch (...) {
        incoming.read.reset();  // declined (see EncodedReader)
      }
    }
    if (!incoming.read && options_.reader) {
      if (!holds_sections(d, address)) {
        if (reuse) io_reads_.push_back(std::move(reuse));  // for the next delivery
        return;
      }
      // Read here, from the C message every delivery is decoded into
      // (cleared first: decoding leaves a section the message lacks as the
      // last message had it).
      pn_message_clear(io_c_message_.get());
      if (pn_message_decode(io_c_message_.get(), recv_.data(), recv_.size()) != 0) {
        give_back_undecodable(d, address, pn_error_text(pn_message_error(io_c_message_.get())));
        if (reuse) io_reads_.push_back(std::move(reuse));  // for the next delivery
        return;
      }
      try {
        incoming.read = options_.reader(address, io_c_message_.get(), std::move(reuse));
      } catch (...) {
        incoming.read.reset();  // handed over instead (see MessageReader)
      }
    }
    if (reuse) io_reads_.push_back(std::move(reuse));  // not taken: for the next delivery
    if (!incoming.read) {
      if (!decode_into(io_message_, d, address)) return;
      const pn_delivery_tag_t tag = pn_delivery_tag(d);
      incoming.tag = proton::binary(tag.start, tag.start + tag.size);
    }
    std::lock_guard lock(mutex_);
    // The message decoded is handed over as it is: swapped with a recycled
    // one, which the next delivery is decoded into.
    if (!incoming.read) {
      if (!spare_.empty()) {
        incoming.message = std::move(spare_.back());
        spare_.pop_back();
      }
      swap(incoming.message, io_message_);
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

  // The peer's answer to a message sent.
  void on_outcome(pn_delivery_t* d) {
    switch (pn_delivery_remote_state(d)) {
      case PN_ACCEPTED: tracker_done(d, std::nullopt); break;
      case PN_REJECTED: {
        const Condition condition = condition_of(pn_disposition_condition(pn_delivery_remote(d)));
        tracker_done(d, ErrorInfo{Errc::broker, "the broker rejected the message: " + describe(condition)}.with_native(
                            condition.name, condition.description));
        break;
      }
      case PN_RELEASED:
      case PN_MODIFIED:
        tracker_done(d, ErrorInfo{Errc::broker, "the broker released the message instead of accepting it"});
        break;
      default:
        if (!pn_delivery_settled(d)) return;  // not an outcome (yet)
        tracker_done(d, ErrorInfo{Errc::broker, "the broker settled the message without an outcome"});
        break;
    }
    pn_delivery_settle(d);
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

  // Runs fn on the I/O thread. mutex_ held. While a connection is open the
  // work runs among its events (pn_connection_wake), so that proton writes
  // the frames it produced right after; otherwise on an interrupt of the
  // proactor. One wake serves all the work posted until it runs.
  void post_locked(std::function<void()> fn) {
    work_.push_back(std::move(fn));
    if (wake_posted_) return;
    wake_posted_ = true;
    if (wakeable_ != nullptr) {
      pn_connection_wake(wakeable_);
    } else {
      pn_proactor_interrupt(proactor_);
    }
  }

  void post_drain_locked() {
    if (drain_posted_) return;
    drain_posted_ = true;
    post_locked([this] { drain(); });
  }

  // A connection and its transport, set up as ConnectionOptions says.
  std::pair<pn_connection_t*, pn_transport_t*> make_connection() {
    pn_connection_t* c = pn_connection();
    pn_connection_set_container(c, container_id_.c_str());
    const std::string& name = !options_.tls.server_name.empty() ? options_.tls.server_name
                              : !options_.virtual_host.empty()  ? options_.virtual_host
                                                                : options_.host;
    pn_connection_set_hostname(c, name.c_str());
    if (!options_.user.empty()) {
      pn_connection_set_user(c, options_.user.c_str());
      pn_connection_set_password(c, options_.password.c_str());
    }
    pn_transport_t* t = pn_transport();
    pn_transport_set_idle_timeout(t, static_cast<pn_millis_t>(options_.idle_timeout.count()));
    pn_sasl_t* sasl = pn_sasl(t);
    if (!options_.user.empty()) {
      pn_sasl_allowed_mechs(sasl, "PLAIN");
      // PLAIN over a plain socket is what the broker's acceptor offers; TLS
      // protects the password where it is on.
      pn_sasl_set_allow_insecure_mechs(sasl, true);
    } else {
      pn_sasl_allowed_mechs(sasl, "ANONYMOUS");
    }
    if (options_.tls.enabled && !set_up_tls(t)) {
      pn_connection_free(c);
      pn_transport_free(t);
      return {nullptr, nullptr};
    }
    pn_connection_open(c);
    session_ = pn_session(c);
    pn_session_open(session_);
    return {c, t};
  }

  // TLS on t as ConnectionOptions::tls says: verification against the
  // system's CAs unless tls_ca names others. False when proton refuses the
  // files (the connect() checked they can be read).
  bool set_up_tls(pn_transport_t* t) {
    pn_ssl_domain_t* domain = pn_ssl_domain(PN_SSL_MODE_CLIENT);
    bool ok = domain != nullptr;
    if (ok && !options_.tls.cert_file.empty()) {
      ok = pn_ssl_domain_set_credentials(domain, options_.tls.cert_file.c_str(), options_.tls.key_file.c_str(),
                                         nullptr) == 0;
    }
    if (ok && !options_.tls.ca_file.empty()) {
      ok = pn_ssl_domain_set_trusted_ca_db(domain, options_.tls.ca_file.c_str()) == 0 &&
           pn_ssl_domain_set_peer_authentication(domain, PN_SSL_VERIFY_PEER_NAME, nullptr) == 0;
    }
    if (ok && !options_.tls.verify)
      ok = pn_ssl_domain_set_peer_authentication(domain, PN_SSL_ANONYMOUS_PEER, nullptr) == 0;
    if (ok) ok = pn_ssl_init(pn_ssl(t), domain, nullptr) == 0;
    if (domain != nullptr) pn_ssl_domain_free(domain);  // the transport's TLS keeps what it needs
    return ok;
  }

  void connect_now() {
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      state_ = attempt_ == 0 && reconnects_ == 0 ? State::connecting : State::reconnecting;
    }
    auto [c, t] = make_connection();
    connection_attempt_ = c;
    if (c == nullptr) {
      lost(nullptr, Condition{"proton:io", "TLS cannot be set up with tls_ca, tls_cert and tls_key as given"},
           "AMQP connection to " + endpoint());
      return;
    }
    char address[PN_MAX_ADDR];
    pn_proactor_addr(address, sizeof address, options_.host.c_str(), std::to_string(options_.port).c_str());
    pn_proactor_connect2(proactor_, c, t, address);
    // A connect that neither opens nor fails in time is given up (tick()).
    connect_deadline_ = Clock::now() + options_.connect_timeout;
  }

  // One short tick checks the connect deadline, the reconnect time and the
  // claims' deadlines.
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
      if (!open && connection_attempt_ != nullptr) {
        pn_connection_t* attempt = connection_attempt_;
        lost(attempt,
             Condition{"proton:io:timeout",
                       "no answer within " + std::to_string(options_.connect_timeout.count()) + " ms"},
             "AMQP connection to " + endpoint());
        pn_connection_wake(attempt);  // alive until its PN_TRANSPORT_CLOSED, which comes after this
      }
    }
    if (reconnect_at_ && now >= *reconnect_at_) {
      reconnect_at_.reset();
      connect_now();
    }
    if (!audiences_.empty()) {
      // Among the connection's events, so that the put-tokens it sends are
      // written at once (see post_locked()).
      std::lock_guard lock(mutex_);
      post_locked([this] { claims_tick(); });
    }
  }

  // Closes c and its socket at once, without waiting for the peer's close:
  // proton frees it after its last event.
  static void abandon(pn_connection_t* c) {
    if ((pn_connection_state(c) & PN_LOCAL_CLOSED) == 0) pn_connection_close(c);
    if (pn_transport_t* t = pn_connection_transport(c)) {
      pn_transport_close_tail(t);
      pn_transport_close_head(t);
    }
  }

  // c is going away: no wake may reach it any more. A wake sent to it is
  // lost with it, so the work it was for runs on an interrupt. mutex_ held.
  void forget_wakeable_locked(pn_connection_t* c) {
    if (wakeable_ != c) return;
    wakeable_ = nullptr;
    if (wake_posted_) pn_proactor_interrupt(proactor_);
  }

  // Events of a connection given up already (the transport closing after
  // its error) are ignored. The connection given up is closed at once, its
  // socket with it: proton frees it after its last event. Outside the
  // connection's own events, the caller wakes it, so that proton sees it.
  // which is null when the attempt failed before it had a connection.
  void lost(pn_connection_t* which, const Condition& condition, const std::string& where) {
    if (which != connection_attempt_) return;
    if (which != nullptr) abandon(which);
    connect_deadline_.reset();
    ErrorInfo error = classify(condition, where);
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      forget_wakeable_locked(which);
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
      // on_connection_open() attach new ones.
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
        in->link = nullptr;
      }
      // A drain posted and not yet run runs all the same (the work queue
      // outlives connections), but clearing the flag costs nothing and
      // keeps the next open's drain from waiting on it.
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
      op->link = nullptr;
      end_browse(op, ErrorInfo{Errc::connection, "the connection dropped while browsing '" + op->address + "'"});
    }
    for (auto& [address, state] : senders_) {
      // Not yet sent: kept for the next connection.
      state.link = nullptr;
    }
    sender_address_.clear();
    finished_links_.clear();  // freed with the connection
    connection_ = nullptr;
    connection_attempt_ = nullptr;
    session_ = nullptr;
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
      open = state_ == State::open && connection_ != nullptr;
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
    slot.delivery = nullptr;
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

  static void settle_now(pn_delivery_t* d, const Outcome& outcome) {
    switch (outcome.kind) {
      case Outcome::Kind::accepted:
        pn_delivery_update(d, PN_ACCEPTED);
        pn_delivery_settle(d);
        break;
      case Outcome::Kind::released:
        pn_delivery_update(d, PN_RELEASED);
        pn_delivery_settle(d);
        break;
      case Outcome::Kind::failed: detail::settle_modified_failed(d, false); break;
      case Outcome::Kind::failed_undeliverable: detail::settle_modified_failed(d, true); break;
      case Outcome::Kind::rejected: {
        pn_condition_t* cond = pn_disposition_condition(pn_delivery_local(d));
        if (!outcome.condition.empty()) pn_condition_set_name(cond, outcome.condition.c_str());
        if (!outcome.description.empty()) pn_condition_set_description(cond, outcome.description.c_str());
        pn_delivery_update(d, PN_REJECTED);
        pn_delivery_settle(d);
        break;
      }
    }
  }

  // A new link on the connection's session, named uniquely, settled as
  // proton's C++ binding does (at least once: the sender settles after
  // the receiver's outcome).
  pn_link_t* new_link(bool sender) {
    const std::string name = container_id_ + "-" + std::to_string(++link_count_);
    pn_link_t* link = sender ? pn_sender(session_, name.c_str()) : pn_receiver(session_, name.c_str());
    pn_link_set_snd_settle_mode(link, PN_SND_UNSETTLED);
    pn_link_set_rcv_settle_mode(link, PN_RCV_FIRST);
    return link;
  }

  void open_receiver(const std::shared_ptr<Inbound>& in) {
    if (in->link != nullptr && link_usable(in->link)) return;
    const bool authorised = claims_ready("r:" + in->address, in->address, [this, in](std::optional<ErrorInfo> error) {
      if (error) {
        receiver_failed_for(in, std::move(*error));
      } else {
        open_receiver(in);
      }
    });
    if (!authorised || connection_ == nullptr) return;
    pn_link_t* link = new_link(false);
    pn_terminus_set_address(pn_link_source(link), in->address.c_str());
    put_capabilities(pn_link_source(link), options_.terminus_capabilities);
    // rcv-settle-mode second: the broker confirms each settlement.
    if (options_.receiver_settles_second) pn_link_set_rcv_settle_mode(link, PN_RCV_SECOND);
    pn_link_open(link);
    in->link = link;
    receivers_[link] = in;
    // Credit is ours to give: see top_up().
    pn_link_flow(link, static_cast<int>(options_.credit_window));
    std::lock_guard lock(mutex_);
    in->taken = 0;
  }

  void open_browser(const std::shared_ptr<BrowseOp>& op) {
    if (connection_ == nullptr) {
      end_browse(op, ErrorInfo{Errc::connection,
                               "no AMQP connection to " + endpoint() + " to browse '" + op->address + "' on"});
      return;
    }
    pn_link_t* link = new_link(false);
    pn_terminus_t* source = pn_link_source(link);
    pn_terminus_set_address(source, op->address.c_str());
    pn_terminus_set_distribution_mode(source, PN_DIST_MODE_COPY);
    put_capabilities(source, options_.terminus_capabilities);
    pn_link_open(link);  // max credit once attached: see on_link_open()
    op->link = link;
    browsers_[link] = op;
  }

  // Ends a browse (once): closes its link and wakes its caller.
  void end_browse(const std::shared_ptr<BrowseOp>& op, std::optional<ErrorInfo> error) {
    if (op->link != nullptr) {
      browsers_.erase(op->link);
      close_finished_link(op->link);
      op->link = nullptr;
    }
    std::lock_guard lock(mutex_);
    if (op->done) return;
    op->done = true;
    if (error) op->error = std::move(error);
    cv_.notify_all();
  }

  // Closes a link none of whose deliveries is held, to be freed once the
  // peer closed it too (on_link_remote_close()).
  void close_finished_link(pn_link_t* link) {
    if ((pn_link_state(link) & PN_LOCAL_CLOSED) == 0) pn_link_close(link);
    finished_links_.insert(link);
  }

  // A browser's link closed or failed before its drain finished: an error
  // unless the broker merely closed it (then what came is all there is).
  bool browser_failed(pn_link_t* link, const Condition& condition) {
    auto it = browsers_.find(link);
    if (it == browsers_.end()) return false;
    const std::shared_ptr<BrowseOp> op = it->second;
    end_browse(op, condition.empty() ? std::nullopt
                                     : std::optional<ErrorInfo>(classify(
                                           condition, "browsing '" + op->address + "' was refused by the broker")));
    return true;
  }

  // How much of the window receive() takes before it wakes the I/O thread
  // for a top-up.
  std::size_t top_up_threshold() const { return std::max<std::size_t>(1, options_.credit_window / 4); }

  // Gives the broker credit for what receive() took out of the buffer.
  void top_up(Inbound& in) {
    if (in.link == nullptr || !link_usable(in.link)) return;
    std::lock_guard lock(mutex_);
    const std::int64_t window = options_.credit_window;
    const std::int64_t want = window - pn_link_credit(in.link) - static_cast<std::int64_t>(in.buffer.size());
    if (want > 0) pn_link_flow(in.link, static_cast<int>(want));
    in.taken = 0;
  }

  void receiver_failed(pn_link_t* link, const Condition& condition) {
    auto it = receivers_.find(link);
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
    in->link = nullptr;
    std::lock_guard lock(mutex_);
    in->open = false;  // the next receive() opens it again
    in->error = std::move(error);
    cv_.notify_all();
    if (options_.arrivals) options_.arrivals->ring();
  }

  struct SenderState {
    pn_link_t* link = nullptr;
    std::deque<std::shared_ptr<SendOp>> pending;  // each sends from its messages[sent] on
    std::uint64_t next_tag = 0;
  };

  // Sends what waits for address while the link has credit.
  void pump(const std::string& address) {
    auto& state = senders_[address];
    if (state.link == nullptr) {
      if (connection_ == nullptr) return;
      const bool authorised = claims_ready("s:" + address, address, [this, address](std::optional<ErrorInfo> error) {
        if (error) {
          fail_pending(senders_[address], *error);
        } else {
          pump(address);
        }
      });
      if (!authorised) return;
      pn_link_t* link = new_link(true);
      pn_terminus_set_address(pn_link_target(link), address.c_str());
      put_capabilities(pn_link_target(link), options_.terminus_capabilities);
      pn_link_open(link);
      state.link = link;
      sender_address_[link] = address;
      return;  // on_link_flow() calls again once the broker gives credit
    }
    // The bytes are encoded already: a transfer is a delivery, the bytes
    // and an advance on the link.
    pn_link_t* link = state.link;
    std::lock_guard lock(mutex_);
    while (!state.pending.empty() && link_usable(link) && pn_link_credit(link) > 0) {
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
      pn_delivery_t* delivery = transfer(link, bytes, state.next_tag);
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

  void sender_failed(pn_link_t* link, const Condition& condition) {
    auto it = sender_address_.find(link);
    if (it == sender_address_.end()) return;
    const std::string address = it->second;
    sender_address_.erase(it);
    auto& state = senders_[address];
    state.link = nullptr;
    ErrorInfo error = classify(condition, "the sender on '" + address + "' was closed by the broker");
    std::lock_guard lock(mutex_);
    if (closing_) return;
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

  void tracker_done(pn_delivery_t* d, std::optional<ErrorInfo> error) {
    std::lock_guard lock(mutex_);
    auto it = in_flight_.find(d);
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
    if (connection_ != nullptr) {
      pn_connection_close(connection_);
    } else {
      if (connection_attempt_ != nullptr) {
        abandon(connection_attempt_);
        pn_connection_wake(connection_attempt_);
      }
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
    wakeable_ = nullptr;
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
  static std::optional<ErrorInfo> refusal_of(pn_delivery_t* d, const Outcome& sent) {
    if (pn_delivery_remote_state(d) != PN_REJECTED) return std::nullopt;
    const Condition e = condition_of(pn_disposition_condition(pn_delivery_remote(d)));
    if (e.empty()) {
      if (sent.kind == Outcome::Kind::rejected) return std::nullopt;
      return ErrorInfo{Errc::broker, "the broker rejected the settlement"};
    }
    if (e.name.find("lock-lost") != std::string::npos) {
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
    pn_link_t* sender = nullptr;
    pn_link_t* receiver = nullptr;
    std::uint64_t next_tag = 0;
    std::deque<std::pair<proton::message, ReplyHandler>> waiting;  // for the links or credit
    std::map<std::string, ReplyHandler> outstanding;               // by message-id
  };

  static constexpr std::string_view kCbsNode = "$cbs";
  static constexpr int kReplyCredit = 100;

  void send_request(const std::string& node, proton::message message, ReplyHandler done) {
    if (connection_ == nullptr) {
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
    if (it == channels_.end() || connection_ == nullptr) return;
    Channel& channel = it->second;
    if (channel.sender == nullptr) {
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
      // The receiver first: its attach reaches the node before any request.
      channel.receiver = new_link(false);
      pn_terminus_set_address(pn_link_source(channel.receiver), node.c_str());
      pn_terminus_set_address(pn_link_target(channel.receiver), channel.reply_to.c_str());
      pn_link_open(channel.receiver);
      pn_link_flow(channel.receiver, kReplyCredit);
      channel.sender = new_link(true);
      pn_terminus_set_address(pn_link_target(channel.sender), node.c_str());
      pn_link_open(channel.sender);
      channel_receivers_[channel.receiver] = node;
      channel_senders_[channel.sender] = node;
      return;  // on_link_flow() comes back once the node gives credit
    }
    while (!channel.waiting.empty() && link_usable(channel.sender) && pn_link_credit(channel.sender) > 0) {
      auto [message, done] = std::move(channel.waiting.front());
      channel.waiting.pop_front();
      const std::string id = uuid_v4();
      message.id(id);
      message.reply_to(channel.reply_to);
      channel.outstanding.emplace(id, std::move(done));
      std::vector<char> bytes;
      message.encode(bytes);
      transfer(channel.sender, std::string_view(bytes.data(), bytes.size()), channel.next_tag);
    }
  }

  static std::string id_text(const proton::message_id& id) {
    if (id.type() == proton::STRING) return proton::get<std::string>(id);
    return proton::to_string(id);
  }

  // A reply on a channel's receiver: handed to its request.
  bool on_reply(pn_delivery_t* d, pn_link_t* link) {
    auto node = channel_receivers_.find(link);
    if (node == channel_receivers_.end()) return false;
    read_delivery(d, link);
    pn_link_flow(link, 1);  // the credit the reply used, back
    proton::message m;
    if (!decode_into(m, d, node->second)) return true;
    settle_now(d, Outcome::accepted());
    auto channel = channels_.find(node->second);
    if (channel == channels_.end()) return true;
    auto pending = channel->second.outstanding.find(id_text(m.correlation_id()));
    if (pending == channel->second.outstanding.end()) return true;  // its caller gave up
    ReplyHandler done = std::move(pending->second);
    channel->second.outstanding.erase(pending);
    done(std::move(m));
    return true;
  }

  // A channel's link closed: every request on it fails. False for links of
  // no channel.
  bool channel_link_failed(pn_link_t* link, const Condition& condition, bool sender) {
    auto& links = sender ? channel_senders_ : channel_receivers_;
    auto it = links.find(link);
    if (it == links.end()) return false;
    const std::string node = it->second;
    fail_channel(node, classify(condition, "the link to '" + node + "' was closed by the broker"));
    return true;
  }

  void fail_channel(const std::string& node, const ErrorInfo& error) {
    auto it = channels_.find(node);
    if (it == channels_.end()) return;
    Channel channel = std::move(it->second);
    channels_.erase(it);
    for (pn_link_t* link : {channel.sender, channel.receiver}) {
      if (link == nullptr) continue;
      channel_senders_.erase(link);
      channel_receivers_.erase(link);
      if (connection_ != nullptr) close_finished_link(link);
    }
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
  const std::string container_id_;
  pn_proactor_t* proactor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};  // close(): the I/O thread ends at its next interrupt

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
  // Work for the I/O thread (post_locked()), and whether a wake for it is
  // on its way.
  std::vector<std::function<void()>> work_;
  bool wake_posted_ = false;
  // The open connection, until its PN_TRANSPORT_CLOSED: what
  // pn_connection_wake() may reach from any thread.
  pn_connection_t* wakeable_ = nullptr;
  std::map<std::string, std::shared_ptr<Inbound>, std::less<>> inbound_;
  std::vector<std::shared_ptr<SendOp>> sends_;
  std::vector<std::shared_ptr<Inbound>> opens_;
  std::vector<std::pair<std::uint64_t, Outcome>> settlements_;
  std::unordered_map<pn_delivery_t*, std::shared_ptr<SendOp>> in_flight_;
  // Messages received and handed out, for later deliveries to be decoded
  // into (recycle()); its capacity is fixed (see receive()).
  std::vector<proton::message> spare_;
  // Reads handed out and given back by recycle(), for the reader to fill
  // again: a Read allocated on this thread and freed on a receiving one each
  // time is the allocator's slow path. Both keep the same fixed capacity.
  std::vector<std::unique_ptr<Read>> spare_reads_;  // mutex_
  std::vector<std::unique_ptr<Read>> io_reads_;     // the I/O thread only

  // The delivery table: a received message's slot from on_message() until
  // its settlement is applied. An id is the slot's index (low 32 bits) and
  // its generation (the 24 bits above: the top byte stays the caller's, see
  // Incoming::id), which changes each time the slot is freed, so a stale id
  // no longer matches. The table grows under mutex_ on the I/O thread;
  // generation and state are read and written under mutex_, delivery on
  // the I/O thread only.
  static constexpr std::uint32_t kGenerationMask = 0xFFFFFF;
  struct Slot {
    pn_delivery_t* delivery = nullptr;
    std::uint32_t generation = 1;
    enum class State : std::uint8_t { free, held, settling } state = State::free;
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;

  // The I/O thread only.
  std::vector<std::function<void()>> running_;     // run_work()'s batch
  pn_connection_t* connection_ = nullptr;          // open
  pn_connection_t* connection_attempt_ = nullptr;  // open or opening: the one whose events count
  pn_session_t* session_ = nullptr;
  std::uint64_t link_count_ = 0;
  std::vector<char> recv_;                   // the delivery being read
  proton::message io_message_;               // what it decodes to without a reader (or when the reader threw)
  CMessage io_c_message_ = new_c_message();  // what it decodes to for the reader
  std::int64_t attempt_ = 0;
  std::optional<Clock::time_point> connect_deadline_;
  std::optional<Clock::time_point> reconnect_at_;
  std::map<std::string, SenderState> senders_;
  std::unordered_map<pn_link_t*, std::string> sender_address_;
  std::unordered_map<pn_link_t*, std::shared_ptr<Inbound>> receivers_;
  std::unordered_map<pn_link_t*, std::shared_ptr<BrowseOp>> browsers_;
  std::unordered_set<pn_link_t*> finished_links_;            // closed by us, freed once the peer closed them
  std::vector<std::pair<std::uint64_t, Outcome>> applying_;  // apply_settlements()'s batch
  std::vector<std::uint32_t> applied_;
  std::vector<std::shared_ptr<Inbound>> topups_;  // drain()'s: receivers with credit to give back

  // Request/response, claims and confirmed settlement. Under mutex_:
  std::vector<std::shared_ptr<RequestOp>> requests_;
  std::vector<std::shared_ptr<ConfirmOp>> confirms_;
  std::vector<std::shared_ptr<ConfirmOp>> confirming_;  // apply_confirms()'s batch (the I/O thread)
  // The I/O thread only:
  std::map<std::string, Channel> channels_;
  std::unordered_map<pn_link_t*, std::string> channel_senders_;
  std::unordered_map<pn_link_t*, std::string> channel_receivers_;
  std::map<std::string, Audience> audiences_;
  std::unordered_map<pn_delivery_t*, std::pair<std::shared_ptr<ConfirmOp>, std::size_t>> awaiting_;
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
