// SPDX-License-Identifier: Apache-2.0
// RabbitMQ throughput: the SDK against raw rabbitmq-c loops doing the same
// work on the same broker, in one run, with the ratios.
//
//   publish   confirmed, persistent, in batches: raw basic.publish x batch then
//             wait for the confirms  vs  rabbitmq::Transport::publish_batch
//   consume   basic.consume + basic.ack per message, with 1 and 4 consumers
//             (raw: one connection per consumer thread, same QoS)  vs  one
//             transport with 1 and 4 threads looping receive() + ack()
//   basic.get a raw basic.get + ack loop: the Go SDK's consume pattern
//   ceiling   a raw basic.consume loop that acks 16 deliveries at a time
//             (multiple=1) and does nothing else: about the most this broker
//             and machine deliver from one queue, a bound for the others
//
// Usage: babelqueue_bench_rabbitmq [--url URL] [--messages N] [--batch N] [--rounds N] [--only NAME]
// (--only runs one measurement, for profiling: publish, raw-c1, sdk-c1,
// raw-c4, sdk-c4, raw-get, worker-c4 or ceiling)
// (URL default: $BABELQUEUE_URL, else amqp://guest:guest@127.0.0.1:5672/%2F).
// Each round runs every measurement once, raw and SDK interleaved; the
// figures are the medians over the rounds (a shared machine is noisy).
#include "../../src/rabbitmq/consumers.hpp"
#include "../support/bench_report.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/worker.hpp>

#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bq = babelqueue;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string url;
  int messages = 20000;
  int batch = 100;
  int rounds = 3;
  std::string only;  // one measurement; empty: all
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "babelqueue_bench_rabbitmq: %s\n", why.c_str());
  std::exit(1);
}

amqp_bytes_t bytes(const std::string& text) {
  amqp_bytes_t b;
  b.len = text.size();
  b.bytes = const_cast<char*>(text.data());  // NOLINT: rabbitmq-c never writes through it
  return b;
}

void check(amqp_connection_state_t conn, const char* what) {
  if (amqp_get_rpc_reply(conn).reply_type != AMQP_RESPONSE_NORMAL) die(std::string("raw ") + what + " failed");
}

// A raw connection with channel 1 open.
amqp_connection_state_t raw_connect(const bq::rabbitmq::Transport::Options& options) {
  amqp_connection_state_t conn = amqp_new_connection();
  amqp_socket_t* socket = amqp_tcp_socket_new(conn);
  if (amqp_socket_open(socket, options.host.c_str(), options.port) != AMQP_STATUS_OK) die("raw connect failed");
  if (amqp_login(conn, options.vhost.c_str(), 0, AMQP_DEFAULT_FRAME_SIZE, 30, AMQP_SASL_METHOD_PLAIN,
                 options.user.c_str(), options.password.c_str())
          .reply_type != AMQP_RESPONSE_NORMAL) {
    die("raw login failed");
  }
  amqp_channel_open(conn, 1);
  check(conn, "channel.open");
  return conn;
}

void raw_close(amqp_connection_state_t conn) {
  amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(conn);
}

void raw_declare(amqp_connection_state_t conn, const std::string& queue) {
  amqp_queue_declare(conn, 1, bytes(queue), 0, 1, 0, 0, amqp_empty_table);
  check(conn, "queue.declare");
}

// The properties the SDK sends for the bench body, built by hand.
struct RawProperties {
  std::string type, correlation_id, message_id, lang;
  amqp_table_entry_t entries[3]{};
  amqp_basic_properties_t props{};

