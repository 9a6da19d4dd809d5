// SPDX-License-Identifier: Apache-2.0
// Service Bus throughput: babelqueue::servicebus against raw qpid-proton C++
// loops doing the same work on the same server (the project's Service Bus
// test server), in one run, with the ratios.
//
//   publish   one sender link, `batch` messages unsettled at once, the next
//             batch when the whole batch is accepted  vs
//             Transport::publish_batch of `batch` messages.
//   consume   PeekLock receive + Complete per message. Raw: 1 or 4
//             connections, each with one receiver (rcv-settle-mode second,
//             the same credit window as the SDK's prefetch) that sends
//             `accepted` unsettled for every message in on_message and counts
//             it when the server settles back, on a container run by 1 or 4
//             threads  vs  one transport with 1 or 4 threads looping
//             receive(16 / threads) + ack_batch() (a Worker's default
//             prefetch of 16 shared by its handler threads), and a Worker at
//             concurrency 1 and 4 with a no-op handler (what an application
//             runs).
//
// Both sides put a SAS token on $cbs before their links attach (outside the
// clock) and send the same message, built by hand on the raw side and
// checked equal to the SDK's, byte for byte, before anything is timed.
//
// Usage: babelqueue_bench_servicebus [--url URL] [--messages N] [--batch N] [--rounds N] [--only NAME]
// URL default: $BABELQUEUE_URL; the credentials come from
// AZURE_SERVICEBUS_CONNECTION_STRING (UseDevelopmentEmulator=true: plain
// AMQP). --only runs one group (publish, c1, c4) or one measurement
// (raw-publish, sdk-publish, raw-c1, sdk-c1, worker-c1, raw-c4, sdk-c4,
// worker-c4). Each round runs every measurement once, in an order that
// turns every round; the figures are the medians over the rounds. Each
// measurement has a queue of its own, filled (or drained) outside the clock.
#include "../../src/servicebus/connection_string.hpp"
#include "../../src/servicebus/sas_token.hpp"
#include "../../src/servicebus/servicebus_projection.hpp"
#include "../support/bench_report.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/servicebus/transport.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/worker.hpp>

#include <proton/delivery.h>
#include <proton/link.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <proton/connection.hpp>
#include <proton/connection_options.hpp>
#include <proton/container.hpp>
#include <proton/delivery.hpp>
#include <proton/error_condition.hpp>
#include <proton/message.hpp>
#include <proton/message_id.hpp>
#include <proton/messaging_handler.hpp>
#include <proton/receiver.hpp>
#include <proton/receiver_options.hpp>
#include <proton/scalar.hpp>
#include <proton/sender.hpp>
#include <proton/source.hpp>
#include <proton/target_options.hpp>
#include <proton/timestamp.hpp>
#include <proton/tracker.hpp>
#include <proton/transport.hpp>
#include <proton/work_queue.hpp>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bq = babelqueue;
namespace sb = babelqueue::servicebus;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string url;
  int messages = 10000;
  int batch = 500;
  int rounds = 3;
  std::string only;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "babelqueue_bench_servicebus: %s\n", why.c_str());
  std::exit(1);
}

double rate(int messages, Clock::duration elapsed) { return messages / std::chrono::duration<double>(elapsed).count(); }

// Where the raw loops connect, and how they sign their token: from the same
// connection string as the SDK.
struct Endpoint {
  std::string url;  // amqp://host:port
  std::string authority;
  std::string key_name;
  std::string key;

  proton::connection_options options() const {
    proton::connection_options o;
    o.sasl_enabled(true);
    o.sasl_allowed_mechs("ANONYMOUS");
    return o;
  }

  proton::message put_token(const std::string& queue) const {
    const std::string audience = "sb://" + authority + "/" + queue;
    const auto expiry =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() +
        3600;
    proton::message m;
    m.body(sb::sign_sas_token(audience, key_name, key, expiry));
    m.properties().put("operation", std::string("put-token"));
    m.properties().put("type", std::string(sb::kSasTokenType));
    m.properties().put("name", audience);
    m.id(std::string("raw-put-token"));
    m.reply_to("raw-cbs-reply");
    return m;
  }
};

