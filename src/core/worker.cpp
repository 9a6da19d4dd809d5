// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/binding.hpp>
#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/duration.hpp>
#include <babelqueue/worker.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace babelqueue {

// ---- options ----------------------------------------------------------------------

std::string_view to_string(UnknownUrnStrategy strategy) noexcept {
  switch (strategy) {
    case UnknownUrnStrategy::fail: return "fail";
    case UnknownUrnStrategy::drop: return "delete";
    case UnknownUrnStrategy::release: return "release";
    case UnknownUrnStrategy::dead_letter: return "dead_letter";
  }
  return "fail";
}

std::optional<UnknownUrnStrategy> unknown_urn_strategy_from_string(std::string_view name) noexcept {
  if (name == "fail") return UnknownUrnStrategy::fail;
  if (name == "delete") return UnknownUrnStrategy::drop;
  if (name == "release") return UnknownUrnStrategy::release;
  if (name == "dead_letter") return UnknownUrnStrategy::dead_letter;
  return std::nullopt;
}

WorkerMetricsSnapshot WorkerMetrics::snapshot() const noexcept {
  WorkerMetricsSnapshot s;
  s.received = received.load();
  s.succeeded = succeeded.load();
  s.failed = failed.load();
  s.retried = retried.load();
  s.dead_lettered = dead_lettered.load();
  s.poison = poison.load();
  s.unknown_urn = unknown_urn.load();
  s.dropped = dropped.load();
  s.released = released.load();
  s.settle_errors = settle_errors.load();
  s.lease_expired = lease_expired.load();
  return s;
}

// ---- the worker ----------------------------------------------------------------------

namespace {

// A delivery being handled. Settling it (ack, release, republish) and
// abandoning it at the shutdown deadline race; whoever moves it out of
// `running` first owns it.
struct Flight {
  enum State { running, settling, abandoned };
  explicit Flight(Delivery d) : delivery(std::move(d)), lease_deadline(delivery.lease_deadline) {}
  Delivery delivery;
  std::atomic<int> state{running};
  std::chrono::steady_clock::time_point lease_renewed = std::chrono::steady_clock::now();
  // Delivery::lease_deadline, moved on by each extension that succeeded
  // (under the worker's mutex).
  std::optional<std::chrono::steady_clock::time_point> lease_deadline;
  bool lease_lost(std::chrono::steady_clock::time_point now) const { return lease_deadline && now >= *lease_deadline; }
  // meta.id once the body was decoded (for logs written by other threads).
  std::string id;
  std::atomic<bool> id_known{false};
  bool claim() {
    int expected = running;
    return state.compare_exchange_strong(expected, settling);
  }
};

std::string concat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (auto p : parts) out.append(p);
  return out;
}

// "message <id> on <queue>", or "a message on <queue>" before its body was read.
std::string message_label(const Flight& flight) {
  if (flight.id_known.load(std::memory_order_acquire)) {
    return concat({"message ", flight.id, " on ", flight.delivery.queue});
  }
  return concat({"a message on ", flight.delivery.queue});
}

}  // namespace

// Messages received ahead of the handlers when WorkerOptions::prefetch is 0
// are max(concurrency, Capabilities::default_prefetch): enough for one
// receive to fetch a batch (one round trip or one transaction for several
// messages), few enough that a crashed worker holds little.
//
// Per handler thread, on a transport that holds messages ahead of receive()
// anyway: with 16 in all, the receive loop and the handlers woke each other
// every few messages. Measured on Artemis at concurrency 4: about twice the
// client CPU a message and four times the context switches of 32 a thread.
constexpr std::size_t kHeldAheadPrefetchPerThread = 32;

namespace {

std::size_t automatic_prefetch(std::size_t concurrency, const Capabilities& caps) {
  const std::size_t prefetch = std::max<std::size_t>({concurrency, caps.default_prefetch, 1});
  if (caps.held_ahead == 0) return prefetch;
  return std::max(prefetch, std::min(caps.held_ahead, concurrency * kHeldAheadPrefetchPerThread));
}

}  // namespace

// On a transport that settles a batch in one round trip
// (Capabilities::batch_ack), the acks of handled messages are gathered: a
// full batch of Capabilities::ack_batch_size is sent at once (SQS's
// DeleteMessageBatch takes 10), a partial one after WorkerOptions::ack_linger
// (see ack_handled()).

Result<void> WorkerOptions::check() const {
  auto bad = [](std::string_view field, const std::string& value, std::string_view expected) -> Result<void> {
    return unexpected(Errc::invalid_argument,
                      "WorkerOptions::" + std::string(field) + " is " + value + ", expected " + std::string(expected));
  };
  auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; };
  if (default_queue.empty()) return bad("default_queue", "empty", "a queue name");
  if (max_attempts < 1 || max_attempts > 1000000) {
    return bad("max_attempts", std::to_string(max_attempts), "a count from 1 to 1000000");
  }
  if (concurrency < 1 || concurrency > 4096) {
    return bad("concurrency", std::to_string(concurrency), "a number of handler threads from 1 to 4096");
  }
  if (prefetch > 1000000) return bad("prefetch", std::to_string(prefetch), "0 (automatic) to 1000000");
  const std::pair<std::string_view, std::chrono::milliseconds> durations[] = {
      {"unknown_urn_release_delay", unknown_urn_release_delay},
      {"poll_timeout", poll_timeout},
      {"release_delay_on_error", release_delay_on_error},
      {"shutdown_deadline", shutdown_deadline},
      {"lease_extension", lease_extension},
      {"ack_linger", ack_linger}};
  for (const auto& [field, value] : durations) {
    if (value.count() < 0) return bad(field, ms(value), "0 ms or more");
  }
  if (retry_backoff) {
    if (auto ok = retry_backoff->check("WorkerOptions::retry_backoff"); !ok) return ok;
  }
  return receive_error_backoff.check("WorkerOptions::receive_error_backoff");
}

class Worker::Impl {
 public:
  Impl(Transport& transport, std::unique_ptr<Transport> owned, WorkerOptions options)
      : owned_(std::move(owned)),
        transport_(transport),
        options_(checked(std::move(options))),
        chain_(options_.middleware) {
    if (!options_.log) options_.log = [](LogLevel, std::string_view) {};
    caps_ = transport_.capabilities();
    if (options_.prefetch == 0) options_.prefetch = automatic_prefetch(options_.concurrency, caps_);
    ack_batch_size_ = std::max<std::size_t>(caps_.ack_batch_size, 1);
    // An ack that waited past its message's lease would let the message
    // come back: the linger stays well inside the lease.
    batch_acks_ = caps_.batch_ack && options_.ack_linger.count() > 0;
    ack_linger_ = std::min<std::chrono::milliseconds>(options_.ack_linger, std::chrono::hours(24));  // no overflow
    if (caps_.lease.count() > 0) ack_linger_ = std::min(ack_linger_, caps_.lease / 4);
  }

  static WorkerOptions checked(WorkerOptions options) {
    if (auto ok = options.check(); !ok) throw Error(ok.error());
    return options;
  }

  // ---- handlers and publishing ----

