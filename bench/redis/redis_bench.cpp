// SPDX-License-Identifier: Apache-2.0
// Throughput of the Redis transport against raw hiredis loops on the same
// payloads and the same server, in one run (bench/redis/README.md):
//
//   publish, one message per call   SDK publish()       vs raw RPUSH, one round trip each
//   publish, batched                SDK publish_batch() vs raw pipelined RPUSH (same batch size)
//   consume + ack                   SDK Worker, concurrency 1 and 4
//                                   vs raw sequential BLMOVE queue queue:processing + LREM
//
// Usage: babelqueue_bench_redis [--url redis://127.0.0.1:6379/0] [--messages N] [--batch B]
//                               [--repeat R]   runs of every figure, median reported (default 3)
//                               [--check]      exit 1 when a target ratio is missed
// Prints one line per figure, then the ratios and whether each target holds.
#include <babelqueue/envelope.hpp>
#include <babelqueue/redis/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace bq = babelqueue;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct Settings {
  std::string url = "redis://127.0.0.1:6379/0";
  std::size_t messages = 20000;
  std::size_t batch = 100;
  std::size_t repeat = 3;
  bool check = false;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The raw baseline's connection: hiredis's own synchronous client.
class RawRedis {
 public:
  explicit RawRedis(const bq::Url& url)
      : context_(redisConnect(url.host.empty() ? "127.0.0.1" : url.host.c_str(), url.port.value_or(6379)), redisFree) {
    if (!context_ || context_->err != 0) throw std::runtime_error("raw hiredis cannot connect");
    if (!url.password.empty()) {
      if (url.user.empty()) {
        command({"AUTH", url.password});
      } else {
        command({"AUTH", url.user, url.password});
      }
    }
    if (!url.path.empty() && url.path != "0") command({"SELECT", url.path});
  }

  void append(const std::vector<std::string_view>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (std::string_view arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()) !=
        REDIS_OK) {
      throw std::runtime_error("raw hiredis append failed");
    }
  }

  // The next reply; a string reply's text is copied into text when given.
  void reply(std::string* text = nullptr) {
    void* raw = nullptr;
    if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
      throw std::runtime_error("raw hiredis reply failed");
    }
    auto* r = static_cast<redisReply*>(raw);
    if (r->type == REDIS_REPLY_ERROR) {
      const std::string error(r->str, r->len);
      freeReplyObject(raw);
      throw std::runtime_error("raw hiredis: " + error);
    }
    if (text != nullptr) {
      if (r->type == REDIS_REPLY_STRING) {
        text->assign(r->str, r->len);
      } else {
        text->clear();
      }
    }
    freeReplyObject(raw);
  }

  void command(const std::vector<std::string_view>& args, std::string* text = nullptr) {
    append(args);
    reply(text);
  }

 private:
  std::unique_ptr<redisContext, void (*)(redisContext*)> context_;
};

std::vector<std::string> make_payloads(std::size_t count) {
  std::vector<std::string> bodies;
  bodies.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    bq::MakeOptions make;
    make.queue = "bench";
    auto envelope = bq::Envelope::make(
        "urn:bench:order.created",
        bq::Value::object({{"order_id", static_cast<std::int64_t>(i)},
                           {"customer", "c-1042"},
                           {"total", 129.95},
                           {"currency", "EUR"},
                           {"items", bq::Value::array({bq::Value::object({{"sku", "A-1"}, {"qty", 2}}),
                                                       bq::Value::object({{"sku", "B-7"}, {"qty", 1}})})}}),
        make);
    if (!envelope) throw std::runtime_error(envelope.error().message());
    bodies.emplace_back(envelope->body());
  }
  return bodies;
}

struct Figure {
  std::string name;
  double per_second = 0;
};

std::string fresh_queue(const char* role) {
  return std::string("bench-redis-") + role + "-" + bq::uuid_v4().substr(0, 8);
}

// ---- raw baselines ----

Figure raw_single_publish(RawRedis& raw, const std::vector<std::string>& bodies, const std::string& queue) {
  const auto start = Clock::now();
  for (const std::string& body : bodies) raw.command({"RPUSH", queue, body});
  return {"raw RPUSH, one round trip each", static_cast<double>(bodies.size()) / seconds_since(start)};
}