// The message the SDK sends for body, built by hand as any AMQP 1.0 client
// would: a Data section, the native fields and the typed bq- properties.
proton::message raw_message(const bq::Envelope& envelope) {
  proton::message m;
  m.inferred(true);
  const std::string_view body = envelope.body();
  m.body(proton::binary(body.begin(), body.end()));
  m.content_type("application/json");
  m.subject(std::string(envelope.urn()));
  m.correlation_id(std::string(envelope.trace_id()));
  m.id(std::string(envelope.id()));
  std::map<std::string, proton::scalar> properties;
  properties.emplace("bq-schema-version", std::int32_t{1});
  properties.emplace("bq-source-lang", std::string(envelope.lang()));
  properties.emplace("bq-created-at", static_cast<std::int64_t>(envelope.created_at().value_or(0)));
  m.properties() = properties;
  return m;
}

// A raw connection that first puts its token on $cbs, then calls ready().
class Authorised : public proton::messaging_handler {
 public:
  Authorised(const Endpoint& endpoint, std::string queue) : endpoint_(endpoint), queue_(std::move(queue)) {}

  void on_connection_open(proton::connection& c) override {
    connection_ = c;
    c.open_receiver("$cbs", proton::receiver_options().target(proton::target_options().address("raw-cbs-reply")));
    cbs_ = c.open_sender("$cbs");
  }

  void on_sendable(proton::sender& s) override {
    if (s == cbs_) {
      if (!token_sent_) {
        token_sent_ = true;
        s.send(endpoint_.put_token(queue_));
      }
      return;
    }
    sendable(s);
  }

  void on_message(proton::delivery& d, proton::message& m) override {
    if (d.receiver().source().address() == "$cbs") {
      const auto status = proton::coerce<std::int64_t>(m.properties().get("status-code"));
      if (status != 202 && status != 200) die("the raw loop's token was refused: " + std::to_string(status));
      proton::connection c = d.connection();
      ready(c);
      return;
    }
    message(d, m);
  }

  void on_error(const proton::error_condition& e) override { error(e); }

 protected:
  virtual void ready(proton::connection& c) = 0;
  virtual void sendable(proton::sender&) {}
  virtual void message(proton::delivery&, proton::message&) {}
  virtual void error(const proton::error_condition& e) { die("raw loop: " + e.what()); }

  const Endpoint& endpoint_;
  std::string queue_;
  proton::connection connection_;

 private:
  proton::sender cbs_;
  bool token_sent_ = false;
};

// A raw sender: `batch` transfers unsettled, counted on accept, then the
// next batch, until `total` are accepted.
class RawPublisher final : public Authorised {
 public:
  RawPublisher(const Endpoint& endpoint, std::string queue, proton::message message, int total, int batch)
      : Authorised(endpoint, std::move(queue)), message_(std::move(message)), total_(total), batch_(batch) {}

  double run() {
    proton::container(*this).run();
    if (accepted_ != total_) die("raw publish: " + std::to_string(accepted_) + " of " + std::to_string(total_));
    return rate(total_, elapsed_);
  }

  void on_container_start(proton::container& c) override { c.connect(endpoint_.url, endpoint_.options()); }

  void on_tracker_accept(proton::tracker& t) override {
    if (t.sender() != sender_) return;  // the put-token
    if (++accepted_ < batch_end_) return;
    if (accepted_ == total_) {
      elapsed_ = Clock::now() - start_;
      t.connection().close();
      return;
    }
    batch_end_ = std::min(total_, batch_end_ + batch_);
    pump(sender_);
  }

  void on_tracker_reject(proton::tracker& t) override {
    if (t.sender() == sender_) die("raw publish: the server rejected a message");
  }