  void add_handler(std::string urn, Handler handler) {
    if (running_.load()) throw Error(Errc::invalid_argument, "register handlers before run()");
    handlers_[std::move(urn)] = std::move(handler);
  }

  void set_fallback(Handler handler) {
    if (running_.load()) throw Error(Errc::invalid_argument, "register handlers before run()");
    fallback_ = std::move(handler);
  }

  void use(std::shared_ptr<Middleware> middleware) {
    if (sealed_.load()) throw Error(Errc::invalid_argument, "add middleware before the first run() or publish()");
    chain_.add(std::move(middleware));
  }

  MakeOptions make_options(const PublishParams& params) const {
    MakeOptions make;
    make.queue = params.queue.empty() ? options_.default_queue : params.queue;
    make.trace_id = params.trace_id;
    return make;
  }

  Result<std::string> publish(Result<Envelope> env, const Value* data, const PublishParams& params) {
    sealed_.store(true);
    if (!env) return unexpected(env.error());
    if (!chain_.empty()) return publish_through_middleware(std::move(*env), data, params);
    PublishOptions publish;
    publish.headers = params.headers;
    publish.delay = params.delay;
    publish.ordering_key = params.ordering_key;
    publish.dedup_id = params.dedup_id;
    // The transport projects what the envelope just built holds, without reading the body again.
    const auto fields = binding::ContractFields::of(*env);
    publish.contract = &fields;
    if (auto r = transport_.publish(env->queue(), env->body(), publish); !r) return unexpected(r.error());
    return std::string(env->id());
  }

  // The same publish as a PublishRequest handed through the chain's publish
  // side; the final step sends whatever envelope the request then holds.
  Result<std::string> publish_through_middleware(Envelope env, const Value* data, const PublishParams& params) {
    std::call_once(send_composed_, [this] {
      send_ = chain_.compose_publish([this](PublishRequest& request) -> Result<void> {
        // meta.queue names the queue a dead letter goes back to: an envelope
        // a middleware swapped in must still name the queue it is sent to.
        if (request.envelope.queue() != request.queue) {
          return unexpected(Errc::invalid_argument,
                            "the envelope's meta.queue '" + std::string(request.envelope.queue()) +
                                "' is not the queue it is published to, '" + request.queue + "': nothing was sent");
        }
        const auto fields = binding::ContractFields::of(request.envelope);
        request.options.contract = &fields;
        auto sent = transport_.publish(request.queue, request.envelope.body(), request.options);
        request.options.contract = nullptr;  // it pointed into this frame
        return sent;
      });
    });
    std::string queue(env.queue());
    PublishRequest request{std::move(queue), std::move(env), data, {}};
    request.options.headers = params.headers;
    request.options.delay = params.delay;
    request.options.ordering_key = params.ordering_key;
    request.options.dedup_id = params.dedup_id;
    if (auto r = send_(request); !r) return unexpected(r.error());
    return std::string(request.envelope.id());
  }

  // ---- consuming ----

  // failures_are_idle: receives that keep failing count against idle_exit
  // (run()); drain() rides them out instead, as it always has.
  Result<RunSummary> run(std::vector<std::string> queues, RunLimits limits, bool failures_are_idle = true) {
    if (running_.exchange(true)) return unexpected(Errc::invalid_argument, "the worker is already running");
    sealed_.store(true);
    route_through_middleware();
    if (queues.empty()) queues.push_back(options_.default_queue);
    // A stop() that arrived before run() is honoured (run returns at once);
    // the flag is cleared when a run ends, for the next one.
    {
      std::lock_guard lock(mutex_);
      processed_ = 0;
      shutting_down_ = false;
      own_delayed_until_ = {};
      receive_ = Receiving(queues, limits, failures_are_idle, options_.poll_timeout);
      receiving_ = false;
    }
    std::thread ack_flusher;
    if (batch_acks_) {
      {
        std::lock_guard lock(acks_mutex_);
        acks_closing_ = false;
      }
      ack_flusher = std::thread([this] { ack_flush_loop(); });
    }
    std::vector<std::thread> threads;
    threads.reserve(options_.concurrency + 1);
    for (std::size_t i = 0; i < options_.concurrency; ++i) threads.emplace_back([this] { handler_loop(); });
    const bool keep_leases = caps_.extendable_lease && lease_extension().count() > 0;
    if (keep_leases) threads.emplace_back([this] { lease_loop(); });

    if (handlers_receive()) {
      // The handler threads receive for themselves: this thread waits for
      // the end (a limit, a fatal error, or stop()), on room_, which no
      // receive loop waits on now (changed_ is rung each time the buffer
      // runs dry).
      std::unique_lock lock(mutex_);
      room_.wait(lock, [&] { return receive_.ended || stop_requested_.load(); });
    } else {
      receive_loop();
    }
    shutdown(threads);
    if (ack_flusher.joinable()) flush_acks_and_join(ack_flusher);
    RunSummary summary;
    std::optional<ErrorInfo> fatal;
    {
      std::lock_guard lock(mutex_);
      summary.processed = processed_;
      if (receive_.ended) summary.reason = receive_.reason;
      fatal = std::move(receive_.fatal);
    }
    stop_requested_.store(false);
    {
      // The last touch of *this: a destructor waiting in stop_and_wait()
      // may free it as soon as the lock is released.
      std::lock_guard lock(mutex_);
      running_.store(false);
      changed_.notify_all();
    }
    if (fatal) return unexpected(*fatal);
    return summary;
  }

