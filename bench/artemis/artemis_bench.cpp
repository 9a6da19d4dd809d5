// SPDX-License-Identifier: Apache-2.0
// Artemis throughput: babelqueue::artemis against raw qpid-proton loops
// doing the same work on the same broker, in one run, with the ratios; and,
// side by side, the published Python SDK's Artemis transport.
//
//   publish   durable messages, many transfers in flight. Raw: one sender
//             link that sends `batch` messages unsettled as fast as the
//             broker's credit allows, counts them on accept, and starts the
//             next batch when the whole batch is accepted  vs
//             Transport::publish_batch of `batch` messages.
//   consume   receive + accept per message. Raw: 1 or 4 connections, each
//             with one receiver holding the same credit window, reading
//             each message's body and accepting it in on_message, on a
//             container run by 1 or 4 threads  vs  one transport with 1 or 4 threads looping
//             receive(32) + ack() (what a Worker's automatic prefetch holds
//             per handler thread on Artemis, ADR 0047), and a Worker at concurrency
//             1 and 4 with a no-op handler (what an application runs). At
//             concurrency 4 the transport has connections=4, as the raw loop
//             has 4 connections (ADR 0041); the same at its default of one
//             connection is shown next to it, without a target. The raw
//             loops run twice: on proton's C++ container, and on its C
//             proactor, the layer the SDK's client is built on (ADR 0058).
//   python    the Python SDK (babelqueue[artemis]'s ArtemisTransport), as a
//             child process: publish one by one, and pop + ack (credit 1);
//             next to it the SDK's own publish() one by one.
//
// Every message is the same envelope with the binding's projection; the raw
// loops send one message built by hand with the same fields (checked equal
// to the SDK's, byte for byte, before anything is timed).
//
// Usage: babelqueue_bench_artemis [--url URL] [--messages N] [--batch N] [--rounds N]
//          [--python PYTHON --python-script FILE [--python-messages N]] [--only NAME]
//          [--step-timeout SECONDS]
// URL default: $BABELQUEUE_URL, else artemis://admin:admin@127.0.0.1:5672.
// --step-timeout (default 600): a step (a fill, a measurement, a drain, a
// Python run) that takes longer ends the run with exit code 3 and a message
// naming it.
// --only runs one group (publish, c1, c4, python) or one measurement
// (raw-publish, sdk-publish, raw-c1, raw-c-c1, sdk-c1, worker-c1, raw-c4,
// raw-c-c4, sdk-c4, worker-c4, sdk-c4-one), for profiling. Each round runs every measurement once, raw and
// SDK in an order that turns every round; the rates are the medians over
// the rounds, and each ratio is the median of the ratios of the rounds (raw
// and SDK measured minutes apart would see different machines; within a
// round they run back to back, so drift hits both), printed with its
// range. Each measurement has a queue of its own, filled right before it
// (so that the broker holds one queue's messages at a time, not several
// full ones that could pass the memory limit past which it pages) and drained outside the clock.
#include "../../src/artemis/artemis_projection.hpp"
#include "../support/bench_report.hpp"
#include "../support/proactor_loop.hpp"

#include <babelqueue/artemis/transport.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/worker.hpp>

#include <proton/codec.h>
#include <proton/connection.h>
#include <proton/delivery.h>
#include <proton/event.h>
#include <proton/link.h>
#include <proton/message.h>
#include <proton/proactor.h>
#include <proton/sasl.h>
#include <proton/session.h>
#include <proton/terminus.h>
#include <proton/transport.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <proton/annotation_key.hpp>
#include <proton/connection.hpp>
#include <proton/connection_options.hpp>
#include <proton/container.hpp>
#include <proton/delivery.hpp>
#include <proton/error_condition.hpp>
#include <proton/message.hpp>
#include <proton/message_id.hpp>
#include <proton/messaging_handler.hpp>
#include <proton/receiver_options.hpp>
#include <proton/sender.hpp>
#include <proton/sender_options.hpp>
#include <proton/source_options.hpp>
#include <proton/target_options.hpp>
#include <proton/timestamp.hpp>
#include <proton/tracker.hpp>
#include <proton/transport.hpp>
#include <proton/work_queue.hpp>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace bq = babelqueue;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string url;
  int messages = 100000;
  int batch = 1000;
  int rounds = 5;
  std::string python;         // the Python SDK's interpreter; empty: no Python figures
  std::string python_script;  // bench/artemis/python_sdk_bench.py
  int python_messages = 2000;
  std::string only;        // one measurement; empty: all
  int step_timeout = 600;  // seconds a step (fill, measurement, drain) may take
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "babelqueue_bench_artemis: %s\n", why.c_str());
  std::exit(1);
}

// Ends the run with a message naming the step when one takes longer than
// its limit: a loop waiting for messages that never come (a broker that lost
// them, a stuck receiver) would otherwise wait until whoever runs it gives up,
// saying nothing.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { keep_watch(); }) {}

  // Stops watching; the run is over.
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Times step from now on (until the next call).
  void watch(std::string step) {
    std::lock_guard lock(mutex_);
    step_ = std::move(step);
    since_ = Clock::now();
  }

 private:
  void keep_watch() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; })) {
      if (!step_.empty() && Clock::now() - since_ > limit_) {
        std::fprintf(stderr, "babelqueue_bench_artemis: %s did not finish within %lld s; giving up\n", step_.c_str(),
                     static_cast<long long>(limit_.count()));
        std::_Exit(3);
      }
    }
  }

  const std::chrono::seconds limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string step_;
  Clock::time_point since_;
  std::thread thread_;  // last: it starts once the rest is made
};

