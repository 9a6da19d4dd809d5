// SPDX-License-Identifier: Apache-2.0
// What tracing and metrics cost, and what a collector that is down or hangs
// costs (docs/benchmarks.md, "Observability").
//
//   babelqueue_bench_observability overhead [--messages N] [--rounds R] [--only TEXT]
//     A Worker on the memory transport consuming N messages (decode, route,
//     handler, ack; each with a traceparent header, as a traced producer
//     sends it, but for one row without), one handler thread, in each
//     configuration: off, metrics, tracing unsampled, tracing unsampled + metrics, tracing
//     sampled + metrics (spans recorded, then discarded), tracing sampled +
//     metrics exported over OTLP to a local endpoint. The configurations
//     take turns within each round; the median round is reported, with the
//     cost per message and the overhead over "off".
//
//   babelqueue_bench_observability collector [--messages N] [--rounds R]
//     N traced publishes and N traced consumes (2N spans) with the OTLP
//     exporter sending to a local endpoint that answers 200, then to a port
//     where nothing listens (collector stopped), then to a socket that
//     accepts and never answers (collector stalled): the rate of each run,
//     its ratio to the first, the exporter's counts and the process's
//     resident memory.
#include "support/bench_report.hpp"

#include <babelqueue/memory/transport.hpp>
#include <babelqueue/metrics/middleware.hpp>
#include <babelqueue/otel/middleware.hpp>
#include <babelqueue/otel/otlp_exporter.hpp>
#include <babelqueue/worker.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace bq = babelqueue;
namespace otel = babelqueue::otel;
using Clock = std::chrono::steady_clock;

namespace {

// ---- local endpoints --------------------------------------------------------------

// A socket on 127.0.0.1 with the port the kernel gave it.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    auto* raw = reinterpret_cast<sockaddr*>(&address);  // NOLINT: the socket API's cast
    if (::bind(fd, raw, size) != 0 || ::listen(fd, 64) != 0 || ::getsockname(fd, raw, &size) != 0) {
      std::perror("listen");
      std::exit(1);
    }
    port = ntohs(address.sin_port);
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1/traces"; }
};

// A collector that reads each request (headers and Content-Length body) and
// answers 200, on keep-alive connections, one thread per connection.
class AnsweringCollector {
 public:
  AnsweringCollector() {
    thread_ = std::thread([this] {
      for (;;) {
        const int client = ::accept(listener_.fd, nullptr, nullptr);
        if (client < 0) return;  // closed
        std::thread([client] { serve(client); }).detach();
      }
    });
  }
  ~AnsweringCollector() {
    ::shutdown(listener_.fd, SHUT_RDWR);
    ::close(listener_.fd);
    listener_.fd = -1;
    thread_.join();
  }
  std::string url() const { return listener_.url(); }

 private:
  static void serve(int client) {
    std::string buffer;
    char chunk[65536];
    for (;;) {
      const auto end = buffer.find("\r\n\r\n");
      if (end == std::string::npos) {
        const ssize_t n = ::read(client, chunk, sizeof chunk);
        if (n <= 0) break;
        buffer.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      std::size_t length = 0;
      const auto at = buffer.find("Content-Length:");
      if (at != std::string::npos && at < end) length = std::stoul(buffer.substr(at + 15));
      while (buffer.size() < end + 4 + length) {
        const ssize_t n = ::read(client, chunk, sizeof chunk);
        if (n <= 0) {
          ::close(client);
          return;
        }
        buffer.append(chunk, static_cast<std::size_t>(n));
      }
      buffer.erase(0, end + 4 + length);
      static constexpr char kReply[] =
          "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
      if (::write(client, kReply, sizeof kReply - 1) < 0) break;
    }
    ::close(client);
  }
  Listener listener_;
  std::thread thread_;
};

// A port nothing listens on.
std::string stopped_url() {
  Listener gone;
  return gone.url();  // closed when it goes out of scope
}

std::size_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

// ---- the worker under test --------------------------------------------------------

// Records nothing: a sampled span's cost without an export.
class DiscardingSink final : public otel::SpanSink {
 public:
  void on_end(otel::SpanData&&) noexcept override { ++spans; }
  std::atomic<std::uint64_t> spans{0};
};

struct Config {
  std::string name;
  bool metrics = false;
  std::shared_ptr<otel::Tracer> tracer;  // null: no tracing
  // Messages published with a traceparent header, as a traced producer
  // sends them (with tracing, the producer span's own replaces it): every
  // configuration but one consumes the same messages.
  bool header = true;
};

std::shared_ptr<otel::Tracer> tracer(otel::Sampler sampler, std::shared_ptr<otel::SpanSink> sink) {
  otel::TracerOptions o;
  o.service_name = "bench";
  o.sampler = sampler;
  o.sink = std::move(sink);
  return std::make_shared<otel::Tracer>(o);
}

bq::WorkerOptions worker_options(const Config& config) {
  bq::WorkerOptions o;
  o.default_queue = "bench";
  o.poll_timeout = std::chrono::milliseconds(50);
  o.log = {};
  if (config.tracer) o.middleware.push_back(std::make_shared<otel::Middleware>(config.tracer));
  if (config.metrics) o.middleware.push_back(std::make_shared<bq::metrics::Middleware>());
  return o;
}

const bq::Value& order() {
  static const bq::Value v = bq::Value::object({{"order_id", 1042}, {"amount", 99.9}, {"currency", "EUR"}});
  return v;
}

// CPU time of the whole process (every thread), in seconds.
double process_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Timing {
  double wall = 0;  // seconds
  double cpu = 0;   // seconds of CPU, every thread of the process
};

// Publishes n messages (through the worker, so traced ones carry their
// traceparent), then times a run that consumes them.
Timing consume_run(const Config& config, std::size_t n) {
  bq::memory::Transport transport;
  bq::Worker worker(transport, worker_options(config));
  worker.handle("urn:bench:order", [](const bq::Message&) { return bq::Result<void>(); });
  bq::PublishParams params;
  if (config.header) params.headers["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  for (std::size_t i = 0; i < n; ++i) {
    if (!worker.publish("urn:bench:order", order(), params)) std::exit(1);
  }
  bq::RunLimits limits;
  limits.max_messages = n;
  const auto start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  auto summary = worker.run({}, limits);
  Timing t{std::chrono::duration<double>(Clock::now() - start).count(), process_cpu_seconds() - cpu_start};
  if (!summary || worker.metrics().snapshot().succeeded != n) {
    std::fprintf(stderr, "the run did not handle every message\n");
    std::exit(1);
  }
  return t;
}

std::size_t arg(int argc, char** argv, const char* name, std::size_t fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::stoul(argv[i + 1]);
  }
  return fallback;
}