  // stop(), then waits until a run() in progress on another thread returned.
  void stop_and_wait() noexcept {
    stop();
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !running_.load(); });
  }

  void stop() noexcept {
    stop_requested_.store(true);
    std::lock_guard lock(mutex_);
    changed_.notify_all();
    room_.notify_all();
    work_ready_.notify_all();
  }

  WorkerMetrics metrics_;

  const WorkerOptions& options() const noexcept { return options_; }
  Transport& transport() noexcept { return transport_; }

 private:
  // What receiving has done in a run, and how it ended. One thread at a
  // time receives (run()'s own, or the handler thread holding receiving_),
  // and hands it to the next under mutex_.
  struct Receiving {
    Receiving() = default;
    Receiving(const std::vector<std::string>& q, const RunLimits& l, bool idle_failures,
              std::chrono::milliseconds poll_timeout)
        : queues(&q),
          limits(l),
          failures_are_idle(idle_failures),
          wait(std::max(std::chrono::milliseconds(1), poll_timeout / static_cast<std::int64_t>(q.size()))) {}
    const std::vector<std::string>* queues = nullptr;
    RunLimits limits;
    bool failures_are_idle = true;
    std::chrono::milliseconds wait{};  // of each receive
    std::size_t received = 0;
    std::size_t next_queue = 0;
    std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_success = last_activity;  // the last receive that did not fail
    std::int64_t failures = 0;                                           // consecutive, for receive_error_backoff
    bool ended = false;                                                  // nothing more is received this run; why:
    RunSummary::Reason reason = RunSummary::Reason::stopped;
    std::optional<ErrorInfo> fatal;
  };

  // A transport that holds messages ahead in its own client (Capabilities::
  // held_ahead: the broker streams into it) takes a receive from memory:
  // the handler threads receive for themselves when their buffer is empty,
  // and a batch reaches a handler without a hand-over between threads (on
  // two cores a wake-up cost about as much as handling a message).
  bool handlers_receive() const { return caps_.held_ahead > 0; }

  // The handlers as a delivery reaches them: each one inside the chain,
  // composed once per run (handlers may change between runs).
  void route_through_middleware() {
    routes_.clear();
    for (const auto& [urn, handler] : handlers_) routes_.emplace(urn, chain_.wrap(handler));
    fallback_route_ = fallback_ ? chain_.wrap(fallback_) : Handler();
  }

  // Receives into the buffer while there is room, until stop or a limit
  // (on run()'s thread).
  void receive_loop() {
    while (!stop_requested_.load() && !reached_max_messages()) {
      std::size_t room = 0;
      {
        std::unique_lock lock(mutex_);
        room_.wait(lock, [&] { return stop_requested_.load() || has_room(); });
        if (stop_requested_.load()) break;
        room = std::min(options_.prefetch - buffer_.size(), room_for_bytes());
      }
      if (!receive_once(room, /*for_others=*/false)) return;
    }
  }

  // True, and receiving ended, once RunLimits::max_messages were received.
  bool reached_max_messages() {
    const std::size_t max = receive_.limits.max_messages;
    if (max == 0 || receive_.received < max) return false;
    std::lock_guard lock(mutex_);
    end_receiving_locked(RunSummary::Reason::max_messages);
    return true;
  }

  // Ends receiving for this run (under mutex_).
  void end_receiving_locked(RunSummary::Reason reason, std::optional<ErrorInfo> fatal = std::nullopt) {
    receive_.ended = true;
    receive_.reason = reason;
    receive_.fatal = std::move(fatal);
  }

  // One receive of up to room messages into the buffer; false when
  // receiving has ended (a limit or a fatal error). for_others: the caller
  // is a handler thread that takes one of them itself.
  bool receive_once(std::size_t room, bool for_others) {
    Receiving& r = receive_;
    const RunLimits& limits = r.limits;
    if (reached_max_messages()) return false;
    if (limits.max_messages != 0) room = std::min(room, limits.max_messages - r.received);
    const std::string& queue = (*r.queues)[r.next_queue];
    r.next_queue = (r.next_queue + 1) % r.queues->size();
    auto batch = transport_.receive(queue, room, r.wait);
    if (!chain_.empty()) notice_reconnects();
    if (!batch) {
      if (!batch.error().retriable()) {
        log(LogLevel::error, concat({"receive from ", queue, " failed: ", std::string_view(batch.error().message())}));
        std::lock_guard lock(mutex_);
        end_receiving_locked(RunSummary::Reason::stopped, batch.error());
        return false;
      }
      log(LogLevel::warning,
          concat({"receive from ", queue, " failed, retrying: ", std::string_view(batch.error().message())}));
      const auto now = std::chrono::steady_clock::now();
      std::optional<ErrorInfo> given_up;
      if (limits.unreachable_exit && now - r.last_success >= *limits.unreachable_exit) {
        given_up = gave_up(batch.error(), queue, now - r.last_success, "RunLimits::unreachable_exit");
      } else if (r.failures_are_idle && limits.idle_exit &&
                 idle(r.last_activity, *limits.idle_exit, limits.idle_waits_for_own_delayed)) {
        given_up = gave_up(batch.error(), queue, now - r.last_activity, "RunLimits::idle_exit");
      }
      if (given_up) {
        std::lock_guard lock(mutex_);
        end_receiving_locked(RunSummary::Reason::stopped, std::move(given_up));
        return false;
      }
      // The pause ends no later than the nearest bound, so a bound is kept
      // to within a receive.
      auto pause = options_.receive_error_backoff.delay_for(++r.failures);
      if (limits.unreachable_exit) {
        pause = std::min(pause, until(detail::saturating_after(r.last_success, *limits.unreachable_exit), now));
      }
      if (r.failures_are_idle && limits.idle_exit) {
        pause = std::min(pause, until(detail::saturating_after(r.last_activity, *limits.idle_exit), now));
      }
      sleep_unless_stopped(pause);
      return true;
    }
    r.failures = 0;
    r.last_success = std::chrono::steady_clock::now();
    if (batch->empty()) {
      if (limits.idle_exit && idle(r.last_activity, *limits.idle_exit, limits.idle_waits_for_own_delayed)) {
        std::lock_guard lock(mutex_);
        end_receiving_locked(RunSummary::Reason::idle);
        return false;
      }
      return true;
    }
    r.received += batch->size();
    r.last_activity = std::chrono::steady_clock::now();
    // A flight from the moment it is received: its lease is kept alive
    // while it waits in the buffer too. Allocated before taking the lock,
    // which the handler threads contend for.
    std::vector<std::shared_ptr<Flight>> flights;
    flights.reserve(batch->size());
    for (auto& d : *batch) flights.push_back(std::make_shared<Flight>(std::move(d)));
    std::size_t batch_bytes = 0;
    for (const auto& flight : flights) batch_bytes += flight->delivery.body.size();
    {
      std::lock_guard lock(mutex_);
      for (auto& flight : flights) buffer_.push_back(std::move(flight));
      buffered_bytes_ += batch_bytes;
      last_message_bytes_ = std::max<std::size_t>(1, batch_bytes / flights.size());
    }
    WorkerEvent fetched = event(WorkerEventKind::received, queue);
    fetched.count = batch->size();
    note(metrics_.received, fetched, batch->size());
    // Wake as many handlers as there are new messages for, not every
    // thread; after unlocking, so a woken handler does not block on mutex_
    // at once.
    const std::size_t for_them = batch->size() - (for_others ? 1 : 0);
    if (for_them == 1) {
      work_ready_.notify_one();
    } else if (for_them > 1) {
      work_ready_.notify_all();
    }
    return true;
  }

  // Tells the middleware when the transport's reconnect count grew (a
  // receive is where a lost connection shows and is made again).
  void notice_reconnects() {
    const ConnectionStats stats = transport_.connection_stats();
    if (stats.reconnects == reported_reconnects_) return;
    reported_reconnects_ = stats.reconnects;
    WorkerEvent e{WorkerEventKind::reconnected, {}};
    e.count = static_cast<std::size_t>(stats.reconnects);
    e.transport = &transport_;
    note(e);
  }

  // The error run() ends with when receives kept failing past a bound.
  ErrorInfo gave_up(const ErrorInfo& last, std::string_view queue, std::chrono::steady_clock::duration for_how_long,
                    std::string_view bound) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(for_how_long);
    const std::string message = concat({"no receive from ", queue, " succeeded for ", format_duration(ms), " (", bound,
                                        "); the last one failed: ", last.message()});
    log(LogLevel::error, message);
    return ErrorInfo(last.code(), message, last.retriable());
  }

  static std::chrono::milliseconds until(std::chrono::steady_clock::time_point when,
                                         std::chrono::steady_clock::time_point now) {
    return std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(when - now));
  }

  // The receive loop refills when the buffer is half empty, not at every free
  // slot: one receive then fetches a batch (a round trip and, on Redis or SQS,
  // a server-side call per batch instead of per message). Under mutex_.
  bool has_room() const {
    return buffer_.size() <= options_.prefetch / 2 &&
           (options_.prefetch_bytes == 0 || buffered_bytes_ <= options_.prefetch_bytes / 2);
  }

  // How many messages the next receive may ask for under
  // WorkerOptions::prefetch_bytes: what is left of it at the size of the last
  // batch's messages, at least one. While that size is not known yet, one
  // per handler thread: those start at once rather than wait in the buffer
  // (and a transport that sizes its own prefetch from the first receive,
  // RabbitMQ's QoS, still sees the concurrency). Under mutex_.
  std::size_t room_for_bytes() const {
    if (options_.prefetch_bytes == 0) return std::numeric_limits<std::size_t>::max();
    if (last_message_bytes_ == 0) return std::max<std::size_t>(1, options_.concurrency);
    const std::size_t left = options_.prefetch_bytes > buffered_bytes_ ? options_.prefetch_bytes - buffered_bytes_ : 0;
    return std::max<std::size_t>(1, left / last_message_bytes_);
  }

  // True when nothing arrived for idle_for and nothing is buffered or running
  // (nor, when asked, due back from a delayed retry or release of its own).
  bool idle(std::chrono::steady_clock::time_point& last_activity, std::chrono::milliseconds idle_for,
            bool wait_for_own_delayed) {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (!buffer_.empty() || !flights_.empty() || (wait_for_own_delayed && now < own_delayed_until_)) {
      last_activity = now;
      return false;
    }
    return now - last_activity >= idle_for;
  }

  // A message of this run comes back after delay (a delayed retry or
  // release): idle_exit waits for it (RunLimits::idle_waits_for_own_delayed).
  void note_own_delayed(std::chrono::milliseconds delay) {
    if (delay.count() <= 0) return;
    std::lock_guard lock(mutex_);
    own_delayed_until_ =
        std::max(own_delayed_until_, detail::saturating_after(std::chrono::steady_clock::now(), delay));
  }

  void sleep_unless_stopped(std::chrono::milliseconds d) {
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, detail::saturating_after(std::chrono::steady_clock::now(), d),
                        [&] { return stop_requested_.load(); });
  }

  // Ends a run. A stop (before or during the wind-down) hands back what was
  // buffered but not started, without running it; a run that ends by itself
  // (idle, max messages) finishes its buffer. Either way in-flight handlers
  // get the shutdown deadline, after which their messages are released
  // (abandoned) and whatever is still buffered is handed back.
  void shutdown(std::vector<std::thread>& threads) {
    std::deque<std::shared_ptr<Flight>> unstarted;
    std::unique_lock lock(mutex_);
    const auto deadline = detail::saturating_after(std::chrono::steady_clock::now(), options_.shutdown_deadline);
    for (;;) {
      if (stop_requested_.load() && !buffer_.empty()) {
        unstarted.swap(buffer_);
        buffered_bytes_ = 0;
        lock.unlock();
        release_unstarted(unstarted);
        lock.lock();
        continue;
      }
      // A handler thread still receiving (handlers_receive()) puts what it
      // received in the buffer: it is handed back or run like the rest.
      const bool settled = changed_.wait_until(lock, deadline, [&] {
        return (buffer_.empty() && flights_.empty() && !receiving_) || (stop_requested_.load() && !buffer_.empty());
      });
      if (!settled) break;                                            // the deadline passed
      if (buffer_.empty() && flights_.empty() && !receiving_) break;  // everything settled
    }
    // Past the deadline too: a receive in progress ends within its wait
    // (stop() or a limit ended receiving), and what it buffers is handed back
    // below rather than left behind.
    changed_.wait(lock, [&] { return !receiving_; });
    shutting_down_ = true;
    unstarted.swap(buffer_);
    buffered_bytes_ = 0;
    for (auto& flight : flights_) {
      if (flight->state.exchange(Flight::abandoned) == Flight::running) {
        abandoned_.push_back(flight);
      }
    }
    changed_.notify_all();
    work_ready_.notify_all();
    lock.unlock();
    release_unstarted(unstarted);
    for (const auto& flight : abandoned_) {
      log(LogLevel::error, concat({"a handler outlived the shutdown deadline; ", message_label(*flight),
                                   " is released and will be delivered again"}));
      release(flight->delivery, {}, "shutdown deadline");
    }
    abandoned_.clear();
    for (auto& t : threads) t.join();
  }

  // Hands back messages that were received but never started, and forgets
  // them: none of them runs in this run.
  void release_unstarted(std::deque<std::shared_ptr<Flight>>& unstarted) {
    for (const auto& f : unstarted) {
      if (!f->claim()) continue;
      note(event(WorkerEventKind::returned, f->delivery.queue));
      release(f->delivery, {}, "the worker is stopping");
    }
    unstarted.clear();
  }

  // Finishing one flight and taking the next happen under one lock: with
  // several handler threads on few cores, every acquisition of mutex_ is a
  // likely futex sleep and wake-up. Nothing is allocated or freed under it:
  // the flights_ node moves in and out by splice, and the finished flight is
  // freed after unlocking.
  void handler_loop() {
    std::list<std::shared_ptr<Flight>> mine(1);  // the flight's node while it is off flights_
    const auto slot = mine.begin();
    std::unique_lock lock(mutex_);
    for (;;) {
      // After a stop nothing new starts: what is buffered is handed back by
      // shutdown(), never run.
      work_ready_.wait(lock, [&] {
        return shutting_down_ || (!stop_requested_.load() && (!buffer_.empty() || may_receive_locked()));
      });
      if (shutting_down_) return;
      if (stop_requested_.load()) continue;
      if (buffer_.empty()) {
        // Nothing buffered and nobody receiving: this thread receives for
        // all of them (handlers_receive()), then takes the first itself.
        receiving_ = true;
        const std::size_t room = std::min(options_.prefetch, room_for_bytes());
        lock.unlock();
        receive_once(room, /*for_others=*/true);
        lock.lock();
        receiving_ = false;
        // run() waits for the end of receiving; shutdown() for this receive.
        if (receive_.ended || stop_requested_.load()) {
          room_.notify_all();
          changed_.notify_all();
        }
        continue;
      }
      std::shared_ptr<Flight> finished = std::exchange(*slot, std::move(buffer_.front()));
      buffer_.pop_front();
      buffered_bytes_ -= std::min(buffered_bytes_, (*slot)->delivery.body.size());
      if ((*slot)->lease_lost(std::chrono::steady_clock::now())) {
        // Waited too long in the buffer (a paused process, a lease that
        // could not be extended): the broker has handed it, or will hand it,
        // to another consumer. Neither run nor settled here.
        std::shared_ptr<Flight> lost = std::exchange(*slot, nullptr);
        const bool refill = has_room();
        lock.unlock();
        finished.reset();
        if (refill) room_.notify_one();
        drop_expired(*lost);
        lost.reset();
        lock.lock();
        if (buffer_.empty() && flights_.empty()) changed_.notify_all();
        continue;
      }
      flights_.splice(flights_.end(), mine, slot);
      const bool refill = !handlers_receive() && has_room();
      // That was the last one, and nobody is receiving: a waiting handler
      // thread receives the next while this one runs its handler.
      const bool next_receiver = buffer_.empty() && may_receive_locked();
      lock.unlock();
      finished.reset();
      if (refill) room_.notify_one();  // the receive loop is the only waiter
      if (next_receiver) work_ready_.notify_one();
      note(event(WorkerEventKind::started, (*slot)->delivery.queue));
      process(**slot);
      note(event(WorkerEventKind::finished, (*slot)->delivery.queue));
      lock.lock();
      mine.splice(mine.end(), flights_, slot);
      ++processed_;
      // Only shutdown() waits for everything to be settled.
      if (buffer_.empty() && flights_.empty()) changed_.notify_all();
    }
  }

  // Keeps the leases of long-running handlers' messages alive.
  void lease_loop() {
    const auto extension = lease_extension();
    const auto period = std::max(std::chrono::milliseconds(10), extension / 3);
    std::unique_lock lock(mutex_);
    while (!shutting_down_) {
      changed_.wait_until(lock, detail::saturating_after(std::chrono::steady_clock::now(), period),
                          [&] { return shutting_down_; });
      if (shutting_down_) return;
      const auto now = std::chrono::steady_clock::now();
      std::vector<std::shared_ptr<Flight>> due;
      auto collect = [&](const auto& flights) {
        for (const auto& f : flights) {
          // A lease already past is not renewed: another consumer may hold
          // the message by now, and a buffered one is dropped unrun.
          if (f->state.load() == Flight::running && now - f->lease_renewed >= period && !f->lease_lost(now)) {
            f->lease_renewed = now;
            due.push_back(f);
          }
        }
      };
      collect(buffer_);
      collect(flights_);
      lock.unlock();
      for (const auto& f : due) {
        const auto asked = std::chrono::steady_clock::now();
        auto extended = transport_.extend(f->delivery, extension);
        if (!extended) {
          log(LogLevel::warning, concat({"could not extend the lease of ", message_label(*f), ": ",
                                         std::string_view(extended.error().message())}));
        }
        lock.lock();
        if (extended && f->lease_deadline) {
          f->lease_deadline = std::max(*f->lease_deadline, detail::saturating_after(asked, extension));
        } else if (!extended && extended.error().code() == Errc::not_found) {
          f->lease_deadline = asked;  // no longer ours
        }
        lock.unlock();
      }
      lock.lock();
    }
  }

  // A handler thread may start a receive (under mutex_).
  bool may_receive_locked() const { return handlers_receive() && !receiving_ && !receive_.ended; }

  // A buffered message whose lease passed before a handler could start it.
  void drop_expired(const Flight& flight) {
    metrics_.lease_expired++;
    log(LogLevel::warning, concat({"the lease of ", message_label(flight),
                                   " ended before a handler could start it: not run here, the broker delivers it "
                                   "again"}));
  }

  // ---- one delivery ----

  void process(Flight& flight) {
    const Delivery& d = flight.delivery;
    if (d.gate_rejection) {
      note(event(WorkerEventKind::decoded, d.queue));
      poison(flight, nullptr, *d.gate_rejection, "the transport's bq-schema-version property is not \"1\"");
      return;
    }
    auto decoded = Envelope::decode(d.body, options_.decode);
    if (!decoded) {
      note(event(WorkerEventKind::decoded, d.queue));
      poison(flight, nullptr, decoded.error().reason, decoded.error().detail);
      return;
    }
    Envelope& env = *decoded;
    flight.id = std::string(env.id());
    flight.id_known.store(true, std::memory_order_release);
    note(event(WorkerEventKind::decoded, d.queue, &env));
    if (auto verdict = accepts(env); !verdict) {
      poison(flight, &env, *verdict.reason(), "the envelope breaks a rule of the wire contract");
      return;
    }
    if (d.native_attempts)
      env.set_attempts(AttemptsRule{d.attempts_merge}.reconcile(env.attempts(), d.native_attempts));
    const auto found = routes_.find(env.urn());
    const Handler* handler = found != routes_.end() ? &found->second : (fallback_route_ ? &fallback_route_ : nullptr);
    if (handler == nullptr) {
      unknown_urn(flight, env);
      return;
    }
    const Message message(env, d.queue, d.headers);
    std::string error;
    std::optional<std::string> exception_type;
    bool terminal = false;  // an error that says it will happen again
    try {
      if (auto r = (*handler)(message); !r) {
        error = r.error().message();
        terminal = !r.error().retriable();
      } else {
        if (ack_handled(flight)) note(metrics_.succeeded, event(WorkerEventKind::handled, d.queue, &env));
        return;
      }
    } catch (const ReleaseDelivery& later) {
      release_unhandled(flight, later);
      return;
    } catch (const OutcomeException& decided) {
      apply(flight, env, decided.outcome());
      return;
    } catch (const Error& e) {
      error = e.what();
      exception_type = exception_type_name(e);
      terminal = !e.retriable();
    } catch (const std::exception& e) {
      error = e.what();
      exception_type = exception_type_name(e);
    } catch (...) {
      error = "a handler threw a non-standard exception";
      exception_type = current_exception_type_name();
    }
    note(metrics_.failed, event(WorkerEventKind::failed, d.queue, &env));
    retry_or_dead_letter(flight, env, DeadLetterReason::failed, error, exception_type, std::nullopt, terminal);
  }

  // What a handler decided for its message (handler_outcome.hpp).
  void apply(Flight& flight, Envelope& env, const HandlerOutcome& outcome) {
    switch (outcome.kind()) {
      case HandlerOutcome::Kind::ack:
        if (ack_handled(flight)) note(metrics_.succeeded, event(WorkerEventKind::handled, flight.delivery.queue, &env));
        return;
      case HandlerOutcome::Kind::retry:
        retry_or_dead_letter(flight, env, DeadLetterReason::failed, outcome.reason(), std::nullopt,
                             outcome.delay().count() > 0 ? std::optional(outcome.delay()) : std::nullopt);
        return;
      case HandlerOutcome::Kind::dead_letter:
        note(metrics_.failed, event(WorkerEventKind::failed, flight.delivery.queue, &env));
        retry_or_dead_letter(flight, env, DeadLetterReason::failed, outcome.reason(), std::nullopt, std::nullopt,
                             /*terminal=*/true);
        return;
      case HandlerOutcome::Kind::drop:
        log(LogLevel::warning, concat({"message ", env.id(), " on ", flight.delivery.queue,
                                       " is dropped by its handler: ", outcome.reason()}));
        note(metrics_.dropped, event(WorkerEventKind::dropped, flight.delivery.queue, &env));
        ack(flight);
        return;
    }
  }

  // Not a failure: the message goes back as it came, its attempts
  // unchanged. Without a native delay the handler thread waits the delay
  // out first, so the message does not return in a hot loop.
  void release_unhandled(Flight& flight, const ReleaseDelivery& later) {
    log(LogLevel::debug, concat({"a message on ", flight.delivery.queue, " is handed back: ", later.what()}));
    std::chrono::milliseconds delay = std::max(later.delay(), std::chrono::milliseconds(0));
    if (caps_.max_delay.count() > 0) delay = std::min(delay, caps_.max_delay);
    if (!caps_.native_delay) {
      sleep_unless_stopped(delay);
      delay = {};
    }
    if (flight.claim()) release(flight.delivery, delay, "handed back unhandled");
  }

  void unknown_urn(Flight& flight, Envelope& env) {
    note(metrics_.unknown_urn, event(WorkerEventKind::unknown_urn, flight.delivery.queue, &env));
    const std::string error = concat({"no handler for URN \"", env.urn(), "\""});
    switch (options_.unknown_urn) {
      case UnknownUrnStrategy::fail:
        note(metrics_.failed, event(WorkerEventKind::failed, flight.delivery.queue, &env));
        retry_or_dead_letter(flight, env, DeadLetterReason::unknown_urn, error, std::nullopt);
        return;
      case UnknownUrnStrategy::drop:
        log(LogLevel::info, error + ": deleted (unknown-URN strategy delete)");
        note(metrics_.dropped, event(WorkerEventKind::dropped, flight.delivery.queue, &env));
        ack(flight);
        return;
      case UnknownUrnStrategy::release:
        // Back to the queue for a consumer that knows the URN, delayed and
        // counted so it can never loop hot.
        retry_or_dead_letter(flight, env, DeadLetterReason::unknown_urn, error, std::nullopt,
                             options_.unknown_urn_release_delay);
        return;
      case UnknownUrnStrategy::dead_letter:
        if (!options_.dead_letter) {
          log(LogLevel::warning, error + ": deleted (dead_letter strategy without a dead-letter queue)");
          note(metrics_.dropped, event(WorkerEventKind::dropped, flight.delivery.queue, &env));
          ack(flight);
          return;
        }
        dead_letter(flight, env, DeadLetterReason::unknown_urn, error, std::nullopt);
        return;
    }
  }

  // terminal: the failure will repeat (a handler's decision, an error that
  // is not retriable): no retry, straight to the dead-letter path.
  void retry_or_dead_letter(Flight& flight, Envelope& env, DeadLetterReason reason, const std::string& error,
                            const std::optional<std::string>& exception_type,
                            std::optional<std::chrono::milliseconds> fixed_delay = std::nullopt,
                            bool terminal = false) {
    // Saturating: a body whose attempts is already at the top of its range
    // is past every max_attempts, so it is given up, never retried.
    const std::int64_t next = detail::next_attempts(env.attempts());
    const bool will_retry = !terminal && next < options_.max_attempts;
    if (options_.hooks.on_error) {
      options_.hooks.on_error(ErrorEvent{flight.delivery.queue, &env, error, exception_type.value_or(""), will_retry});
    }
    if (!will_retry) {
      env.set_attempts(next);
      if (options_.dead_letter) {
        dead_letter(flight, env, reason, error, exception_type);
      } else {
        log(LogLevel::warning, terminal ? concat({"message ", env.id(),
                                                  " failed for good and is dropped (dead-lettering is off): ", error})
                                        : concat({"message ", env.id(), " failed ", std::to_string(next),
                                                  " times and is dropped (dead-lettering is off): ", error}));
        note(metrics_.dropped, event(WorkerEventKind::dropped, flight.delivery.queue, &env));
        ack(flight);
      }
      return;
    }
    auto body = env.encode_with_attempts(next);
    PublishOptions publish;
    publish.headers = flight.delivery.headers;
    // The retry stays in the original's partition or message group. No
    // deduplication id: the transport derives one that tells a retry from
    // its original (SQS FIFO: meta.id:attempts), so it is not dropped.
    publish.ordering_key = flight.delivery.ordering_key;
    std::chrono::milliseconds delay = fixed_delay.value_or(
        options_.retry_backoff ? options_.retry_backoff->delay_for(next) : std::chrono::milliseconds(0));
    if (delay.count() > 0 && !caps_.native_delay) {
      warn_once(no_delay_warned_, "the transport has no native delay: retries are republished at once");
      delay = {};
    }
    if (caps_.max_delay.count() > 0) delay = std::min(delay, caps_.max_delay);
    publish.delay = delay;
    if (!flight.claim()) return;  // abandoned at the shutdown deadline: already released
    auto published =
        body ? transport_.publish(flight.delivery.queue, *body, publish) : Result<void>(unexpected(body.error()));
    if (!published) {
      note(metrics_.settle_errors, event(WorkerEventKind::settle_error, flight.delivery.queue, &env));
      log(LogLevel::error, concat({"the retry of message ", env.id(), " could not be published (",
                                   published.error().message(), "); the original is released instead"}));
      release(flight.delivery, error_release_delay(), "retry publish failed");
      return;
    }
    note(metrics_.retried, event(WorkerEventKind::retried, flight.delivery.queue, &env));
    // A message of an unknown URN is left for a consumer that knows it:
    // not work this run waits for.
    if (reason != DeadLetterReason::unknown_urn) note_own_delayed(delay);
    settle_ack(flight.delivery);
  }

  void dead_letter(Flight& flight, const Envelope& env, DeadLetterReason reason, const std::string& error,
                   const std::optional<std::string>& exception_type) {
    const std::string original_queue = env.queue().empty() ? flight.delivery.queue : std::string(env.queue());
    const DeadLetter block = DeadLetter::make(reason, original_queue, env.attempts(), error, exception_type);
    auto body = env.encode_dead_letter(block);
    if (!body) {
      // Only a block that cannot be encoded (invalid UTF-8 in the error text)
      // gets here: keep the message rather than lose it.
      log(LogLevel::error, "could not build the dead-letter body: " + body.error().message());
      if (flight.claim()) release(flight.delivery, error_release_delay(), "dead-letter body failed");
      return;
    }
    publish_dead_letter(flight, &env, *body, block, {});
  }

  void poison(Flight& flight, const Envelope* env, Rejection reason, std::string_view detail) {
    note(metrics_.poison, event(WorkerEventKind::poison, flight.delivery.queue, env));
    const Delivery& d = flight.delivery;
    const std::string error = concat({to_string(reason), ": ", detail});
    log(LogLevel::warning, concat({"poison message on ", d.queue, ": ", error}));
    if (!options_.dead_letter) {
      if (options_.hooks.on_poison) options_.hooks.on_poison(PoisonEvent{d.queue, d.body, reason, detail, false});
      if (caps_.native_dead_letter) {
        // Service Bus: into its own dead-letter queue now, not after
        // MaxDeliveryCount deliveries of a message that can never succeed.
        if (flight.claim()) dead_letter_natively(d, reason, error);
        return;
      }
      if (caps_.broker_dead_letter_policy) {
        // The broker's own policy (SQS RedrivePolicy) moves it after its
        // receive count; acking here would bypass that policy.
        if (flight.claim()) release(d, {}, "left to the broker's dead-letter policy");
        return;
      }
      note(metrics_.dropped, event(WorkerEventKind::dropped, d.queue, env));
      ack(flight);
      return;
    }
    const std::string original_queue = env != nullptr && !env->queue().empty() ? std::string(env->queue()) : d.queue;
    const DeadLetter block =
        DeadLetter::make(DeadLetterReason::poison, original_queue, env != nullptr ? env->attempts() : 0, error);
    std::string body;
    if (env != nullptr) {
      auto annotated = env->encode_dead_letter(block);
      body = annotated ? std::move(*annotated) : d.body;
    } else {
      body = dead_letter_body(d.body, block, options_.decode);
    }
    Headers extra;
    extra[std::string(kDeadLetterReasonHeader)] = "poison";
    if (publish_dead_letter(flight, env, body, block, extra) && options_.hooks.on_poison) {
      options_.hooks.on_poison(PoisonEvent{d.queue, d.body, reason, detail, true});
    }
  }

  bool publish_dead_letter(Flight& flight, const Envelope* env, const std::string& body, const DeadLetter& block,
                           const Headers& extra) {
    const std::string dlq = options_.dead_letter_queue.empty() ? transport_.dead_letter_queue(flight.delivery.queue)
                                                               : options_.dead_letter_queue;
    PublishOptions publish;
    publish.headers = flight.delivery.headers;
    publish.ordering_key = flight.delivery.ordering_key;
    for (const auto& [k, v] : extra) publish.headers[k] = v;
    if (!flight.claim()) return false;
    if (auto r = transport_.publish(dlq, body, publish); !r) {
      note(metrics_.settle_errors, event(WorkerEventKind::settle_error, flight.delivery.queue, env));
      log(LogLevel::error, concat({"publishing to the dead-letter queue ", dlq, " failed (", r.error().message(),
                                   "); the original is released instead"}));
      release(flight.delivery, error_release_delay(), "dead-letter publish failed");
      return false;
    }
    WorkerEvent dead = event(WorkerEventKind::dead_lettered, flight.delivery.queue, env);
    dead.reason = dead_letter_reason_from_string(block.reason);
    note(metrics_.dead_lettered, dead);
    if (options_.hooks.on_dead_letter) {
      options_.hooks.on_dead_letter(DeadLetterEvent{flight.delivery.queue, dlq, &block, body});
    }
    settle_ack(flight.delivery);
    return true;
  }

  // ---- events (worker_event.hpp) ----

  // Counts in WorkerMetrics, then tells the middleware.
  void note(std::atomic<std::uint64_t>& counter, const WorkerEvent& event, std::uint64_t n = 1) {
    counter += n;
    if (!chain_.empty()) chain_.notify(event);
  }
  void note(const WorkerEvent& event) {
    if (!chain_.empty()) chain_.notify(event);
  }
  static WorkerEvent event(WorkerEventKind kind, std::string_view queue, const Envelope* env = nullptr) {
    WorkerEvent e{kind, queue};
    if (env != nullptr) {
      e.urn = env->urn();
      e.envelope = env;
    }
    return e;
  }

  // ---- settling ----

  // False when the flight was abandoned at the shutdown deadline (and so
  // already released).
  bool ack(Flight& flight) {
    if (!flight.claim()) return false;
    settle_ack(flight.delivery);
    return true;
  }

  void settle_ack(const Delivery& d) {
    if (auto r = transport_.ack(d); !r) ack_failed(d, r.error());
  }

  // Not a handler failure: the broker will deliver the message again (a
  // stale delivery, Errc::not_found, has already been delivered again).
  void ack_failed(const Delivery& d, const ErrorInfo& error) {
    note(metrics_.settle_errors, event(WorkerEventKind::settle_error, d.queue));
    log(LogLevel::warning,
        concat({"ack on ", d.queue, " failed (", error.message(), "); the message may be delivered again"}));
  }

  // ---- batched acks (Capabilities::batch_ack) ----

  // The ack of a handled message: at once, or gathered into a batch where
  // the transport settles one in a round trip. False when the flight was
  // abandoned at the shutdown deadline.
  //
  // A full batch is the flusher's to send while the handler goes on (a
  // batch ack waits for the broker: every Service Bus ack is confirmed, an
  // SQS batch is an HTTP round trip). Only when the flusher is still busy
  // and a second full batch has gathered behind the first does the handler
  // that filled it send the older one itself and wait: fewer than two batches
  // pending, and one in flight per handler plus the flusher's, however slow
  // the broker.
  bool ack_handled(Flight& flight) {
    if (!batch_acks_) return ack(flight);
    if (!flight.claim()) return false;
    std::vector<Delivery> mine;
    bool wake = false;
    {
      std::lock_guard lock(acks_mutex_);
      if (pending_acks_.empty()) oldest_ack_ = std::chrono::steady_clock::now();
      pending_acks_.push_back(flight.delivery);  // a copy: the lease thread may still read the flight's
      const std::size_t pending = pending_acks_.size();
      wake = pending == 1 || pending == ack_batch_size_;  // the flusher's linger starts, or it can send now
      if (pending >= 2 * ack_batch_size_) mine = take_ack_batch_locked();
    }
    if (wake) acks_changed_.notify_one();
    if (!mine.empty()) send_acks(mine);
    return true;
  }

  // The oldest ack_batch_size_ pending acks (or all, when fewer). What stays
  // lingers from now: a remainder is younger than what was taken.
  std::vector<Delivery> take_ack_batch_locked() {
    std::vector<Delivery> batch;
    if (pending_acks_.size() <= ack_batch_size_) {
      batch.swap(pending_acks_);
      return batch;
    }
    const auto end = pending_acks_.begin() + static_cast<std::ptrdiff_t>(ack_batch_size_);
    batch.assign(std::make_move_iterator(pending_acks_.begin()), std::make_move_iterator(end));
    pending_acks_.erase(pending_acks_.begin(), end);
    oldest_ack_ = std::chrono::steady_clock::now();
    return batch;
  }

  // Sends each full batch as it gathers, and what waited ack_linger_
  // without filling one; when the run ends (closing), whatever is left, a
  // batch at a time, then returns.
  void ack_flush_loop() {
    std::unique_lock lock(acks_mutex_);
    for (;;) {
      acks_changed_.wait(lock, [&] { return acks_closing_ || !pending_acks_.empty(); });
      if (pending_acks_.empty()) return;  // closing, and nothing is left
      acks_changed_.wait_until(lock, oldest_ack_ + ack_linger_, [&] {
        return acks_closing_ || pending_acks_.empty() || pending_acks_.size() >= ack_batch_size_;
      });
      if (pending_acks_.empty()) continue;  // a handler took them
      std::vector<Delivery> batch = take_ack_batch_locked();
      lock.unlock();
      send_acks(batch);
      lock.lock();
    }
  }

  // After the handler threads ended: no ack is added any more, so the
  // flusher sends the rest and returns.
  void flush_acks_and_join(std::thread& flusher) {
    {
      std::lock_guard lock(acks_mutex_);
      acks_closing_ = true;
    }
    acks_changed_.notify_one();
    flusher.join();
  }

  // Each delivery the batch did not settle counts and is logged as a failed
  // single ack would be; it is not retried (the broker delivers it again).
  void send_acks(const std::vector<Delivery>& batch) {
    std::vector<AckFailure> failures;
    auto sent = transport_.ack_batch(batch, failures);
    if (sent) return;
    if (failures.empty()) {
      // A transport that failed without saying which: none is known settled.
      for (std::size_t i = 0; i < batch.size(); ++i) failures.push_back(AckFailure{i, sent.error()});
    }
    for (const AckFailure& failure : failures) {
      if (failure.index < batch.size()) ack_failed(batch[failure.index], failure.error);
    }
  }

  // The reasons are the Python SDK's (its native settle of Service Bus).
  void dead_letter_natively(const Delivery& d, Rejection reason, const std::string& error) {
    const std::string_view why = reason == Rejection::schema_version_gate ? "unsupported schema version" : "poison";
    if (auto r = transport_.dead_letter_natively(d, why, error); !r) {
      note(metrics_.settle_errors, event(WorkerEventKind::settle_error, d.queue));
      log(LogLevel::error, concat({"moving a message of ", d.queue, " into the broker's dead-letter queue failed (",
                                   r.error().message(), "); it is released to the broker's policy instead"}));
      release(d, {}, "native dead-letter failed");
    }
  }

  void release(const Delivery& d, std::chrono::milliseconds delay, std::string_view why) {
    if (auto r = transport_.release(d, delay); !r) {
      note(metrics_.settle_errors, event(WorkerEventKind::settle_error, d.queue));
      log(LogLevel::error, concat({"release on ", d.queue, " (", why, ") failed: ", r.error().message(),
                                   "; the broker redelivers it when its lease ends"}));
      return;
    }
    note(metrics_.released, event(WorkerEventKind::released, d.queue));
    note_own_delayed(delay);
  }

  std::chrono::milliseconds lease_extension() const {
    return options_.lease_extension.count() > 0 ? options_.lease_extension : caps_.lease;
  }

  std::chrono::milliseconds error_release_delay() const {
    return caps_.native_delay ? options_.release_delay_on_error : std::chrono::milliseconds(0);
  }

  void log(LogLevel level, std::string_view message) const {
    if (options_.log) options_.log(level, message);  // an empty sink silences the worker
  }

  void warn_once(std::atomic<bool>& flag, std::string_view message) {
    if (!flag.exchange(true)) log(LogLevel::warning, message);
  }

  std::unique_ptr<Transport> owned_;
  Transport& transport_;
  WorkerOptions options_;
  Capabilities caps_;
  std::map<std::string, Handler, std::less<>> handlers_;
  Handler fallback_;  // handle_any(): for URNs without a handler of their own
  // The middleware, sealed by the first run() or publish(); the handlers
  // wrapped in it (for the current run) and the composed publish.
  MiddlewareChain chain_;
  std::atomic<bool> sealed_{false};
  std::map<std::string, Handler, std::less<>> routes_;
  Handler fallback_route_;
  std::once_flag send_composed_;
  PublishStep send_;

  std::atomic<bool> running_{false};
  std::atomic<bool> stop_requested_{false};
  std::uint64_t reported_reconnects_ = 0;  // the receiving thread's; what the middleware last heard
  Receiving receive_;                      // the receiving thread's; ended under mutex_
  bool receiving_ = false;                 // a handler thread is receiving (handlers_receive(); under mutex_)
  std::atomic<bool> no_delay_warned_{false};
  // One mutex; three condition variables so that each event wakes only the
  // threads that wait for it (one shared variable woke every handler twice
  // per message):
  //   work_ready_  handlers: a message is in the buffer, or shutting down
  //   room_        the receive loop: the buffer is half empty, or stop;
  //                with handlers_receive(), run(): receiving ended, or stop
  //   changed_     the rest: stop, shutdown, everything settled, a handler
  //                thread's receive ended
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable room_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Flight>> buffer_;  // received, not started
  std::size_t buffered_bytes_ = 0;              // the bodies' bytes in buffer_
  std::size_t last_message_bytes_ = 0;          // a message's size in the last batch; 0: none yet
  std::list<std::shared_ptr<Flight>> flights_;  // being handled
  std::vector<std::shared_ptr<Flight>> abandoned_;
  bool shutting_down_ = false;
  std::size_t processed_ = 0;
  std::chrono::steady_clock::time_point own_delayed_until_{};  // see note_own_delayed()

  // Acks of handled messages waiting for one ack_batch() (batch_acks_
  // only), under a mutex of their own so that sending a batch never holds
  // mutex_.
  bool batch_acks_ = false;
  std::size_t ack_batch_size_ = 1;  // Capabilities::ack_batch_size, at least one
  std::chrono::milliseconds ack_linger_{0};
  std::mutex acks_mutex_;
  std::condition_variable acks_changed_;  // the flusher: a first ack or a full batch is pending, or the run ends
  std::vector<Delivery> pending_acks_;
  std::chrono::steady_clock::time_point oldest_ack_;
  bool acks_closing_ = false;
};