  explicit RawProperties(const bq::Envelope& envelope)
      : type(envelope.urn()), correlation_id(envelope.trace_id()), message_id(envelope.id()), lang(envelope.lang()) {
    entries[0].key = amqp_cstring_bytes("x-schema-version");
    entries[0].value.kind = AMQP_FIELD_KIND_I32;
    entries[0].value.value.i32 = 1;
    entries[1].key = amqp_cstring_bytes("x-source-lang");
    entries[1].value.kind = AMQP_FIELD_KIND_UTF8;
    entries[1].value.value.bytes = bytes(lang);
    entries[2].key = amqp_cstring_bytes("x-attempts");
    entries[2].value.kind = AMQP_FIELD_KIND_I32;
    entries[2].value.value.i32 = 0;
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CONTENT_ENCODING_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                   AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
                   AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
    props.content_type = amqp_cstring_bytes("application/json");
    props.content_encoding = amqp_cstring_bytes("utf-8");
    props.delivery_mode = 2;
    props.app_id = amqp_cstring_bytes("babelqueue");
    props.type = bytes(type);
    props.correlation_id = bytes(correlation_id);
    props.message_id = bytes(message_id);
    props.headers.num_entries = 3;
    props.headers.entries = entries;
  }
};

double rate(int messages, Clock::duration elapsed) { return messages / std::chrono::duration<double>(elapsed).count(); }

double raw_confirmed_publish(const Config& config, const bq::rabbitmq::Transport::Options& options,
                             const std::string& queue, const std::string& body) {
  amqp_connection_state_t conn = raw_connect(options);
  raw_declare(conn, queue);
  amqp_confirm_select(conn, 1);
  check(conn, "confirm.select");
  auto envelope = bq::Envelope::decode(body);
  RawProperties properties(*envelope);
  std::uint64_t published = 0;
  const auto start = Clock::now();
  for (int sent = 0; sent < config.messages; sent += config.batch) {
    const int count = std::min(config.batch, config.messages - sent);
    for (int i = 0; i < count; ++i) {
      if (amqp_basic_publish(conn, 1, amqp_empty_bytes, bytes(queue), 1, 0, &properties.props, bytes(body)) !=
          AMQP_STATUS_OK) {
        die("raw publish failed");
      }
    }
    published += static_cast<std::uint64_t>(count);
    std::uint64_t confirmed = 0;
    while (confirmed < published) {
      amqp_frame_t frame;
      if (amqp_simple_wait_frame(conn, &frame) != AMQP_STATUS_OK) die("raw wait_frame failed");
      if (frame.frame_type != AMQP_FRAME_METHOD) continue;
      if (frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
        const auto* ack = static_cast<const amqp_basic_ack_t*>(frame.payload.method.decoded);
        confirmed = std::max<std::uint64_t>(confirmed, ack->delivery_tag);
      } else if (frame.payload.method.id == AMQP_BASIC_NACK_METHOD) {
        die("raw publish nacked");
      }
    }
    amqp_maybe_release_buffers(conn);
  }
  const double result = rate(config.messages, Clock::now() - start);
  raw_close(conn);
  return result;
}

double sdk_confirmed_publish(const Config& config, bq::rabbitmq::Transport& transport, const std::string& queue,
                             const std::string& body) {
  std::vector<bq::OutgoingMessage> batch(static_cast<std::size_t>(config.batch), bq::OutgoingMessage{queue, body, {}});
  if (!transport.publish(queue, body)) die("sdk publish failed");  // declares the queue, outside the clock
  const auto start = Clock::now();
  for (int sent = 1; sent < config.messages + 1; sent += config.batch) {
    const auto count = static_cast<std::size_t>(std::min(config.batch, config.messages + 1 - sent));
    if (auto published = transport.publish_batch(std::span(batch.data(), count)); !published) {
      die("sdk publish_batch failed: " + published.error().message());
    }
  }
  return rate(config.messages, Clock::now() - start);
}

void fill(bq::rabbitmq::Transport& transport, const std::string& queue, const std::string& body, int messages) {
  std::vector<bq::OutgoingMessage> batch(500, bq::OutgoingMessage{queue, body, {}});
  for (int sent = 0; sent < messages; sent += 500) {
    const auto count = static_cast<std::size_t>(std::min(500, messages - sent));
    if (!transport.publish_batch(std::span(batch.data(), count))) die("fill failed");
  }
}