 protected:
  void ready(proton::connection& c) override { sender_ = c.open_sender(queue_); }

  void sendable(proton::sender& s) override {
    if (!started_) {
      started_ = true;
      start_ = Clock::now();
    }
    pump(s);
  }

 private:
  void pump(proton::sender& s) {
    while (s.credit() > 0 && sent_ < batch_end_) {
      s.send(message_);
      ++sent_;
    }
  }

  proton::message message_;
  proton::sender sender_;
  int total_;
  int batch_;
  int batch_end_ = batch_;
  int sent_ = 0;
  int accepted_ = 0;
  bool started_ = false;
  Clock::time_point start_;
  Clock::duration elapsed_{};
};

// Raw PeekLock receivers: `links` connections, one receiver each with
// rcv-settle-mode second and a credit window of `credit`; every message's
// body is read and `accepted` sent unsettled in on_message; a message
// counts when the server settles back. The clock starts when every
// connection holds its token and the receivers are asked to attach; it stops
// at the total-th settlement.
class RawConsumers {
 public:
  RawConsumers(const Endpoint& endpoint, const std::string& queue, int total, int links, int credit)
      : total_(total), credit_(credit) {
    for (int i = 0; i < links; ++i) receivers_.push_back(std::make_unique<Receiver>(*this, endpoint, queue));
  }

  double run() {
    proton::container container;
    for (auto& r : receivers_) {
      proton::connection_options o = r->endpoint().options();
      o.handler(*r);
      container.connect(r->endpoint().url, o);
    }
    container.run(static_cast<int>(receivers_.size()));
    if (completed_.load() != total_) {
      die("raw consume: " + std::to_string(completed_.load()) + " of " + std::to_string(total_) + " messages");
    }
    return rate(total_, Clock::time_point(Clock::duration(end_.load())) - Clock::time_point(Clock::duration(start_)));
  }

 private:
  class Receiver final : public Authorised {
   public:
    Receiver(RawConsumers& owner, const Endpoint& endpoint, const std::string& queue)
        : Authorised(endpoint, queue), owner_(owner) {}

    const Endpoint& endpoint() const { return endpoint_; }

    void attach() {
      proton::receiver r = connection_.open_receiver(
          queue_, proton::receiver_options().credit_window(owner_.credit_).auto_accept(false));
      pn_link_set_rcv_settle_mode(link_of(r), PN_RCV_SECOND);
    }

    void on_delivery_settle(proton::delivery& d) override {
      d.settle();
      if (++owner_.completed_ == owner_.total_) owner_.done();
    }

   protected:
    void ready(proton::connection& c) override {
      work_ = &c.work_queue();
      if (++owner_.ready_ == static_cast<int>(owner_.receivers_.size())) owner_.go();
    }

    // What any PeekLock consumer does at the least: read the body, then
    // Complete (accepted, unsettled, under rcv-settle-mode second).
    void message(proton::delivery& d, proton::message& m) override {
      body_bytes_ += proton::get<proton::binary>(m.body()).size();
      pn_delivery_update(delivery_of(d), PN_ACCEPTED);
    }

    void error(const proton::error_condition& e) override {
      if (owner_.completed_.load() < owner_.total_) die("raw consume: " + e.what());
    }

   private:
    // The C handles beneath proton's objects (receiver_options cannot ask for
    // rcv-settle-mode second; delivery::accept() would settle at once).
    template <class Wrapper, class C>
    struct Handle : Wrapper {
      static C* of(const Wrapper& object) {
        C* (proton::internal::object<C>::*get)() const = &Handle::pn_object;
        return (object.*get)();
      }
    };
    static pn_link_t* link_of(const proton::receiver& r) { return Handle<proton::receiver, pn_link_t>::of(r); }
    static pn_delivery_t* delivery_of(const proton::delivery& d) {
      return Handle<proton::delivery, pn_delivery_t>::of(d);
    }