double rate(int messages, Clock::duration elapsed) { return messages / std::chrono::duration<double>(elapsed).count(); }

// The CPU time of this process (all its threads: the SDK's or the raw
// loop's, proton's I/O included), in ns. A figure that a busy machine does
// not move much, where msg/s swings with what else runs.
std::int64_t cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// One measurement: msg/s, and the client's CPU per message (µs) over the
// same interval.
struct Measured {
  double rate = 0;
  double cpu_us = 0;
};

Measured measured(int messages, Clock::duration elapsed, std::int64_t cpu_used_ns) {
  return {rate(messages, elapsed), static_cast<double>(cpu_used_ns) / 1000.0 / messages};
}

// Where the raw loops connect: the transport's own options, as plain proton.
struct Endpoint {
  std::string url;  // amqp://host:port
  std::string user;
  std::string password;

  proton::connection_options options() const {
    proton::connection_options o;
    o.sasl_enabled(true);
    if (!user.empty()) {
      o.user(user);
      o.password(password);
      o.sasl_allowed_mechs("PLAIN");
      o.sasl_allow_insecure_mechs(true);
    } else {
      o.sasl_allowed_mechs("ANONYMOUS");
    }
    return o;
  }
};

std::vector<proton::symbol> queue_capability() { return {proton::symbol("queue")}; }

// The message the SDK sends for body, built by hand from the envelope as any
// AMQP 1.0 client would: durable, the envelope as an AMQP string, the JMS
// slots and the four binding properties.
proton::message raw_message(const bq::Envelope& envelope) {
  proton::message m;
  m.body(std::string(envelope.body()));
  m.durable(true);
  m.content_type("application/json");
  m.subject(std::string(envelope.urn()));
  m.correlation_id(std::string(envelope.trace_id()));
  m.id(std::string(envelope.id()));
  m.creation_time(proton::timestamp(envelope.created_at().value_or(0)));
  std::map<proton::annotation_key, proton::value> annotations;
  annotations.emplace(proton::symbol("x-opt-jms-type"), std::string(envelope.urn()));
  m.message_annotations() = annotations;
  std::map<std::string, proton::scalar> properties;
  properties.emplace("bq_schema_version", std::string("1"));
  properties.emplace("bq_source_lang", std::string(envelope.lang()));
  properties.emplace("bq_attempts", std::string("0"));
  properties.emplace("bq_app_id", std::string("babelqueue"));
  m.properties() = properties;
  return m;
}

// A raw sender: `batch` transfers unsettled, counted on accept, then the
// next batch, until `total` are accepted. Runs on its own container.
class RawPublisher final : public proton::messaging_handler {
 public:
  RawPublisher(const Endpoint& endpoint, std::string address, proton::message message, int total, int batch)
      : endpoint_(endpoint), address_(std::move(address)), message_(std::move(message)), total_(total), batch_(batch) {}

  Measured run() {
    proton::container(*this).run();
    if (accepted_ != total_)
      die("raw publish: " + std::to_string(accepted_) + " of " + std::to_string(total_) + " accepted (" + failure_ +
          ")");
    return measured(total_, elapsed_, cpu_used_);
  }

  void on_container_start(proton::container& c) override { c.connect(endpoint_.url, endpoint_.options()); }

  void on_connection_open(proton::connection& c) override {
    c.open_sender(address_, proton::sender_options().target(proton::target_options().capabilities(queue_capability())));
  }

  void on_sendable(proton::sender& s) override {
    if (!started_) {
      started_ = true;
      start_ = Clock::now();
      cpu_start_ = cpu_ns();
    }
    pump(s);
  }

  void on_tracker_accept(proton::tracker& t) override {
    if (++accepted_ < batch_end_) return;
    if (accepted_ == total_) {
      elapsed_ = Clock::now() - start_;
      cpu_used_ = cpu_ns() - cpu_start_;
      t.connection().close();
      return;
    }
    batch_end_ = std::min(total_, batch_end_ + batch_);
    proton::sender s = t.sender();
    pump(s);
  }

  void on_tracker_reject(proton::tracker& t) override { fail(t, "rejected"); }
  void on_tracker_release(proton::tracker& t) override { fail(t, "released"); }
  void on_transport_error(proton::transport& t) override { failure_ = t.error().what(); }
  void on_connection_error(proton::connection& c) override { failure_ = c.error().what(); }

 private:
  void pump(proton::sender& s) {
    while (s.credit() > 0 && sent_ < batch_end_) {
      s.send(message_);
      ++sent_;
    }
  }

  void fail(proton::tracker& t, const char* what) {
    failure_ = std::string("the broker ") + what + " a message";
    t.connection().close();
  }

  Endpoint endpoint_;
  std::string address_;
  proton::message message_;
  int total_;
  int batch_;
  int batch_end_ = batch_;
  int sent_ = 0;
  int accepted_ = 0;
  bool started_ = false;
  Clock::time_point start_;
  Clock::duration elapsed_{};
  std::int64_t cpu_start_ = 0;
  std::int64_t cpu_used_ = 0;
  std::string failure_ = "connection closed early";
};

// The clock of a raw consume, shared by the loop's threads: started when
// every receiver is asked to attach, stopped at the total-th accept.
class ConsumeClock {
 public:
  explicit ConsumeClock(int total) : total_(total) {}