// One raw basic.consume consumer per thread, each on its own connection,
// acking every delivery (ack_every 1) or every ack_every-th one with
// multiple=1 (and what is left whenever the queue runs dry).
double raw_consume(const Config& config, const bq::rabbitmq::Transport::Options& options, const std::string& queue,
                   int threads, std::uint16_t prefetch, int ack_every = 1) {
  std::atomic<int> consumed{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      amqp_connection_state_t conn = raw_connect(options);
      amqp_basic_qos(conn, 1, 0, prefetch, 0);
      check(conn, "basic.qos");
      ++ready;
      while (!go.load()) std::this_thread::yield();
      amqp_basic_consume(conn, 1, bytes(queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
      check(conn, "basic.consume");
      const timeval timeout{0, 200000};
      int unacked = 0;
      std::uint64_t last_tag = 0;
      while (consumed.load() < config.messages) {
        amqp_envelope_t envelope;
        amqp_maybe_release_buffers(conn);
        timeval wait = timeout;
        const amqp_rpc_reply_t reply = amqp_consume_message(conn, &envelope, &wait, 0);
        if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
          if (reply.library_error != AMQP_STATUS_TIMEOUT) die("raw consume failed");
          if (unacked > 0) amqp_basic_ack(conn, 1, last_tag, 1);
          unacked = 0;
          continue;
        }
        last_tag = envelope.delivery_tag;
        amqp_destroy_envelope(&envelope);
        if (++unacked >= ack_every) {
          amqp_basic_ack(conn, 1, last_tag, ack_every > 1 ? 1 : 0);
          unacked = 0;
        }
        ++consumed;
      }
      if (unacked > 0) amqp_basic_ack(conn, 1, last_tag, 1);
      raw_close(conn);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = Clock::now();
  go = true;
  for (auto& worker : workers) worker.join();
  return rate(config.messages, Clock::now() - start);
}

double raw_get(const Config& config, const bq::rabbitmq::Transport::Options& options, const std::string& queue) {
  amqp_connection_state_t conn = raw_connect(options);
  const auto start = Clock::now();
  for (int i = 0; i < config.messages; ++i) {
    amqp_maybe_release_buffers(conn);
    const amqp_rpc_reply_t reply = amqp_basic_get(conn, 1, bytes(queue), 0);
    if (reply.reply_type != AMQP_RESPONSE_NORMAL) die("raw basic.get failed");
    if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) die("raw basic.get: queue empty early");
    const auto tag = static_cast<const amqp_basic_get_ok_t*>(reply.reply.decoded)->delivery_tag;
    amqp_message_t message;
    if (amqp_read_message(conn, 1, &message, 0).reply_type != AMQP_RESPONSE_NORMAL) die("raw read failed");
    amqp_destroy_message(&message);
    amqp_basic_ack(conn, 1, tag, 0);
  }
  const double result = rate(config.messages, Clock::now() - start);
  raw_close(conn);
  return result;
}

// threads loop receive() + ack on one transport, taking 16 / threads per
// receive: one batch of 16 shared by the threads, as a Worker's default
// prefetch of 16 is shared by its handler threads.
double sdk_consume(const Config& config, bq::rabbitmq::Transport& transport, const std::string& queue, int threads) {
  std::atomic<int> consumed{0};
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (consumed.load() < config.messages) {
        auto batch = transport.receive(queue, static_cast<std::size_t>(16 / threads), std::chrono::milliseconds(200));
        if (!batch) die("sdk receive failed: " + batch.error().message());
        for (const bq::Delivery& delivery : *batch) {
          if (!transport.ack(delivery)) die("sdk ack failed");
        }
        consumed += static_cast<int>(batch->size());
      }
    });
  }
  for (auto& worker : workers) worker.join();
  return rate(config.messages, Clock::now() - start);
}

// What an application runs: a Worker with `concurrency` handler threads and
// its default prefetch, a no-op handler, every message acked.
double worker_consume(const Config& config, bq::rabbitmq::Transport& transport, const std::string& queue,
                      std::size_t concurrency) {
  bq::WorkerOptions options;
  options.concurrency = concurrency;
  bq::Worker worker(transport, options);
  std::atomic<int> handled{0};
  worker.handle("urn:bench:orders:created", [&](const bq::Message&) { ++handled; });
  const auto start = Clock::now();
  bq::RunLimits limits;
  limits.max_messages = static_cast<std::size_t>(config.messages);
  auto summary = worker.run({queue}, limits);
  const double result = rate(config.messages, Clock::now() - start);
  if (!summary) die("worker run failed: " + summary.error().message());
  if (handled.load() != config.messages) die("the worker handled " + std::to_string(handled.load()) + " messages");
  return result;
}