int overhead(std::size_t messages, std::size_t rounds, const std::string& only) {
  AnsweringCollector collector;
  auto discard = std::make_shared<DiscardingSink>();
  otel::OtlpExporterOptions eo;
  eo.endpoint = collector.url();
  eo.log = {};
  auto exporter = std::make_shared<otel::OtlpExporter>(eo);
  const std::vector<Config> configs{
      {"off", false, nullptr},
      {"off, messages without a traceparent header", false, nullptr, false},
      {"metrics", true, nullptr},
      {"tracing unsampled", false, tracer(otel::Sampler::always_off(), discard)},
      {"tracing unsampled + metrics", true, tracer(otel::Sampler::always_off(), discard)},
      {"tracing sampled (discarded) + metrics", true, tracer(otel::Sampler::always_on(), discard)},
      {"tracing sampled (OTLP export) + metrics", true, tracer(otel::Sampler::always_on(), exporter)},
  };
  std::map<std::string, std::vector<double>> wall, cpu;
  (void)consume_run(configs[0], messages / 10);  // warm-up
  for (std::size_t r = 0; r < rounds; ++r) {
    for (const Config& c : configs) {
      if (!only.empty() && c.name != "off" && c.name.find(only) == std::string::npos) continue;
      const Timing t = consume_run(c, messages);
      wall[c.name].push_back(t.wall);
      cpu[c.name].push_back(t.cpu);
    }
  }
  exporter->shutdown(std::chrono::seconds(10));
  const double per = 1e6 / static_cast<double>(messages);
  const double off_wall = bq::bench::median(wall["off"]);
  // CPU time: the least of the rounds. On a shared machine another process
  // only ever adds to it (cache and core contention); the least is closest
  // to what a message costs by itself.
  const auto least = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  const double off_cpu = least(cpu["off"]);
  std::printf("consume loop, memory transport, %zu messages, 1 handler thread, median of %zu rounds\n", messages,
              rounds);
  std::printf("%-42s %10s %12s %9s %12s %9s\n", "configuration", "msg/s", "wall us/msg", "overhead", "CPU us/msg",
              "overhead");
  std::printf("%-42s %10s %12s %9s %12s %9s\n", "", "(median)", "(median)", "", "(least)", "");
  for (const Config& c : configs) {
    if (wall[c.name].empty()) continue;
    const double w = bq::bench::median(wall[c.name]);
    const double u = least(cpu[c.name]);
    std::printf("%-42s %10.0f %12.3f %+8.1f%% %12.3f %+8.1f%%\n", c.name.c_str(), static_cast<double>(messages) / w,
                w * per, (w / off_wall - 1.0) * 100.0, u * per, (u / off_cpu - 1.0) * 100.0);
  }
  const auto stats = exporter->stats();
  std::printf("OTLP export: %llu spans exported, %llu dropped, %llu failed\n",
              static_cast<unsigned long long>(stats.exported), static_cast<unsigned long long>(stats.dropped),
              static_cast<unsigned long long>(stats.failed));
  // CPU time: on a shared machine the wall time of a two-thread hand-off
  // loop moves with the load; the work each message costs does not.
  if (cpu["tracing unsampled + metrics"].empty()) return 0;  // left out by --only
  const double both = least(cpu["tracing unsampled + metrics"]);
  const double target = both / off_cpu - 1.0;
  std::printf("%-48s %+8.1f%%  (target < +10%%: %s)\n", "tracing unsampled + metrics over off (CPU)", target * 100.0,
              target < 0.10 ? "met" : "NOT met");
  // The header's carriage is the producer's doing and the transport's cost;
  // shown, not judged.
  if (const auto& bare = cpu["off, messages without a traceparent header"]; !bare.empty()) {
    std::printf("%-48s %+8.1f%%  (no target)\n", "the same over off without the header (CPU)",
                (both / least(bare) - 1.0) * 100.0);
  }
  return 0;
}

