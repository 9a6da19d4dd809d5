// SPDX-License-Identifier: Apache-2.0
// babelqueue::pulsar throughput, one measurement per run, printed as one
// line "MODE N SECONDS MSG_PER_S"; bench/pulsar/run.sh runs it next to the
// Python pulsar-client doing the same work (pulsar_client_bench.py).
//
//   babelqueue_bench_pulsar URL MODE QUEUE N [CONCURRENCY]
//   MODE: publish-batch  publish_batch() in chunks of 10000 (libpulsar's pending-message limit in the Python bench),
//   each chunk's receipts awaited
//         publish-sync   publish() one by one, each receipt awaited
//         consume        CONCURRENCY threads, each with a transport of its own, receive(100) and
//                        ack each message, until N were acked in all
#include <babelqueue/envelope.hpp>
#include <babelqueue/pulsar/transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace bq = babelqueue;
using Clock = std::chrono::steady_clock;

namespace {

std::string body(std::size_t n) {
  bq::Value data = bq::Value::object();
  data["n"] = static_cast<std::int64_t>(n);
  data["pad"] = std::string(180, 'x');
  auto envelope = bq::Envelope::make("urn:bench:pulsar:msg", data);
  return envelope ? std::string(envelope->body()) : std::string();
}

std::unique_ptr<bq::Transport> open(const std::string& url) {
  auto t = bq::open_transport(url);
  if (!t) {
    std::fprintf(stderr, "open: %s\n", t.error().message().c_str());
    std::exit(1);
  }
  return std::move(*t);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s URL publish-batch|publish-sync|consume QUEUE N [CONCURRENCY]\n", argv[0]);
    return 2;
  }
  bq::pulsar::register_transport();
  const std::string url = argv[1];
  const std::string mode = argv[2];
  const std::string queue = argv[3];
  const std::size_t n = std::strtoull(argv[4], nullptr, 10);
  const int concurrency = argc > 5 ? std::atoi(argv[5]) : 1;
  const std::string payload = body(0);
  double seconds = 0;
  if (mode == "publish-batch" || mode == "publish-sync") {
    auto t = open(url);
    // The topic and producer exist before the clock starts, as on the Python side.
    if (auto warm = t->publish(queue + "-warm", payload); !warm) return 1;
    if (auto warm = t->publish(queue, payload); !warm) return 1;
    const auto start = Clock::now();
    if (mode == "publish-batch") {
      std::vector<bq::OutgoingMessage> chunk;
      for (std::size_t i = 0; i < n; i += 10000) {
        chunk.clear();
        for (std::size_t j = i; j < std::min(n, i + 10000); ++j) chunk.push_back({queue, payload, {}});
        if (auto r = t->publish_batch(chunk); !r) {
          std::fprintf(stderr, "publish_batch: %s\n", r.error().message().c_str());
          return 1;
        }
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        if (auto r = t->publish(queue, payload); !r) {
          std::fprintf(stderr, "publish: %s\n", r.error().message().c_str());
          return 1;
        }
      }
    }
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } else if (mode == "consume") {
    std::atomic<std::size_t> acked{0};
    std::vector<std::unique_ptr<bq::Transport>> transports;
    for (int i = 0; i < concurrency; ++i) transports.push_back(open(url));
    // Subscribed before the clock starts: the first receive opens the consumer.
    for (auto& t : transports) (void)t->receive(queue + "-warm", 1, std::chrono::milliseconds(1));
    const auto start = Clock::now();
    std::vector<std::thread> threads;
    for (int i = 0; i < concurrency; ++i) {
      threads.emplace_back([&, i] {
        while (acked.load() < n) {
          auto got = transports[static_cast<std::size_t>(i)]->receive(queue, 100, std::chrono::milliseconds(200));
          if (!got) {
            std::fprintf(stderr, "receive: %s\n", got.error().message().c_str());
            std::exit(1);
          }
          for (auto& d : *got) {
            if (auto r = transports[static_cast<std::size_t>(i)]->ack(d); !r) std::exit(1);
            acked.fetch_add(1);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  std::printf("%s %zu %.3f %.0f\n", mode.c_str(), n, seconds, static_cast<double>(n) / seconds);
  return 0;
}