Worker::Worker(Transport& transport, WorkerOptions options)
    : impl_(std::make_unique<Impl>(transport, nullptr, std::move(options))) {}

Worker::Worker(std::unique_ptr<Transport> transport, WorkerOptions options) {
  if (!transport) throw Error(Errc::invalid_argument, "Worker needs a transport");
  Transport& ref = *transport;
  impl_ = std::make_unique<Impl>(ref, std::move(transport), std::move(options));
}

Worker::~Worker() { impl_->stop_and_wait(); }

void Worker::add_handler(std::string urn, Handler handler) { impl_->add_handler(std::move(urn), std::move(handler)); }
void Worker::handle_any(Handler handler) { impl_->set_fallback(std::move(handler)); }
void Worker::use(std::shared_ptr<Middleware> middleware) { impl_->use(std::move(middleware)); }

MakeOptions Worker::make_options(const PublishParams& params) const { return impl_->make_options(params); }

Result<std::string> Worker::publish(std::string_view urn, const Value& data, const PublishParams& params) {
  return publish_made(Envelope::make(urn, data, make_options(params)), &data, params);
}

Result<std::string> Worker::publish_made(Result<Envelope> made, const Value* data, const PublishParams& params) {
  return impl_->publish(std::move(made), data, params);
}

Result<RunSummary> Worker::run(std::vector<std::string> queues, RunLimits limits) {
  return impl_->run(std::move(queues), limits);
}

Result<std::size_t> Worker::drain(std::string_view queue, std::size_t max) {
  std::vector<std::string> queues;
  if (!queue.empty()) queues.emplace_back(queue);
  RunLimits limits;
  limits.max_messages = max;
  limits.idle_exit = std::chrono::milliseconds(0);
  limits.idle_waits_for_own_delayed = false;  // "until it is empty", as it looks now
  auto summary = impl_->run(std::move(queues), limits, /*failures_are_idle=*/false);
  if (!summary) return unexpected(summary.error());
  return summary->processed;
}

void Worker::stop() noexcept { impl_->stop(); }
const WorkerMetrics& Worker::metrics() const noexcept { return impl_->metrics_; }
const WorkerOptions& Worker::options() const noexcept { return impl_->options(); }
Transport& Worker::transport() noexcept { return impl_->transport(); }

}  // namespace babelqueue