Figure raw_pipelined_publish(RawRedis& raw, const std::vector<std::string>& bodies, const std::string& queue,
                             std::size_t batch) {
  const auto start = Clock::now();
  for (std::size_t first = 0; first < bodies.size(); first += batch) {
    const std::size_t end = std::min(bodies.size(), first + batch);
    for (std::size_t i = first; i < end; ++i) raw.append({"RPUSH", queue, bodies[i]});
    for (std::size_t i = first; i < end; ++i) raw.reply();
  }
  return {"raw pipelined RPUSH, batch " + std::to_string(batch),
          static_cast<double>(bodies.size()) / seconds_since(start)};
}

Figure raw_consume(RawRedis& raw, std::size_t count, const std::string& queue) {
  const std::string processing = queue + ":processing";
  std::string element;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < count; ++i) {
    raw.command({"BLMOVE", queue, processing, "LEFT", "RIGHT", "1"}, &element);
    if (element.empty()) throw std::runtime_error("raw consume: the queue ran dry");
    raw.command({"LREM", processing, "1", element});
  }
  return {"raw BLMOVE + LREM, sequential", static_cast<double>(count) / seconds_since(start)};
}

// ---- the SDK ----

Figure sdk_single_publish(bq::Transport& transport, const std::vector<std::string>& bodies, const std::string& queue) {
  const auto start = Clock::now();
  for (const std::string& body : bodies) {
    if (auto sent = transport.publish(queue, body); !sent) throw std::runtime_error(sent.error().message());
  }
  return {"SDK publish(), one per call", static_cast<double>(bodies.size()) / seconds_since(start)};
}

Figure sdk_batch_publish(bq::Transport& transport, const std::vector<std::string>& bodies, const std::string& queue,
                         std::size_t batch) {
  std::vector<bq::OutgoingMessage> messages(bodies.size());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    messages[i].queue = queue;
    messages[i].body = bodies[i];
  }
  const std::span<const bq::OutgoingMessage> all(messages);
  const auto start = Clock::now();
  for (std::size_t first = 0; first < all.size(); first += batch) {
    auto sent = transport.publish_batch(all.subspan(first, std::min(batch, all.size() - first)));
    if (!sent) throw std::runtime_error(sent.error().message());
  }
  return {"SDK publish_batch(), batch " + std::to_string(batch),
          static_cast<double>(bodies.size()) / seconds_since(start)};
}