struct CollectorRun {
  double rate = 0;
  otel::OtlpExporterStats stats;
  std::size_t peak_queued = 0;
  std::size_t rss_before = 0, rss_peak = 0;
  double shutdown_seconds = 0;
};

CollectorRun collector_run(const std::string& endpoint, std::size_t messages) {
  CollectorRun out;
  out.rss_before = resident_kib();
  otel::OtlpExporterOptions eo;
  eo.endpoint = endpoint;
  eo.log = {};
  auto exporter = std::make_shared<otel::OtlpExporter>(eo);
  const Config config{"traced", true, tracer(otel::Sampler::always_on(), exporter)};
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      out.peak_queued = std::max(out.peak_queued, exporter->stats().queued);
      out.rss_peak = std::max(out.rss_peak, resident_kib());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  bq::memory::Transport transport;
  bq::Worker worker(transport, worker_options(config));
  worker.handle("urn:bench:order", [](const bq::Message&) { return bq::Result<void>(); });
  const auto start = Clock::now();
  for (std::size_t i = 0; i < messages; ++i) {
    if (!worker.publish("urn:bench:order", order())) std::exit(1);
  }
  bq::RunLimits limits;
  limits.max_messages = messages;
  if (!worker.run({}, limits) || worker.metrics().snapshot().succeeded != messages) std::exit(1);
  out.rate = static_cast<double>(messages) / std::chrono::duration<double>(Clock::now() - start).count();
  done = true;
  watcher.join();
  const auto shutdown_start = Clock::now();
  exporter->shutdown(std::chrono::seconds(5));
  out.shutdown_seconds = std::chrono::duration<double>(Clock::now() - shutdown_start).count();
  out.stats = exporter->stats();
  return out;
}

int collector(std::size_t messages, std::size_t rounds) {
  const char* const names[] = {"answering", "stopped", "stalled"};
  std::map<std::string, std::vector<CollectorRun>> runs;
  for (std::size_t r = 0; r < rounds; ++r) {
    {
      AnsweringCollector answering;
      runs["answering"].push_back(collector_run(answering.url(), messages));
    }
    runs["stopped"].push_back(collector_run(stopped_url(), messages));
    {
      Listener stalled;  // accepts (the kernel's backlog) and never answers
      runs["stalled"].push_back(collector_run(stalled.url(), messages));
    }
  }
  std::printf(
      "%zu traced publishes + %zu traced consumes (%zu spans) per run, memory transport, OTLP exporter "
      "(queue 2048, batch 512), median of %zu rounds\n",
      messages, messages, 2 * messages, rounds);
  std::printf("%-10s %10s %9s %9s %9s %11s %18s %11s\n", "collector", "msg/s", "exported", "dropped", "failed",
              "peak queue", "RSS KiB start/peak", "shutdown s");
  std::map<std::string, double> rate;
  for (const char* name : names) {
    std::vector<double> rates;
    std::size_t peak_queue = 0, rss_start = 0, rss_peak = 0;
    double shutdown = 0;
    for (const CollectorRun& r : runs[name]) {
      rates.push_back(r.rate);
      peak_queue = std::max(peak_queue, r.peak_queued);
      rss_peak = std::max(rss_peak, r.rss_peak);
      shutdown = std::max(shutdown, r.shutdown_seconds);
    }
    rss_start = runs[name].front().rss_before;
    rate[name] = bq::bench::median(rates);
    const auto& last = runs[name].back().stats;  // every round counts the same
    std::printf("%-10s %10.0f %9llu %9llu %9llu %11zu %8zu/%-9zu %11.2f\n", name, rate[name],
                static_cast<unsigned long long>(last.exported), static_cast<unsigned long long>(last.dropped),
                static_cast<unsigned long long>(last.failed), peak_queue, rss_start, rss_peak, shutdown);
  }
  bq::bench::ratio("collector stopped / answering", rate["stopped"] / rate["answering"], 0.90);
  bq::bench::ratio("collector stalled / answering", rate["stalled"] / rate["answering"], 0.90);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "overhead") {
    std::string only;
    for (int i = 2; i + 1 < argc; ++i) {
      if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    }
    return overhead(arg(argc, argv, "--messages", 20000), arg(argc, argv, "--rounds", 7), only);
  }
  if (mode == "collector") return collector(arg(argc, argv, "--messages", 10000), arg(argc, argv, "--rounds", 3));
  std::fprintf(stderr,
               "usage: babelqueue_bench_observability overhead [--messages N] [--rounds R]\n"
               "       babelqueue_bench_observability collector [--messages N]\n");
  return 2;
}