  void start() {
    start_ = Clock::now().time_since_epoch().count();
    cpu_start_ = cpu_ns();
  }
  // Counts one accept; true for the total-th, which stops the clock.
  bool count() {
    if (++consumed_ != total_) return false;
    end_.store(Clock::now().time_since_epoch().count());
    cpu_end_.store(cpu_ns());
    return true;
  }
  bool finished() const { return consumed_.load() >= total_; }
  Measured result(const std::string& what) const {
    if (consumed_.load() != total_) {
      die(what + ": " + std::to_string(consumed_.load()) + " of " + std::to_string(total_) + " messages");
    }
    return measured(total_,
                    Clock::time_point(Clock::duration(end_.load())) - Clock::time_point(Clock::duration(start_)),
                    cpu_end_.load() - cpu_start_);
  }

 private:
  int total_;
  std::atomic<int> consumed_{0};
  Clock::rep start_ = 0;  // written before the receivers attach
  std::atomic<Clock::rep> end_{0};
  std::int64_t cpu_start_ = 0;
  std::atomic<std::int64_t> cpu_end_{0};
};

// Raw receivers: `links` connections with one receiver each (credit window
// `credit`, proton's own top-up), reading the body of every message and
// accepting it in on_message, on
// one container run by `links` threads. The clock starts when every
// connection is open and the receivers are asked to attach; it stops at the
// total-th accept.
class RawConsumers {
 public:
  RawConsumers(const Endpoint& endpoint, std::string address, int total, int links, int credit)
      : endpoint_(endpoint), address_(std::move(address)), clock_(total), credit_(credit) {
    for (int i = 0; i < links; ++i) receivers_.push_back(std::make_unique<Receiver>(*this));
  }

  Measured run() {
    proton::container container;
    for (auto& r : receivers_) {
      proton::connection_options o = endpoint_.options();
      o.handler(*r);
      container.connect(endpoint_.url, o);
    }
    container.run(static_cast<int>(receivers_.size()));
    return clock_.result("raw consume");
  }

 private:
  class Receiver final : public proton::messaging_handler {
   public:
    explicit Receiver(RawConsumers& owner) : owner_(owner) {}

    void on_connection_open(proton::connection& c) override {
      connection_ = c;
      work_ = &c.work_queue();
      if (++owner_.opened_ == static_cast<int>(owner_.receivers_.size())) owner_.go();
    }

    void attach() {
      connection_.open_receiver(owner_.address_,
                                proton::receiver_options()
                                    .credit_window(owner_.credit_)
                                    .auto_accept(false)
                                    .source(proton::source_options().capabilities(queue_capability())));
    }

    // What any consumer does at the least: read the body, then accept.
    void on_message(proton::delivery& d, proton::message& m) override {
      body_bytes_ += proton::get<std::string>(m.body()).size();
      d.accept();
      if (owner_.clock_.count()) owner_.done();
    }

    // Artemis may answer the close that follows the last accept with an
    // error of its own (AMQ119027) while it still pushes into the window:
    // only an error before the end counts.
    void on_error(const proton::error_condition& e) override {
      if (!owner_.clock_.finished()) die("raw consume: " + e.what());
    }

    RawConsumers& owner_;
    proton::connection connection_;  // its connection's thread only
    std::atomic<proton::work_queue*> work_{nullptr};
    std::size_t body_bytes_ = 0;
  };

  void go() {
    clock_.start();
    for (auto& r : receivers_) r->work_.load()->add([r = r.get()] { r->attach(); });
  }

  void done() {
    for (auto& r : receivers_) r->work_.load()->add([r = r.get()] { r->connection_.close(); });
  }

  Endpoint endpoint_;
  std::string address_;
  ConsumeClock clock_;
  int credit_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::atomic<int> opened_{0};
};

// The same raw receivers on proton's C proactor, the layer the SDK's client
// is built on (ADR 0058): `links` connections on one proactor waited on by
// `links` threads, each delivery read into one C message per connection,
// its body's bytes looked at, accepted and settled where it arrived; the
// credit topped up to the window once half of it was used (what proton's
// C++ binding does for a credit window). The clock starts when every
// connection is open and the receivers are asked to attach; it stops at the
// total-th accept.
class RawProactorConsumers {
 public:
  RawProactorConsumers(const Endpoint& endpoint, std::string address, int total, int links, int credit)
      : endpoint_(endpoint), address_(std::move(address)), clock_(total), links_(links), credit_(credit) {}

  Measured run() {
    proactor_ = pn_proactor();
    const std::string_view url = std::string_view(endpoint_.url).substr(std::string_view("amqp://").size());
    const std::size_t colon = url.rfind(':');
    const std::string host(url.substr(0, colon)), port(url.substr(colon + 1));
    char address[PN_MAX_ADDR];
    pn_proactor_addr(address, sizeof address, host.c_str(), port.c_str());
    for (int i = 0; i < links_; ++i) {
      auto link = std::make_unique<Link>();
      link->message = pn_message();
      pn_connection_t* c = pn_connection();
      link->connection = c;
      pn_connection_set_context(c, link.get());
      pn_connection_set_container(c, ("bench-raw-c-" + bq::uuid_v4()).c_str());
      pn_connection_set_hostname(c, host.c_str());
      pn_transport_t* t = pn_transport();
      pn_sasl_t* sasl = pn_sasl(t);
      if (!endpoint_.user.empty()) {
        pn_connection_set_user(c, endpoint_.user.c_str());
        pn_connection_set_password(c, endpoint_.password.c_str());
        pn_sasl_allowed_mechs(sasl, "PLAIN");
        pn_sasl_set_allow_insecure_mechs(sasl, true);
      } else {
        pn_sasl_allowed_mechs(sasl, "ANONYMOUS");
      }
      pn_connection_open(c);
      link->session = pn_session(c);
      pn_session_open(link->session);
      links_made_.push_back(std::move(link));
      pn_proactor_connect2(proactor_, c, t, address);
    }
    std::vector<std::thread> threads;
    for (int i = 0; i < links_; ++i) threads.emplace_back([this] { serve(); });
    for (auto& t : threads) t.join();
    for (auto& link : links_made_) pn_message_free(link->message);
    pn_proactor_free(proactor_);
    return clock_.result("raw C consume");
  }