    friend class RawConsumers;
    RawConsumers& owner_;
    std::atomic<proton::work_queue*> work_{nullptr};
    std::size_t body_bytes_ = 0;
  };

  void go() {
    start_ = Clock::now().time_since_epoch().count();
    for (auto& r : receivers_) r->work_.load()->add([r = r.get()] { r->attach(); });
  }

  void done() {
    end_.store(Clock::now().time_since_epoch().count());
    for (auto& r : receivers_) r->work_.load()->add([r = r.get()] { r->connection_.close(); });
  }

  int total_;
  int credit_;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::atomic<int> ready_{0};
  std::atomic<int> completed_{0};
  Clock::rep start_ = 0;  // written before the receivers attach
  std::atomic<Clock::rep> end_{0};
};

// The SDK's publish_batch, `batch` at a time. The first message goes before
// the clock (it puts the token and attaches the sender link, as the raw
// loop's are before its clock starts).
double sdk_publish(const Config& config, sb::Transport& transport, const std::string& queue, const std::string& body) {
  if (auto sent = transport.publish(queue, body); !sent) die("sdk publish failed: " + sent.error().message());
  std::vector<bq::OutgoingMessage> batch(static_cast<std::size_t>(config.batch), bq::OutgoingMessage{queue, body, {}});
  const auto start = Clock::now();
  for (int sent = 1; sent < config.messages; sent += config.batch) {
    const auto count = static_cast<std::size_t>(std::min(config.batch, config.messages - sent));
    if (auto published = transport.publish_batch(std::span(batch.data(), count)); !published) {
      die("sdk publish_batch failed: " + published.error().message());
    }
  }
  return rate(config.messages - 1, Clock::now() - start);
}

void fill(sb::Transport& transport, const std::string& queue, const std::string& body, int messages) {
  std::vector<bq::OutgoingMessage> batch(500, bq::OutgoingMessage{queue, body, {}});
  for (int sent = 0; sent < messages; sent += 500) {
    const auto count = static_cast<std::size_t>(std::min(500, messages - sent));
    if (auto published = transport.publish_batch(std::span(batch.data(), count)); !published) {
      die("fill failed: " + published.error().message());
    }
  }
}

// threads loop receive() + ack_batch() on one transport, taking 16 / threads
// per receive.
double sdk_consume(int messages, sb::Transport& transport, const std::string& queue, int threads) {
  std::atomic<int> consumed{0};
  std::atomic<Clock::rep> end{0};
  const auto start = Clock::now();
  const std::size_t take = static_cast<std::size_t>(std::max(1, 16 / threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (consumed.load() < messages) {
        auto batch = transport.receive(queue, take, std::chrono::milliseconds(200));
        if (!batch) die("sdk receive failed: " + batch.error().message());
        if (batch->empty()) continue;
        if (auto acked = transport.ack_batch(*batch); !acked) die("sdk ack failed: " + acked.error().message());
        const int before = consumed.fetch_add(static_cast<int>(batch->size()));
        if (before < messages && before + static_cast<int>(batch->size()) >= messages) {
          end.store(Clock::now().time_since_epoch().count());
        }
      }
    });
  }
  for (auto& worker : workers) worker.join();
  return rate(messages, Clock::time_point(Clock::duration(end.load())) - start);
}

// A Worker with `concurrency` handler threads and its default prefetch, a
// no-op handler, every message completed.
double worker_consume(int messages, sb::Transport& transport, const std::string& queue, std::size_t concurrency) {
  bq::WorkerOptions options;
  options.concurrency = concurrency;
  options.log = {};
  bq::Worker worker(transport, options);
  std::atomic<int> handled{0};
  worker.handle("urn:bench:orders:created", [&](const bq::Message&) { ++handled; });
  bq::RunLimits limits;
  limits.max_messages = static_cast<std::size_t>(messages);
  const auto start = Clock::now();
  auto summary = worker.run({queue}, limits);
  const double result = rate(messages, Clock::now() - start);
  if (!summary) die("worker run failed: " + summary.error().message());
  if (handled.load() != messages) die("the worker handled " + std::to_string(handled.load()) + " messages");
  return result;
}