std::unique_ptr<bq::rabbitmq::Transport> open_sdk(const bq::rabbitmq::Transport::Options& options) {
  auto transport = bq::rabbitmq::Transport::open(options);
  if (!transport) die("cannot open the transport: " + transport.error().message());
  return std::move(*transport);
}

using babelqueue::bench::line;
using babelqueue::bench::median;
using babelqueue::bench::ratio;

}  // namespace

int main(int argc, char** argv) {
  Config config;
  const char* env = std::getenv("BABELQUEUE_URL");
  config.url = env != nullptr && *env != '\0' ? env : "amqp://guest:guest@127.0.0.1:5672/%2F";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--url") {
      config.url = argv[i + 1];
    } else if (flag == "--messages") {
      config.messages = std::atoi(argv[i + 1]);
    } else if (flag == "--batch") {
      config.batch = std::atoi(argv[i + 1]);
    } else if (flag == "--rounds") {
      config.rounds = std::atoi(argv[i + 1]);
    } else if (flag == "--only") {
      config.only = argv[i + 1];
    } else {
      die("unknown option " + flag + " (use --url, --messages, --batch, --rounds, --only)");
    }
  }
  if (config.messages <= 0 || config.batch <= 0 || config.rounds <= 0) {
    die("--messages, --batch and --rounds must be positive");
  }
  auto url = bq::Url::parse(config.url);
  if (!url) die(url.error().message());
  auto options = bq::rabbitmq::Transport::options_from_url(*url);
  if (!options) die(options.error().message());
  if (options->tls.enabled) die("the benchmark compares plain TCP loops: use an amqp:// URL");

  bq::MakeOptions make;
  make.queue = "bench";
  auto envelope = bq::Envelope::make(
      "urn:bench:orders:created", bq::Value::object({{"order_id", 1042}, {"customer", "c-7"}, {"total", 99.5}}), make);
  const std::string body(envelope->body());
  const std::string run = bq::uuid_v4().substr(0, 8);
  std::printf("RabbitMQ benchmark: %d messages of %zu bytes, publish batch %d, median of %d rounds, %s\n",
              config.messages, body.size(), config.batch, config.rounds, url->redacted().c_str());

  auto transport = open_sdk(*options);
  std::vector<double> raw_pubs, sdk_pubs, raw_c1s, raw_c4s, sdk_c1s, sdk_c4s, worker_c4s, gets, ceilings;
  std::vector<std::string> queues;
  for (int round = 0; round < config.rounds; ++round) {
    const std::string tag = run + "-" + std::to_string(round);
    auto wanted = [&config](std::string_view name) { return config.only.empty() || config.only == name; };
    if (wanted("publish")) {
      queues.push_back("bench-raw-pub-" + tag);
      raw_pubs.push_back(raw_confirmed_publish(config, *options, queues.back(), body));
      queues.push_back("bench-sdk-pub-" + tag);
      sdk_pubs.push_back(sdk_confirmed_publish(config, *transport, queues.back(), body));
    }

    // The consume figures read queues filled beforehand (outside the clock).
    // The QoS the SDK's consumers get: the URL's prefetch, else its auto
    // value (the first receive asks for 16 / threads: 128 either way).
    const std::uint16_t prefetch = options->prefetch != 0 ? options->prefetch : bq::rabbitmq::detail::auto_prefetch(16);
    auto filled = [&](const char* role) {
      queues.push_back(std::string("bench-") + role + "-" + tag);
      fill(*transport, queues.back(), body, config.messages);
      return queues.back();
    };
    if (wanted("raw-c1")) raw_c1s.push_back(raw_consume(config, *options, filled("raw-c1"), 1, prefetch));
    // A fresh transport per SDK measurement, closed (its consumer cancelled) after it.
    auto with_sdk = [&](const char* role, auto&& measure) {
      const std::string queue = filled(role);
      auto sdk = open_sdk(*options);
      const double result = measure(*sdk, queue);
      sdk->close();
      return result;
    };
    auto sdk_threads = [&](int threads) {
      return [&config, threads](bq::rabbitmq::Transport& sdk, const std::string& queue) {
        return sdk_consume(config, sdk, queue, threads);
      };
    };
    if (wanted("sdk-c1")) sdk_c1s.push_back(with_sdk("sdk-c1", sdk_threads(1)));
    if (wanted("raw-c4")) raw_c4s.push_back(raw_consume(config, *options, filled("raw-c4"), 4, prefetch));
    if (wanted("sdk-c4")) sdk_c4s.push_back(with_sdk("sdk-c4", sdk_threads(4)));
    if (wanted("raw-get")) gets.push_back(raw_get(config, *options, filled("raw-get")));
    if (wanted("worker-c4")) {
      worker_c4s.push_back(with_sdk("worker-c4", [&config](bq::rabbitmq::Transport& sdk, const std::string& queue) {
        return worker_consume(config, sdk, queue, 4);
      }));
    }
    if (wanted("ceiling")) ceilings.push_back(raw_consume(config, *options, filled("ceiling"), 1, prefetch, 16));
    auto last = [](const std::vector<double>& values) { return values.empty() ? 0.0 : values.back(); };
    std::fprintf(stderr,
                 "round %d: publish raw %.0f sdk %.0f | c1 raw %.0f sdk %.0f | c4 raw %.0f sdk %.0f worker %.0f | get "
                 "%.0f | ceiling %.0f\n",
                 round + 1, last(raw_pubs), last(sdk_pubs), last(raw_c1s), last(sdk_c1s), last(raw_c4s), last(sdk_c4s),
                 last(worker_c4s), last(gets), last(ceilings));
  }
  const double raw_pub = median(raw_pubs);
  const double sdk_pub = median(sdk_pubs);
  const double raw_c1 = median(raw_c1s);
  const double sdk_c1 = median(sdk_c1s);
  const double raw_c4 = median(raw_c4s);
  const double sdk_c4 = median(sdk_c4s);
  const double get = median(gets);
  const double worker_c4 = median(worker_c4s);
  const double ceiling = median(ceilings);

  std::printf("\n");
  line("raw confirmed publish (batched)", raw_pub);
  line("SDK confirmed publish (publish_batch)", sdk_pub);
  line("raw basic.consume+ack, 1 consumer", raw_c1);
  line("SDK receive+ack, concurrency 1", sdk_c1);
  line("raw basic.consume+ack, 4 consumers", raw_c4);
  line("SDK receive+ack, concurrency 4", sdk_c4);
  line("SDK Worker consume+ack, concurrency 4", worker_c4);
  line("raw basic.get+ack (the Go SDK's pattern)", get);
  line("raw consume, multiple ack per 16 (ceiling)", ceiling);
  std::printf("\n");
  ratio("SDK / raw confirmed publish", sdk_pub / raw_pub, 0.9);
  ratio("SDK / raw consume+ack, concurrency 1", sdk_c1 / raw_c1, 0.9);
  ratio("SDK / raw consume+ack, concurrency 4", sdk_c4 / raw_c4, 0.9);
  ratio("SDK consume+ack c4 / raw basic.get+ack", sdk_c4 / get, 5.0);
  ratio("SDK Worker c4 / raw basic.get+ack", worker_c4 / get, 5.0);
  // Not a target: how far the broker itself lets consume+ack outrun
  // basic.get here. Below 5, no client reaches the 5x target on this machine.
  if (ceiling > 0 && get > 0) {
    std::printf("%-48s %9.2fx  (the bound for the two lines above)\n", "raw ceiling / raw basic.get+ack",
                ceiling / get);
  }

  // Leave nothing behind.
  amqp_connection_state_t conn = raw_connect(*options);
  for (const std::string& queue : queues) amqp_queue_delete(conn, 1, bytes(queue), 0, 0);
  raw_close(conn);
  return 0;
}