 private:
  struct Link {
    pn_connection_t* connection = nullptr;
    pn_session_t* session = nullptr;
    pn_link_t* receiver = nullptr;
    pn_message_t* message = nullptr;
    std::vector<char> bytes;
    std::size_t body_bytes = 0;
    std::atomic<bool> attach{false};  // go(): attach at the next wake
    std::atomic<bool> close{false};   // done(): close at the next wake
  };

  void serve() {
    babelqueue::bench::run_proactor(proactor_, [this](pn_event_t* e) { return handle(e); });
  }

  // True when this thread is to stop.
  bool handle(pn_event_t* e) {
    switch (pn_event_type(e)) {
      case PN_CONNECTION_REMOTE_OPEN:
        if (++opened_ == links_) go();
        return false;
      case PN_CONNECTION_WAKE: {
        Link& link = *static_cast<Link*>(pn_connection_get_context(pn_event_connection(e)));
        if (link.attach.exchange(false)) {
          link.receiver = pn_receiver(link.session, "bench-raw-c");
          pn_terminus_set_address(pn_link_source(link.receiver), address_.c_str());
          pn_data_t* caps = pn_terminus_capabilities(pn_link_source(link.receiver));
          pn_data_put_array(caps, false, PN_SYMBOL);
          pn_data_enter(caps);
          pn_data_put_symbol(caps, pn_bytes(5, "queue"));
          pn_data_exit(caps);
          pn_link_set_snd_settle_mode(link.receiver, PN_SND_UNSETTLED);
          pn_link_open(link.receiver);
          pn_link_flow(link.receiver, credit_);
        }
        if (link.close.exchange(false)) pn_connection_close(link.connection);
        return false;
      }
      case PN_DELIVERY: on_delivery(pn_event_delivery(e)); return false;
      case PN_CONNECTION_REMOTE_CLOSE:
        // Artemis may close with an error of its own (AMQ119027) once the
        // last accept is in: only an error before the end counts.
        if (!clock_.finished()) die("raw C consume: the broker closed the connection");
        pn_connection_close(pn_event_connection(e));
        return false;
      case PN_TRANSPORT_CLOSED:
        if (!clock_.finished()) die("raw C consume: the connection closed before the end");
        return false;
      case PN_PROACTOR_INACTIVE:
      case PN_PROACTOR_INTERRUPT:
        // Every connection is closed: each thread that stops wakes the next
        // (interrupts that meet may count once).
        pn_proactor_interrupt(proactor_);
        return true;
      default: return false;
    }
  }

  // What any consumer does at the least: read the message, look at its
  // body, then accept.
  void on_delivery(pn_delivery_t* d) {
    if (!pn_delivery_readable(d) || pn_delivery_partial(d)) return;
    pn_link_t* receiver = pn_delivery_link(d);
    Link& link = *static_cast<Link*>(pn_connection_get_context(pn_session_connection(pn_link_session(receiver))));
    link.bytes.resize(pn_delivery_pending(d));
    const ssize_t n = pn_link_recv(receiver, link.bytes.data(), link.bytes.size());
    pn_link_advance(receiver);
    pn_message_clear(link.message);
    if (n < 0 || pn_message_decode(link.message, link.bytes.data(), static_cast<std::size_t>(n)) != 0) {
      die("raw C consume: a message could not be decoded");
    }
    pn_data_t* body = pn_message_body(link.message);
    pn_data_rewind(body);
    if (pn_data_next(body) && pn_data_type(body) == PN_STRING) link.body_bytes += pn_data_get_string(body).size;
    pn_delivery_update(d, PN_ACCEPTED);
    pn_delivery_settle(d);
    if (pn_link_credit(receiver) <= credit_ / 2) pn_link_flow(receiver, credit_ - pn_link_credit(receiver));
    if (clock_.count()) done();
  }

  void go() {
    clock_.start();
    for (auto& link : links_made_) {
      link->attach = true;
      pn_connection_wake(link->connection);
    }
  }

  void done() {
    for (auto& link : links_made_) {
      link->close = true;
      pn_connection_wake(link->connection);
    }
  }

  Endpoint endpoint_;
  std::string address_;
  ConsumeClock clock_;
  int links_;
  int credit_;
  pn_proactor_t* proactor_ = nullptr;
  std::vector<std::unique_ptr<Link>> links_made_;
  std::atomic<int> opened_{0};
};