std::unique_ptr<sb::Transport> open_sdk(const sb::Options& options) {
  auto transport = sb::Transport::open(options);
  if (!transport) die("cannot open the transport: " + transport.error().message());
  return std::move(*transport);
}

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

}  // namespace

int main(int argc, char** argv) {
  Config config;
  const char* env = std::getenv("BABELQUEUE_URL");
  config.url = env != nullptr && *env != '\0' ? env : "sb://";
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
    } else if (flag == "--only") {
      config.only = value;
    } else {
      die("unknown option " + flag + " (use --url, --messages, --batch, --rounds, --only)");
    }
  }
  if (config.messages < 2 || config.batch <= 0 || config.rounds <= 0) {
    die("--messages must be at least 2, --batch and --rounds positive");
  }
  auto url = bq::Url::parse(config.url);
  if (!url) die(url.error().message());
  auto options = sb::Transport::options_from_url(*url);
  if (!options) die(options.error().message());
  options->log = {};
  const char* text = std::getenv(sb::kConnectionStringVariable);
  if (text == nullptr) die(std::string("set ") + sb::kConnectionStringVariable);
  auto cs = sb::ConnectionString::parse(text);
  if (!cs) die(cs.error().message());
  if (!cs->use_development_emulator || cs->key.empty()) {
    die("the benchmark compares plain AMQP loops: use a connection string with a SharedAccessKey and "
        "UseDevelopmentEmulator=true");
  }
  const Endpoint endpoint{"amqp://" + cs->host + ":" + std::to_string(cs->port.value_or(5672)), cs->authority,
                          cs->key_name, cs->key};

  bq::MakeOptions make;
  make.queue = "bench";
  auto envelope = bq::Envelope::make(
      "urn:bench:orders:created", bq::Value::object({{"order_id", 1042}, {"customer", "c-7"}, {"total", 99.5}}), make);
  if (!envelope) die("cannot make the envelope: " + envelope.error().message());
  const std::string body(envelope->body());
  const proton::message raw = raw_message(*envelope);
  if (raw.encode() != sb::make_message(body, {}).encode()) {
    die("the raw loop's message differs from the SDK's: the comparison would not be like with like");
  }
  const std::string run = bq::uuid_v4().substr(0, 8);
  std::printf(
      "Service Bus benchmark: %d messages of %zu bytes (%zu encoded), publish batch %d, prefetch %u, median "
      "of %d rounds, %s\n",
      config.messages, body.size(), raw.encode().size(), config.batch, options->prefetch, config.rounds,
      url->redacted().c_str());
  std::fflush(stdout);
  const std::string start_load = load_average();

  auto transport = open_sdk(*options);
  std::vector<double> raw_pubs, sdk_pubs, raw_c1s, sdk_c1s, raw_c4s, sdk_c4s, worker_c1s, worker_c4s;
  auto wanted = [&config](std::string_view group, std::string_view name) {
    return config.only.empty() || config.only == group || config.only == name;
  };
  const int credit = static_cast<int>(options->prefetch);
  for (int round = 0; round < config.rounds; ++round) {
    const std::string tag = run + "-" + std::to_string(round);
    auto queue = [&tag](const char* role) { return std::string("bench-") + role + "-" + tag; };
    auto filled = [&](const char* role, int messages) {
      const std::string name = queue(role);
      fill(*transport, name, body, messages);
      return name;
    };
    auto with_sdk = [&](const std::string& name, auto&& measure) {
      auto sdk = open_sdk(*options);
      const double result = measure(*sdk, name);
      sdk->close();
      return result;
    };
    auto in_turn = [round](std::vector<std::function<void()>> steps) {
      for (std::size_t i = 0; i < steps.size(); ++i) steps[(i + static_cast<std::size_t>(round)) % steps.size()]();
    };
    auto drain = [&](const std::string& name, int messages) {
      RawConsumers(endpoint, name, messages, 1, credit).run();
    };

    {
      std::vector<std::function<void()>> steps;
      if (wanted("publish", "raw-publish")) {
        steps.emplace_back([&] {
          const std::string name = queue("raw-pub");
          raw_pubs.push_back(RawPublisher(endpoint, name, raw, config.messages, config.batch).run());
          drain(name, config.messages);
        });
      }
      if (wanted("publish", "sdk-publish")) {
        steps.emplace_back([&] {
          const std::string name = queue("sdk-pub");
          sdk_pubs.push_back(sdk_publish(config, *transport, name, body));
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
      std::vector<std::function<void()>> steps;
      if (wanted(group, raw_name)) {
        steps.emplace_back([&, name = filled(raw_name, config.messages)] {
          (c1 ? raw_c1s : raw_c4s).push_back(RawConsumers(endpoint, name, config.messages, threads, credit).run());
        });
      }
      if (wanted(group, sdk_name)) {
        steps.emplace_back([&, name = filled(sdk_name, config.messages)] {
          (c1 ? sdk_c1s : sdk_c4s).push_back(with_sdk(name, [&](sb::Transport& sdk, const std::string& q) {
            return sdk_consume(config.messages, sdk, q, threads);
          }));
        });
      }
      if (wanted(group, worker_name)) {
        steps.emplace_back([&, name = filled(worker_name, config.messages)] {
          (c1 ? worker_c1s : worker_c4s).push_back(with_sdk(name, [&](sb::Transport& sdk, const std::string& q) {
            return worker_consume(config.messages, sdk, q, static_cast<std::size_t>(threads));
          }));
        });
      }
      in_turn(std::move(steps));
    }
    auto last = [](const std::vector<double>& values) { return values.empty() ? 0.0 : values.back(); };
    std::fprintf(stderr,
                 "round %d: publish raw %.0f sdk %.0f | c1 raw %.0f sdk %.0f worker %.0f | c4 raw %.0f sdk %.0f "
                 "worker %.0f\n",
                 round + 1, last(raw_pubs), last(sdk_pubs), last(raw_c1s), last(sdk_c1s), last(worker_c1s),
                 last(raw_c4s), last(sdk_c4s), last(worker_c4s));
  }
  transport->close();

  const double raw_pub = median(raw_pubs), sdk_pub = median(sdk_pubs);
  const double raw_c1 = median(raw_c1s), sdk_c1 = median(sdk_c1s), worker_c1 = median(worker_c1s);
  const double raw_c4 = median(raw_c4s), sdk_c4 = median(sdk_c4s), worker_c4 = median(worker_c4s);
  std::printf("\n");
  line("raw proton publish (batched, unsettled)", raw_pub);
  line("SDK publish_batch", sdk_pub);
  line("raw proton receive+complete, 1 receiver", raw_c1);
  line("SDK receive+ack_batch, concurrency 1", sdk_c1);
  line("SDK Worker consume+complete, concurrency 1", worker_c1);
  line("raw proton receive+complete, 4 receivers", raw_c4);
  line("SDK receive+ack_batch, concurrency 4", sdk_c4);
  line("SDK Worker consume+complete, concurrency 4", worker_c4);
  std::printf("\n");
  ratio("SDK / raw publish", sdk_pub / raw_pub, 0.9);
  ratio("SDK / raw consume+complete, concurrency 1", sdk_c1 / raw_c1, 0.9);
  ratio("SDK Worker / raw consume+complete, concurrency 1", worker_c1 / raw_c1, 0.9);
  ratio("SDK / raw consume+complete, concurrency 4", sdk_c4 / raw_c4, 0.9);
  ratio("SDK Worker / raw consume+complete, concurrency 4", worker_c4 / raw_c4, 0.9);
  std::printf("load average: %s at the start, %s at the end\n", start_load.c_str(), load_average().c_str());
  return 0;
}
