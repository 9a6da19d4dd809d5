// SPDX-License-Identifier: Apache-2.0
// bench: publish N envelopes, consume them with a Worker, report rates and
// latencies as one JSON line.
#include "commands.hpp"
#include "option_checks.hpp"
#include "support.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/worker.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>

namespace babelqueue::cli {

namespace {

constexpr std::string_view kBenchUrn = "urn:babelqueue:bench";
constexpr std::size_t kChunk = 500;

struct BenchArgs {
  std::string queue;
  std::size_t messages = 1000;
  std::size_t size = 256;
  std::size_t concurrency = 1;
  bool json = false;
};

double per_second(std::size_t count, std::chrono::steady_clock::duration elapsed) {
  const double s = std::chrono::duration<double>(elapsed).count();
  return s > 0 ? std::round(static_cast<double>(count) / s * 10.0) / 10.0 : 0.0;
}

double round_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }

// The nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

double now_unix_ms() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double, std::milli>(now).count();
}

// data = {"seq":N,"payload":"xxx..."}, about size bytes of JSON.
Value bench_data(std::size_t seq, std::size_t payload_length) {
  Object data;
  data.set("seq", static_cast<std::int64_t>(seq));
  data.set("payload", std::string(payload_length, 'x'));
  return Value(std::move(data));
}