// The SDK's publish_batch, `batch` at a time. The first message goes before
// the clock (it attaches the sender link, as the raw loop's link is attached
// before its clock starts); the queue ends up with `messages` messages.
Measured sdk_publish(const Config& config, bq::artemis::Transport& transport, const std::string& queue,
                     const std::string& body) {
  if (auto sent = transport.publish(queue, body); !sent) die("sdk publish failed: " + sent.error().message());
  std::vector<bq::OutgoingMessage> batch(static_cast<std::size_t>(config.batch), bq::OutgoingMessage{queue, body, {}});
  const auto start = Clock::now();
  const std::int64_t cpu_start = cpu_ns();
  for (int sent = 1; sent < config.messages; sent += config.batch) {
    const auto count = static_cast<std::size_t>(std::min(config.batch, config.messages - sent));
    if (auto published = transport.publish_batch(std::span(batch.data(), count)); !published) {
      die("sdk publish_batch failed: " + published.error().message());
    }
  }
  return measured(config.messages - 1, Clock::now() - start, cpu_ns() - cpu_start);
}

// The SDK's publish(), one message at a time (what the Python SDK does).
double sdk_publish_each(int messages, bq::artemis::Transport& transport, const std::string& queue,
                        const std::string& body) {
  if (auto sent = transport.publish(queue, body); !sent) die("sdk publish failed: " + sent.error().message());
  const auto start = Clock::now();
  for (int i = 1; i < messages; ++i) {
    if (auto sent = transport.publish(queue, body); !sent) die("sdk publish failed: " + sent.error().message());
  }
  return rate(messages - 1, Clock::now() - start);
}

void fill(bq::artemis::Transport& transport, const std::string& queue, const std::string& body, int messages) {
  std::vector<bq::OutgoingMessage> batch(1000, bq::OutgoingMessage{queue, body, {}});
  for (int sent = 0; sent < messages; sent += 1000) {
    const auto count = static_cast<std::size_t>(std::min(1000, messages - sent));
    if (auto published = transport.publish_batch(std::span(batch.data(), count)); !published) {
      die("fill failed: " + published.error().message());
    }
  }
}

// threads loop receive() + ack() on one transport, taking up to 32 per
// receive: what the Worker's automatic prefetch holds per handler thread
// on Artemis (ADR 0047), so that the loop asks for what a Worker would.
constexpr std::size_t kReceiveMax = 32;

Measured sdk_consume(int messages, bq::artemis::Transport& transport, const std::string& queue, int threads) {
  std::atomic<int> consumed{0};
  // The clock stops at the last ack, as the raw loop's does, not when the
  // other threads' receive() calls have waited out the empty queue.
  std::atomic<Clock::rep> end{0};
  std::atomic<std::int64_t> cpu_end{0};
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  const std::int64_t cpu_start = cpu_ns();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (consumed.load() < messages) {
        auto batch = transport.receive(queue, kReceiveMax, std::chrono::milliseconds(200));
        if (!batch) die("sdk receive failed: " + batch.error().message());
        for (const bq::Delivery& delivery : *batch) {
          if (auto acked = transport.ack(delivery); !acked) die("sdk ack failed: " + acked.error().message());
        }
        const int before = consumed.fetch_add(static_cast<int>(batch->size()));
        if (before < messages && before + static_cast<int>(batch->size()) >= messages) {
          end.store(Clock::now().time_since_epoch().count());
          cpu_end.store(cpu_ns());
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
  return measured(messages, Clock::time_point(Clock::duration(end.load())) - start, cpu_end.load() - cpu_start);
}

// A Worker with `concurrency` handler threads and its default prefetch, a
// no-op handler, every message acked.
Measured worker_consume(int messages, bq::artemis::Transport& transport, const std::string& queue,
                        std::size_t concurrency) {
  bq::WorkerOptions options;
  options.concurrency = concurrency;
  bq::Worker worker(transport, options);
  std::atomic<int> handled{0};
  worker.handle("urn:bench:orders:created", [&](const bq::Message&) { ++handled; });
  bq::RunLimits limits;
  limits.max_messages = static_cast<std::size_t>(messages);
  const auto start = Clock::now();
  const std::int64_t cpu_start = cpu_ns();
  auto summary = worker.run({queue}, limits);
  const Measured result = measured(messages, Clock::now() - start, cpu_ns() - cpu_start);
  if (!summary) die("worker run failed: " + summary.error().message());
  if (handled.load() != messages) die("the worker handled " + std::to_string(handled.load()) + " messages");
  return result;
}

// A word for a POSIX shell, in single quotes.
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs the Python side once and returns its msg/s.
double python_sdk(const Config& config, const std::string& url, const std::string& queue, const char* mode,
                  const std::string& body) {
  std::string command = quoted(config.python) + " " + quoted(config.python_script) + " " + quoted(url) + " " +
                        quoted(queue) + " " + mode + " " + std::to_string(config.python_messages);
  if (std::string_view(mode) == "publish") command += " " + quoted(body);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) die("cannot run " + config.python);
  double value = 0;
  char line[256];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    if (std::sscanf(line, "msg/s %lf", &value) == 1) break;
  }
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
  }
  const int status = pclose(pipe);
  if (status != 0 || !(value > 0)) die(std::string("the Python SDK's ") + mode + " run failed: " + command);
  return value;
}

std::unique_ptr<bq::artemis::Transport> open_sdk(const bq::artemis::Transport::Options& options) {
  auto transport = bq::artemis::Transport::open(options);
  if (!transport) die("cannot open the transport: " + transport.error().message());
  return std::move(*transport);
}

// The 1, 5 and 15 minute load averages (Linux), to report how busy the
// machine was.
std::string load_average() {
  FILE* file = std::fopen("/proc/loadavg", "r");
  if (file == nullptr) return "unknown";
  char text[64] = {};
  const bool read = std::fgets(text, sizeof text, file) != nullptr;
  std::fclose(file);
  if (!read) return "unknown";
  std::string fields(text);
  std::size_t end = 0;
  for (int i = 0; i < 3 && end != std::string::npos; ++i) end = fields.find(' ', end + 1);
  return fields.substr(0, end);
}