Figure sdk_consume(bq::Transport& transport, std::size_t count, const std::string& queue, std::size_t concurrency) {
  bq::WorkerOptions options;
  options.concurrency = concurrency;
  options.poll_timeout = 1s;
  bq::Worker worker(transport, options);
  std::atomic<std::size_t> handled{0};
  worker.handle("urn:bench:order.created", [&](const bq::Message&) { ++handled; });
  const auto start = Clock::now();
  auto summary = worker.run({queue}, {.max_messages = count});
  const double elapsed = seconds_since(start);
  if (!summary) throw std::runtime_error(summary.error().message());
  if (handled.load() != count) {
    throw std::runtime_error("the worker handled " + std::to_string(handled.load()) + " of " + std::to_string(count));
  }
  return {"SDK Worker consume+ack, concurrency " + std::to_string(concurrency), static_cast<double>(count) / elapsed};
}

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--url") {
      settings.url = value();
    } else if (arg == "--messages") {
      settings.messages = std::stoul(value());
    } else if (arg == "--batch") {
      settings.batch = std::stoul(value());
    } else if (arg == "--repeat") {
      settings.repeat = std::stoul(value());
    } else if (arg == "--check") {
      settings.check = true;
    } else {
      throw std::runtime_error(
          "unknown argument " + arg +
          " (usage: babelqueue_bench_redis [--url URL] [--messages N] [--batch B] [--repeat R] [--check])");
    }
  }
  if (settings.messages == 0 || settings.batch == 0 || settings.repeat == 0) {
    throw std::runtime_error("--messages, --batch and --repeat must be positive");
  }
  return settings;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Settings settings = parse(argc, argv);
    auto url = bq::Url::parse(settings.url);
    if (!url || url->scheme != "redis") throw std::runtime_error("--url must be a redis:// URL");
    bq::redis::register_transport();
    auto opened = bq::open_transport(settings.url);
    if (!opened) throw std::runtime_error(opened.error().message());
    bq::Transport& transport = **opened;
    RawRedis raw(*url);
    const std::vector<std::string> bodies = make_payloads(settings.messages);
    std::printf("Redis transport benchmark: %zu messages of %zu bytes, %s\n", bodies.size(), bodies.front().size(),
                url->redacted().c_str());

    // Every figure is measured `repeat` times, the raw loop and the SDK
    // interleaved, and the median is reported: on a shared machine a single
    // run says more about the neighbours than about the code.
    std::vector<std::string> used;
    auto fresh = [&](const char* role) {
      used.push_back(fresh_queue(role));
      return used.back();
    };
    auto filled = [&](const char* role) {
      const std::string queue = fresh(role);
      raw_pipelined_publish(raw, bodies, queue, 1000);
      return queue;
    };
    std::vector<std::vector<Figure>> runs;
    for (std::size_t run = 0; run < settings.repeat; ++run) {
      std::vector<Figure> figures;
      figures.push_back(raw_single_publish(raw, bodies, fresh("raw-publish")));
      figures.push_back(sdk_single_publish(transport, bodies, fresh("sdk-publish")));
      figures.push_back(raw_pipelined_publish(raw, bodies, fresh("raw-batch"), settings.batch));
      figures.push_back(sdk_batch_publish(transport, bodies, fresh("sdk-batch"), settings.batch));
      figures.push_back(raw_consume(raw, bodies.size(), filled("raw-consume")));
      figures.push_back(sdk_consume(transport, bodies.size(), filled("sdk-consume"), 1));
      figures.push_back(sdk_consume(transport, bodies.size(), filled("sdk-consume"), 4));
      for (const std::string& queue : used) raw.command({"DEL", queue, queue + ":processing", queue + ":bq:leases"});
      used.clear();
      std::printf("run %zu/%zu done\n", run + 1, settings.repeat);
      std::fflush(stdout);
      runs.push_back(std::move(figures));
    }
    std::vector<Figure> median;
    for (std::size_t i = 0; i < runs.front().size(); ++i) {
      std::vector<double> values;
      for (const auto& figures : runs) values.push_back(figures[i].per_second);
      std::string all;
      for (double v : values) all += (all.empty() ? "" : ", ") + std::to_string(static_cast<long long>(v));
      std::sort(values.begin(), values.end());
      Figure figure{runs.front()[i].name, values[values.size() / 2]};
      std::printf("%-44s %10.0f msg/s  (median of %zu runs: %s)\n", figure.name.c_str(), figure.per_second,
                  values.size(), all.c_str());
      median.push_back(figure);
    }
    const Figure& raw_single = median[0];
    const Figure& sdk_single = median[1];
    const Figure& raw_batch = median[2];
    const Figure& sdk_batch = median[3];
    const Figure& raw_loop = median[4];
    const Figure& sdk_c1 = median[5];
    const Figure& sdk_c4 = median[6];
    const double publish_ratio = sdk_batch.per_second / raw_batch.per_second;
    const double consume_ratio = sdk_c4.per_second / raw_loop.per_second;
    const bool publish_ok = publish_ratio >= 0.9;
    const bool consume_ok = consume_ratio >= 2.0;
    std::printf("ratio SDK publish() / raw RPUSH:                    %.2f\n",
                sdk_single.per_second / raw_single.per_second);
    std::printf("ratio SDK publish_batch() / raw pipelined RPUSH:    %.2f  (target >= 0.90: %s)\n", publish_ratio,
                publish_ok ? "met" : "MISSED");
    std::printf("ratio SDK consume+ack c1 / raw BLMOVE+LREM:         %.2f\n", sdk_c1.per_second / raw_loop.per_second);
    std::printf("ratio SDK consume+ack c4 / raw BLMOVE+LREM:         %.2f  (target >= 2.00: %s)\n", consume_ratio,
                consume_ok ? "met" : "MISSED");
    return settings.check && !(publish_ok && consume_ok) ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "babelqueue_bench_redis: %s\n", e.what());
    return 2;
  }
}