int run_bench(const GlobalOptions& global, const BenchArgs& args) {
  const auto url = Url::parse(global.url);
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  if (auto stats = transport->stats(args.queue); stats) {
    const std::int64_t waiting = std::max<std::int64_t>(stats->ready, 0) + std::max<std::int64_t>(stats->reserved, 0) +
                                 std::max<std::int64_t>(stats->delayed, 0);
    if (waiting > 0) {
      return fail("bench: the queue " + args.queue + " holds " + std::to_string(waiting) +
                  " messages; bench needs an empty queue");
    }
  }
  auto empty_json = to_json(bench_data(args.messages, 0));
  if (!empty_json) return fail(empty_json.error().message());
  const std::size_t payload_length = args.size > empty_json->size() ? args.size - empty_json->size() : 0;

  // Publishing, in batches; each batch's envelopes are made just before it
  // goes, so meta.created_at is the publish time.
  std::atomic<std::size_t> published{0};
  std::atomic<std::size_t> consumed{0};
  std::atomic<int> phase{0};
  Progress progress(StdoutUse::at_the_end, [&] {
    return phase.load() == 0
               ? "bench: published " + std::to_string(published.load()) + "/" + std::to_string(args.messages)
               : "bench: consumed " + std::to_string(consumed.load()) + "/" + std::to_string(args.messages);
  });
  MakeOptions make;
  make.queue = args.queue;
  std::vector<OutgoingMessage> batch;
  batch.reserve(kChunk);
  const auto publish_start = std::chrono::steady_clock::now();
  for (std::size_t first = 0; first < args.messages; first += kChunk) {
    batch.clear();
    const std::size_t count = std::min(kChunk, args.messages - first);
    for (std::size_t i = first; i < first + count; ++i) {
      auto env = Envelope::make(kBenchUrn, bench_data(i, payload_length), make);
      if (!env) return fail(env.error().message());
      batch.push_back(OutgoingMessage{args.queue, std::string(env->body()), {}});
    }
    if (auto r = transport->publish_batch(batch); !r) {
      return fail("bench: publishing failed after " + std::to_string(first) + " messages: " + r.error().message());
    }
    published += count;
  }
  const auto publish_elapsed = std::chrono::steady_clock::now() - publish_start;

  // Consuming.
  phase = 1;
  std::mutex latencies_mutex;
  std::vector<double> latencies;
  latencies.reserve(args.messages);
  WorkerOptions options;
  options.default_queue = args.queue;
  options.concurrency = args.concurrency;
  options.poll_timeout = std::chrono::milliseconds(200);
  options.log = [](LogLevel level, std::string_view message) {
    if (level >= LogLevel::warning)
      Console::instance().line("babelqueue " + std::string(to_string(level)) + ": " + std::string(message));
  };
  Worker worker(*transport, std::move(options));
  worker.handle(std::string(kBenchUrn), [&](const Message& message) {
    const double latency = now_unix_ms() - static_cast<double>(message.envelope().created_at().value_or(0));
    {
      std::lock_guard lock(latencies_mutex);
      latencies.push_back(latency);
    }
    ++consumed;
  });
  RunLimits limits;
  limits.max_messages = args.messages;
  limits.idle_exit = std::chrono::seconds(5);  // in case messages went missing
  const auto consume_start = std::chrono::steady_clock::now();
  auto summary = worker.run({args.queue}, limits);
  const auto consume_elapsed = std::chrono::steady_clock::now() - consume_start;
  transport->close();
  progress.finish();
  if (!summary) return fail("bench: consuming failed: " + summary.error().message());

  std::sort(latencies.begin(), latencies.end());
  Object latency;
  latency.set("p50", round_ms(percentile(latencies, 0.50)));
  latency.set("p90", round_ms(percentile(latencies, 0.90)));
  latency.set("p99", round_ms(percentile(latencies, 0.99)));
  latency.set("max", round_ms(latencies.empty() ? 0.0 : latencies.back()));
  Object out;
  out.set("transport", url ? url->scheme : std::string());
  out.set("messages", static_cast<std::int64_t>(args.messages));
  out.set("size", static_cast<std::int64_t>(args.size));
  out.set("concurrency", static_cast<std::int64_t>(args.concurrency));
  out.set("publish_msgs_per_s", per_second(args.messages, publish_elapsed));
  out.set("consume_msgs_per_s", per_second(consumed.load(), consume_elapsed));
  out.set("latency_ms", Value(std::move(latency)));
  if (args.json) {
    if (print_json_line(Value(std::move(out))) != kExitOk) return kExitFailure;
  } else {
    const auto ms = [](double value) {
      std::ostringstream text;
      text << std::fixed << std::setprecision(1) << value << " ms";
      return text.str();
    };
    std::cout << "bench " << (url ? url->scheme : std::string("?")) << "://: " << args.messages << " messages of about "
              << args.size << " bytes, " << args.concurrency << " handler thread" << (args.concurrency == 1 ? "" : "s")
              << "\n"
              << std::fixed << std::setprecision(0) << "  publish  " << per_second(args.messages, publish_elapsed)
              << " msg/s\n"
              << "  consume  " << per_second(consumed.load(), consume_elapsed) << " msg/s\n"
              << "  latency  p50 " << ms(percentile(latencies, 0.50)) << ", p90 " << ms(percentile(latencies, 0.90))
              << ", p99 " << ms(percentile(latencies, 0.99)) << ", max "
              << ms(latencies.empty() ? 0.0 : latencies.back()) << "\n";
    std::cout.flush();
  }
  if (consumed.load() != args.messages) {
    return fail("bench: consumed " + std::to_string(consumed.load()) + " of " + std::to_string(args.messages) +
                " messages");
  }
  return kExitOk;
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action, const GlobalOptions& global) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* bench =
      app.add_subcommand("bench", "Publish N envelopes to an empty QUEUE, consume them, print rates and latencies");
  bench->add_option("QUEUE", args->queue, "An empty queue to benchmark on")->required();
  bench->add_option("--messages", args->messages, "How many envelopes")
      ->check(whole_number(1))
      ->capture_default_str()
      ->type_name("N");
  bench->add_option("--size", args->size, "About how many bytes of data each envelope carries")
      ->check(whole_number(0))
      ->capture_default_str()
      ->type_name("BYTES");
  bench->add_option("--concurrency", args->concurrency, "Handler threads of the consuming worker")
      ->check(whole_number(1))
      ->capture_default_str()
      ->type_name("N");
  bench->add_flag("--json", args->json,
                  "One JSON line: {transport, messages, size, concurrency, publish_msgs_per_s, consume_msgs_per_s, "
                  "latency_ms: {p50, p90, p99, max}}");
  bench->callback([&action, &global, args] { action = [&global, args] { return run_bench(global, *args); }; });
}

}  // namespace babelqueue::cli