using babelqueue::bench::line;
using babelqueue::bench::median;
using babelqueue::bench::ratio;

// The ratio of each round's SDK figure to the same round's raw one (run
// back to back), as their median and, after it, their range.
void paired(const char* name, const std::vector<double>& sdk, const std::vector<double>& raw, double target) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(sdk.size(), raw.size()); ++i) {
    if (raw[i] > 0) ratios.push_back(sdk[i] / raw[i]);
  }
  if (ratios.empty()) return;
  const double value = median(ratios);
  const auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
  std::printf("%-48s %9.2fx  (target >= %.2fx: %s; rounds %.2f-%.2fx)\n", name, value, target,
              value >= target ? "met" : "NOT met", *low, *high);
}

void info_ratio(const char* name, double value) {
  if (!(value > 0) || !std::isfinite(value)) return;
  std::printf("%-48s %9.2fx  (no target)\n", name, value);
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  const char* env = std::getenv("BABELQUEUE_URL");
  config.url = env != nullptr && *env != '\0' ? env : "artemis://admin:admin@127.0.0.1:5672";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--url") {
      config.url = value;
    } else if (flag == "--messages") {
      config.messages = std::atoi(value);
    } else if (flag == "--batch") {
      config.batch = std::atoi(value);
    } else if (flag == "--rounds") {
      config.rounds = std::atoi(value);
    } else if (flag == "--python") {
      config.python = value;
    } else if (flag == "--python-script") {
      config.python_script = value;
    } else if (flag == "--python-messages") {
      config.python_messages = std::atoi(value);
    } else if (flag == "--only") {
      config.only = value;
    } else if (flag == "--step-timeout") {
      config.step_timeout = std::atoi(value);
    } else {
      die("unknown option " + flag +
          " (use --url, --messages, --batch, --rounds, --python, --python-script, --python-messages, --only, "
          "--step-timeout)");
    }
  }
  if (config.messages < 2 || config.batch <= 0 || config.rounds <= 0 || config.python_messages < 2 ||
      config.step_timeout <= 0) {
    die("--messages and --python-messages must be at least 2, --batch, --rounds and --step-timeout positive");
  }
  Watchdog watchdog{std::chrono::seconds(config.step_timeout)};
  if (config.python.empty() != config.python_script.empty()) die("--python and --python-script go together");
  auto url = bq::Url::parse(config.url);
  if (!url) die(url.error().message());
  auto options = bq::artemis::Transport::options_from_url(*url);
  if (!options) die(options.error().message());
  if (options->tls.enabled) die("the benchmark compares plain TCP loops: use an artemis:// URL");
  const Endpoint endpoint{"amqp://" + options->host + ":" + std::to_string(options->port), options->user,
                          options->password};
  // The Python SDK takes credentials in its URL and no options.
  std::string python_url = "artemis://";
  if (!options->user.empty()) python_url += options->user + ":" + options->password + "@";
  python_url += options->host + ":" + std::to_string(options->port);

  bq::MakeOptions make;
  make.queue = "bench";
  auto envelope = bq::Envelope::make(
      "urn:bench:orders:created", bq::Value::object({{"order_id", 1042}, {"customer", "c-7"}, {"total", 99.5}}), make);
  if (!envelope) die("cannot make the envelope: " + envelope.error().message());
  const std::string body(envelope->body());
  const proton::message raw = raw_message(*envelope);
  bq::artemis::MessageEncoder encoder;
  bq::amqp10::EncodedMessages sdk_bytes;
  if (auto encoded = encoder.append(body, {}, std::nullopt, sdk_bytes); !encoded) die(encoded.error().message());
  const std::vector<char> raw_bytes = raw.encode();
  if (std::string_view(raw_bytes.data(), raw_bytes.size()) != sdk_bytes[0]) {
    die("the raw loop's message differs from the SDK's: the comparison would not be like with like");
  }
  const std::string run = bq::uuid_v4().substr(0, 8);
  std::printf(
      "Artemis benchmark: %d messages of %zu bytes (%zu encoded), publish batch %d, credit %u, median of %d "
      "rounds, %s\n",
      config.messages, body.size(), raw.encode().size(), config.batch, options->credit, config.rounds,
      url->redacted().c_str());

  std::fflush(stdout);
  const std::string start_load = load_average();

  auto transport = open_sdk(*options);
  std::vector<double> raw_pubs, sdk_pubs, raw_c1s, sdk_c1s, raw_c4s, sdk_c4s, worker_c1s, worker_c4s, sdk_c4_ones;
  std::vector<double> rawc_c1s, rawc_c4s;  // the raw loops on the C proactor
  // The client's CPU per message, by measurement.
  std::map<std::string, std::vector<double>> cpu;
  auto keep = [&cpu](std::vector<double>& rates, const char* name, Measured m) {
    rates.push_back(m.rate);
    cpu[name].push_back(m.cpu_us);
  };
  std::vector<double> py_pubs, py_pops, sdk_each, raw_each;
  // --only: a group (publish, c1, c4, python) or one measurement of it.
  auto wanted = [&config](std::string_view group, std::string_view name) {
    return config.only.empty() || config.only == group || config.only == name;
  };
  for (int round = 0; round < config.rounds; ++round) {
    const std::string tag = run + "-" + std::to_string(round);
    auto queue = [&tag](const char* role) { return std::string("bench-") + role + "-" + tag; };
    auto filled = [&](const char* role, int messages) {
      const std::string name = queue(role);
      fill(*transport, name, body, messages);
      return name;
    };
    // A fresh transport per SDK consume measurement, with `connections`,
    // closed after it. Its connections are open before the clock starts, as
    // the raw loop's are: a receive() from another, empty queue opens the
    // further ones (they open on the first receive()).
    auto with_sdk = [&](const std::string& name, std::uint32_t connections, auto&& measure) {
      auto sdk_options = *options;
      sdk_options.connections = connections;
      auto sdk = open_sdk(sdk_options);
      if (auto opened = sdk->receive(queue("idle"), 1, std::chrono::milliseconds(0)); !opened) {
        die("sdk receive failed: " + opened.error().message());
      }
      const Measured result = measure(*sdk, name);
      sdk->close();
      return result;
    };

    // The measurements of a group run in an order that turns every round:
    // the one that runs right after another finds the broker still busy
    // with the last one's journal, and no side should always be that one.
    using Steps = std::vector<std::pair<std::string, std::function<void()>>>;
    auto in_turn = [round, &watchdog](Steps steps) {
      for (std::size_t i = 0; i < steps.size(); ++i) {
        auto& [name, step] = steps[(i + static_cast<std::size_t>(round)) % steps.size()];
        watchdog.watch("round " + std::to_string(round + 1) + ", " + name);
        step();
      }
    };
    auto drain = [&](const std::string& name, int messages) {
      RawConsumers(endpoint, name, messages, 1, options->credit).run();
    };

    {
      Steps steps;
      if (wanted("publish", "raw-publish")) {
        steps.emplace_back("raw-publish", [&] {
          const std::string name = queue("raw-pub");
          keep(raw_pubs, "raw-publish", RawPublisher(endpoint, name, raw, config.messages, config.batch).run());
          drain(name, config.messages);
        });
      }
      if (wanted("publish", "sdk-publish")) {
        steps.emplace_back("sdk-publish", [&] {
          const std::string name = queue("sdk-pub");
          keep(sdk_pubs, "sdk-publish", sdk_publish(config, *transport, name, body));
          drain(name, config.messages);
        });
      }
      in_turn(std::move(steps));
    }
    for (const int threads : {1, 4}) {
      const bool c1 = threads == 1;
      const char* group = c1 ? "c1" : "c4";
      const char* raw_name = c1 ? "raw-c1" : "raw-c4";
      const char* sdk_name = c1 ? "sdk-c1" : "sdk-c4";
      const char* worker_name = c1 ? "worker-c1" : "worker-c4";
      const char* rawc_name = c1 ? "raw-c-c1" : "raw-c-c4";
      Steps steps;
      if (wanted(group, raw_name)) {
        steps.emplace_back(raw_name, [&] {
          const std::string name = filled(raw_name, config.messages);
          keep(c1 ? raw_c1s : raw_c4s, raw_name,
               RawConsumers(endpoint, name, config.messages, threads, options->credit).run());
        });
      }
      if (wanted(group, rawc_name)) {
        steps.emplace_back(rawc_name, [&] {
          const std::string name = filled(rawc_name, config.messages);
          keep(c1 ? rawc_c1s : rawc_c4s, rawc_name,
               RawProactorConsumers(endpoint, name, config.messages, threads, static_cast<int>(options->credit)).run());
        });
      }
      // As many connections as the raw loop has.
      const auto connections = static_cast<std::uint32_t>(threads);
      if (wanted(group, sdk_name)) {
        steps.emplace_back(sdk_name, [&] {
          const std::string name = filled(sdk_name, config.messages);
          keep(c1 ? sdk_c1s : sdk_c4s, sdk_name,
               with_sdk(name, connections, [&](bq::artemis::Transport& sdk, const std::string& q) {
                 return sdk_consume(config.messages, sdk, q, threads);
               }));
        });
      }
      if (!c1 && wanted(group, "sdk-c4-one")) {
        steps.emplace_back("sdk-c4-one", [&] {
          const std::string name = filled("sdk-c4-one", config.messages);
          keep(sdk_c4_ones, "sdk-c4-one", with_sdk(name, 1, [&](bq::artemis::Transport& sdk, const std::string& q) {
                 return sdk_consume(config.messages, sdk, q, threads);
               }));
        });
      }
      if (wanted(group, worker_name)) {
        steps.emplace_back(worker_name, [&] {
          const std::string name = filled(worker_name, config.messages);
          keep(c1 ? worker_c1s : worker_c4s, worker_name,
               with_sdk(name, connections, [&](bq::artemis::Transport& sdk, const std::string& q) {
                 return worker_consume(config.messages, sdk, q, static_cast<std::size_t>(threads));
               }));
        });
      }
      in_turn(std::move(steps));
    }
    if (!config.python.empty() && wanted("python", "python")) {
      // Python, the SDK and a raw sender publish one by one into one queue,
      // drained by a raw receiver afterwards; then Python pops a queue the
      // SDK filled.
      const std::string each_queue = queue("each");
      in_turn({{"Python SDK publish",
                [&] { py_pubs.push_back(python_sdk(config, python_url, each_queue, "publish", body)); }},
               {"SDK publish one by one",
                [&] { sdk_each.push_back(sdk_publish_each(config.python_messages, *transport, each_queue, body)); }},
               {"raw publish one by one", [&] {
                  raw_each.push_back(RawPublisher(endpoint, each_queue, raw, config.python_messages, 1).run().rate);
                }}});
      watchdog.watch("round " + std::to_string(round + 1) + ", draining the one-by-one queue");
      drain(each_queue, 3 * config.python_messages);
      watchdog.watch("round " + std::to_string(round + 1) + ", Python SDK pop+ack");
      py_pops.push_back(python_sdk(config, python_url, filled("py-pop", config.python_messages), "consume", body));
    }
    auto last = [](const std::vector<double>& values) { return values.empty() ? 0.0 : values.back(); };
    std::fprintf(stderr,
                 "round %d: publish raw %.0f sdk %.0f | c1 raw %.0f sdk %.0f worker %.0f raw-c %.0f | c4 raw %.0f "
                 "sdk %.0f worker %.0f sdk-one %.0f raw-c %.0f | one by one python %.0f sdk %.0f raw %.0f | python "
                 "pop %.0f\n",
                 round + 1, last(raw_pubs), last(sdk_pubs), last(raw_c1s), last(sdk_c1s), last(worker_c1s),
                 last(rawc_c1s), last(raw_c4s), last(sdk_c4s), last(worker_c4s), last(sdk_c4_ones), last(rawc_c4s),
                 last(py_pubs), last(sdk_each), last(raw_each), last(py_pops));
  }
  watchdog.watch("closing the transport");
  transport->close();

  const double raw_pub = median(raw_pubs), sdk_pub = median(sdk_pubs);
  const double raw_c1 = median(raw_c1s), sdk_c1 = median(sdk_c1s), worker_c1 = median(worker_c1s);
  const double raw_c4 = median(raw_c4s), sdk_c4 = median(sdk_c4s), worker_c4 = median(worker_c4s);
  const double sdk_c4_one = median(sdk_c4_ones);
  const double rawc_c1 = median(rawc_c1s), rawc_c4 = median(rawc_c4s);
  const double py_pub = median(py_pubs), py_pop = median(py_pops), each = median(sdk_each);
  const double raw_one = median(raw_each);

  std::printf("\n");
  line("raw proton publish (batched, unsettled)", raw_pub);
  line("SDK publish_batch", sdk_pub);
  line("raw proton receive+accept, 1 receiver", raw_c1);
  line("SDK receive+ack, concurrency 1", sdk_c1);
  line("SDK Worker consume+ack, concurrency 1", worker_c1);
  line("raw proton C proactor receive+accept, 1 receiver", rawc_c1);
  line("raw proton receive+accept, 4 receivers", raw_c4);
  line("SDK receive+ack, concurrency 4", sdk_c4);
  line("SDK Worker consume+ack, concurrency 4", worker_c4);
  line("SDK receive+ack, concurrency 4, one connection", sdk_c4_one);
  line("raw proton C proactor receive+accept, 4 receivers", rawc_c4);
  line("Python SDK publish (one by one)", py_pub);
  line("SDK publish (one by one)", each);
  line("raw proton publish (one by one)", raw_one);
  line("Python SDK pop+ack", py_pop);
  std::printf("\n");
  // SDK against raw: the median of the rounds' own ratios, with their
  // range; against Python, the ratio of the medians (Python's figures are
  // a few hundred times smaller than anything the machine's drift moves).
  paired("SDK / raw publish", sdk_pubs, raw_pubs, 0.9);
  paired("SDK / raw consume+ack, concurrency 1", sdk_c1s, raw_c1s, 0.9);
  paired("SDK Worker / raw consume+ack, concurrency 1", worker_c1s, raw_c1s, 0.9);
  paired("SDK / raw consume+ack, concurrency 4", sdk_c4s, raw_c4s, 0.9);
  paired("SDK Worker / raw consume+ack, concurrency 4", worker_c4s, raw_c4s, 0.9);
  paired("SDK / raw C proactor consume+ack, c1", sdk_c1s, rawc_c1s, 0.9);
  paired("SDK Worker / raw C proactor consume+ack, c1", worker_c1s, rawc_c1s, 0.9);
  paired("SDK / raw C proactor consume+ack, c4", sdk_c4s, rawc_c4s, 0.9);
  paired("SDK Worker / raw C proactor consume+ack, c4", worker_c4s, rawc_c4s, 0.9);
  ratio("SDK publish_batch / Python SDK publish", sdk_pub / py_pub, 3.0);
  ratio("SDK receive+ack c1 / Python SDK pop+ack", sdk_c1 / py_pop, 3.0);
  ratio("SDK Worker c1 / Python SDK pop+ack", worker_c1 / py_pop, 3.0);
  info_ratio("SDK c4 one connection / raw c4", sdk_c4_one / raw_c4);
  info_ratio("SDK publish one by one / Python SDK publish", each / py_pub);
  info_ratio("SDK / raw publish one by one", each / raw_one);
  // The client's CPU per message (medians): what the SDK costs over proton
  // itself, on a machine whose load moves msg/s by far more.
  std::printf("\nclient CPU per message (all threads of this process, medians):\n");
  for (const char* name : {"raw-publish", "sdk-publish", "raw-c1", "raw-c-c1", "sdk-c1", "worker-c1", "raw-c4",
                           "raw-c-c4", "sdk-c4", "worker-c4", "sdk-c4-one"}) {
    if (const auto it = cpu.find(name); it != cpu.end()) std::printf("  %-12s %7.2f us\n", name, median(it->second));
  }
  std::printf("load average: %s at the start, %s at the end\n", start_load.c_str(), load_average().c_str());
  return 0;
}
