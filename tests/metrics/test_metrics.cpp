// SPDX-License-Identifier: Apache-2.0
// The metrics middleware on a Worker over the memory transport: every family
// agrees with what the run did (and with WorkerMetrics), the gauges come back
// to zero, labels are bounded, and a MetricsServer serves the registry.
#include "atomic_histogram.hpp"
#include "tick_clock.hpp"

#include <babelqueue/handler_outcome.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/metrics/middleware.hpp>
#include <babelqueue/metrics/server.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <map>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

// name{label=value,...} -> value, for counters and gauges; histograms give
// name_count and name_sum.
std::map<std::string, double> scrape(prometheus::Registry& registry) {
  std::map<std::string, double> out;
  for (const auto& family : registry.Collect()) {
    for (const auto& metric : family.metric) {
      std::string labels;
      for (const auto& l : metric.label) labels += (labels.empty() ? "" : ",") + l.name + "=" + l.value;
      const std::string key = family.name + "{" + labels + "}";
      switch (family.type) {
        case prometheus::MetricType::Counter: out[key] = metric.counter.value; break;
        case prometheus::MetricType::Gauge: out[key] = metric.gauge.value; break;
        case prometheus::MetricType::Histogram:
          out[family.name + "_count{" + labels + "}"] = static_cast<double>(metric.histogram.sample_count);
          out[family.name + "_sum{" + labels + "}"] = metric.histogram.sample_sum;
          break;
        default: break;
      }
    }
  }
  return out;
}

double at(const std::map<std::string, double>& values, const std::string& key) {
  auto it = values.find(key);
  return it == values.end() ? -1 : it->second;
}

bq::WorkerOptions options(std::shared_ptr<bq::metrics::Middleware> metrics) {
  bq::WorkerOptions o;
  o.default_queue = "orders";
  o.dead_letter = true;
  o.max_attempts = 3;
  o.poll_timeout = 20ms;
  o.log = {};
  o.middleware.push_back(std::move(metrics));
  return o;
}

TEST(Metrics, EveryFamilyAgreesWithWhatTheRunDid) {
  auto metrics = std::make_shared<bq::metrics::Middleware>();
  bq::memory::Transport transport;
  bq::Worker worker(transport, options(metrics));
  worker.handle("urn:ok", [](const bq::Message&) {});
  worker.handle("urn:flaky", [](const bq::Message& m) {
    if (m.attempts() == 0) throw std::runtime_error("once");
  });
  worker.handle("urn:bad", [](const bq::Message&) -> void { throw std::runtime_error("always"); });
  worker.handle("urn:skip", [](const bq::Message&) { return bq::HandlerOutcome::drop("not ours"); });
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(worker.publish("urn:ok", bq::Value::object({{"i", i}})));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(worker.publish("urn:flaky", bq::Value::object({})));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(worker.publish("urn:bad", bq::Value::object({})));
  ASSERT_TRUE(worker.publish("urn:skip", bq::Value::object({})));
  ASSERT_TRUE(worker.publish("urn:nobody", bq::Value::object({})));
  ASSERT_TRUE(transport.publish("orders", "not json"));
  bq::RunLimits limits;
  limits.idle_exit = 200ms;
  ASSERT_TRUE(worker.run({}, limits));

  const auto v = scrape(*metrics->registry());
  const auto s = worker.metrics().snapshot();
  // urn:ok 10, flaky 4 + 4 retries, bad 2 x 3 attempts, skip 1, nobody 3 attempts, poison 1.
  EXPECT_EQ(at(v, "babelqueue_messages_received_total{queue=orders,urn=urn:ok}"), 10);
  EXPECT_EQ(at(v, "babelqueue_messages_received_total{queue=orders,urn=urn:flaky}"), 8);
  EXPECT_EQ(at(v, "babelqueue_messages_received_total{queue=orders,urn=urn:bad}"), 6);
  EXPECT_EQ(at(v, "babelqueue_messages_received_total{queue=orders,urn=}"), 1);  // the poison
  EXPECT_EQ(at(v, "babelqueue_messages_handled_total{queue=orders,urn=urn:ok}"), 10);
  EXPECT_EQ(at(v, "babelqueue_messages_handled_total{queue=orders,urn=urn:flaky}"), 4);
  EXPECT_EQ(at(v, "babelqueue_messages_failed_total{queue=orders,urn=urn:flaky}"), 4);
  EXPECT_EQ(at(v, "babelqueue_messages_failed_total{queue=orders,urn=urn:bad}"), 6);
  EXPECT_EQ(at(v, "babelqueue_messages_retried_total{queue=orders,urn=urn:flaky}"), 4);
  EXPECT_EQ(at(v, "babelqueue_messages_retried_total{queue=orders,urn=urn:bad}"), 4);
  EXPECT_EQ(at(v, "babelqueue_messages_dead_lettered_total{queue=orders,reason=failed,urn=urn:bad}"), 2);
  EXPECT_EQ(at(v, "babelqueue_messages_dead_lettered_total{queue=orders,reason=unknown_urn,urn=urn:nobody}"), 1);
  EXPECT_EQ(at(v, "babelqueue_messages_dead_lettered_total{queue=orders,reason=poison,urn=}"), 1);
  EXPECT_EQ(at(v, "babelqueue_messages_unknown_urn_total{queue=orders,urn=urn:nobody}"), 3);
  EXPECT_EQ(at(v, "babelqueue_messages_dropped_total{queue=orders,urn=urn:skip}"), 1);
  EXPECT_EQ(at(v, "babelqueue_messages_poison_total{queue=orders}"), 1);
  // Handler time and latency for every delivery that reached a handler.
  EXPECT_EQ(at(v, "babelqueue_handler_duration_seconds_count{queue=orders,urn=urn:ok}"), 10);
  EXPECT_EQ(at(v, "babelqueue_handler_duration_seconds_count{queue=orders,urn=urn:bad}"), 6);
  EXPECT_EQ(at(v, "babelqueue_end_to_end_latency_seconds_count{queue=orders,urn=urn:flaky}"), 8);
  EXPECT_GE(at(v, "babelqueue_end_to_end_latency_seconds_sum{queue=orders,urn=urn:ok}"), 0);
  // Publishes: the worker's 18 (the raw poison went around it).
  EXPECT_EQ(at(v, "babelqueue_published_total{queue=orders,urn=urn:ok}"), 10);
  EXPECT_EQ(at(v, "babelqueue_publish_duration_seconds_count{queue=orders}"), 18);
  EXPECT_GT(at(v, "babelqueue_published_bytes_total{queue=orders,urn=urn:ok}"), 10 * 150);
  // The gauges are back to zero once the run is over.
  EXPECT_EQ(at(v, "babelqueue_messages_in_flight{queue=orders}"), 0);
  EXPECT_EQ(at(v, "babelqueue_messages_prefetched{queue=orders}"), 0);
  // And the totals are WorkerMetrics'.
  double handled = 0, failed = 0, retried = 0, dead = 0, received = 0;
  for (const auto& [key, value] : v) {
    if (key.starts_with("babelqueue_messages_handled_total")) handled += value;
    if (key.starts_with("babelqueue_messages_failed_total")) failed += value;
    if (key.starts_with("babelqueue_messages_retried_total")) retried += value;
    if (key.starts_with("babelqueue_messages_dead_lettered_total")) dead += value;
    if (key.starts_with("babelqueue_messages_received_total")) received += value;
  }
  EXPECT_EQ(handled, static_cast<double>(s.succeeded));
  EXPECT_EQ(failed, static_cast<double>(s.failed));
  EXPECT_EQ(retried, static_cast<double>(s.retried));
  EXPECT_EQ(dead, static_cast<double>(s.dead_lettered));
  EXPECT_EQ(received, static_cast<double>(s.received));
}

TEST(Metrics, InFlightAndPrefetchedWhileHandlersRun) {
  auto metrics = std::make_shared<bq::metrics::Middleware>();
  bq::memory::Transport transport;
  auto o = options(metrics);
  o.concurrency = 2;
  o.prefetch = 4;
  bq::Worker worker(transport, o);
  std::atomic<int> running{0};
  std::atomic<bool> release{false};
  worker.handle("urn:slow", [&](const bq::Message&) {
    ++running;
    while (!release) std::this_thread::sleep_for(1ms);
  });
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(worker.publish("urn:slow", bq::Value::object({})));
  std::thread runner([&] { (void)worker.run(); });
  while (running < 2) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(100ms);  // the receive loop refills the buffer
  const auto busy = scrape(*metrics->registry());
  // What the receive loop took so far: its batches are sized by the room
  // left in bytes as well (prefetch_bytes), which depends on when each
  // handler took its message, so it may stop at 5 of the 6.
  const auto received = static_cast<double>(worker.metrics().snapshot().received);
  EXPECT_GE(received, 5);
  EXPECT_EQ(at(busy, "babelqueue_messages_in_flight{queue=orders}"), 2);
  EXPECT_EQ(at(busy, "babelqueue_messages_prefetched{queue=orders}"), received - 2);
  release = true;
  while (worker.metrics().snapshot().succeeded < 6) std::this_thread::sleep_for(1ms);
  worker.stop();
  runner.join();
  const auto idle = scrape(*metrics->registry());
  EXPECT_EQ(at(idle, "babelqueue_messages_in_flight{queue=orders}"), 0);
  EXPECT_EQ(at(idle, "babelqueue_messages_prefetched{queue=orders}"), 0);
}

TEST(Metrics, LabelsBeyondTheCapFoldIntoOther) {
  bq::metrics::Options mo;
  mo.max_urns = 3;
  auto metrics = std::make_shared<bq::metrics::Middleware>(mo);
  bq::memory::Transport transport;
  bq::Worker worker(transport, options(metrics));
  worker.handle_any([](const bq::Message&) -> bq::Result<void> { return {}; });
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(worker.publish("urn:many:" + std::to_string(i), bq::Value::object({})));
  ASSERT_EQ(worker.drain().value(), 10U);
  const auto v = scrape(*metrics->registry());
  EXPECT_EQ(at(v, "babelqueue_messages_handled_total{queue=orders,urn=urn:many:0}"), 1);
  EXPECT_EQ(at(v, "babelqueue_messages_handled_total{queue=orders,urn=urn:many:2}"), 1);
  EXPECT_EQ(at(v, "babelqueue_messages_handled_total{queue=orders,urn=other}"), 7);
  std::size_t series = 0;
  for (const auto& [key, value] : v) {
    if (key.starts_with("babelqueue_messages_handled_total")) ++series;
  }
  EXPECT_EQ(series, 4U);
  EXPECT_THROW(bq::metrics::Middleware(bq::metrics::Options{.max_queues = 0}), bq::Error);
}

// The lock-free histogram puts every value in the bucket prometheus-cpp's
// Histogram puts it in, at the bounds themselves too (whose nanoseconds are
// not exact in binary), and sums to the same seconds.
TEST(Metrics, TheAtomicHistogramBucketsAsPrometheusCppDoes) {
  const std::vector<double> bounds = bq::metrics::Options{}.handler_buckets;
  bq::metrics::AtomicHistogram ours(bounds, 1'000'000'000);
  prometheus::Histogram theirs(bounds);
  std::vector<std::int64_t> values{0, 1, 499'999, 2'999'999, 3'000'000, 10'000'000'000, 10'000'000'001, 99'000'000'000};
  for (const double b : bounds) {
    const auto ns = static_cast<std::int64_t>(std::llround(b * 1e9));
    values.insert(values.end(), {ns - 1, ns, ns + 1});
  }
  for (const std::int64_t ns : values) {
    ours.observe(ns);
    theirs.Observe(static_cast<double>(ns) / 1e9);
  }
  const auto a = ours.collect().histogram;
  const auto b = theirs.Collect().histogram;
  EXPECT_EQ(a.sample_count, b.sample_count);
  EXPECT_NEAR(a.sample_sum, b.sample_sum, 1e-9);
  ASSERT_EQ(a.bucket.size(), b.bucket.size());
  for (std::size_t i = 0; i < a.bucket.size(); ++i) {
    EXPECT_EQ(a.bucket[i].upper_bound, b.bucket[i].upper_bound) << i;
    EXPECT_EQ(a.bucket[i].cumulative_count, b.bucket[i].cumulative_count) << "le=" << a.bucket[i].upper_bound;
  }
  // Milliseconds, as the end-to-end latency counts them.
  const std::vector<double> latency = bq::metrics::Options{}.latency_buckets;
  bq::metrics::AtomicHistogram ours_ms(latency, 1'000);
  prometheus::Histogram theirs_ms(latency);
  for (const std::int64_t ms : {0, 1, 2, 5, 6, 10, 999, 1000, 1001, 300'000, 3'600'000, 3'600'001}) {
    ours_ms.observe(ms);
    theirs_ms.Observe(static_cast<double>(ms) / 1000.0);
  }
  const auto c = ours_ms.collect().histogram;
  const auto d = theirs_ms.Collect().histogram;
  ASSERT_EQ(c.bucket.size(), d.bucket.size());
  for (std::size_t i = 0; i < c.bucket.size(); ++i)
    EXPECT_EQ(c.bucket[i].cumulative_count, d.bucket[i].cumulative_count);
  EXPECT_NEAR(c.sample_sum, d.sample_sum, 1e-9);
}

// The bucket lookup (by the value's power of two) counts the bounds below a
// value exactly, for bounds of every sign and size, ones that rounding to
// units made equal, and values at, next to and between them.
TEST(Metrics, TheAtomicHistogramFindsTheBucketOfEveryValue) {
  const std::vector<std::vector<double>> bound_sets{
      bq::metrics::Options{}.handler_buckets,
      bq::metrics::Options{}.latency_buckets,
      {-5, -0.5, 0, 1e-9, 2e-9, 3e-9, 1.5e-9 * 1024, 0.001, 0.0010000001, 1, 2, 4, 8, 9e8, 1e9},
      {42},
  };
  std::mt19937_64 random(7);
  for (const auto& seconds : bound_sets) {
    for (const std::int64_t units : {std::int64_t{1'000'000'000}, std::int64_t{1'000}}) {
      const bq::metrics::AtomicHistogram histogram(seconds, units);
      std::vector<std::int64_t> values{std::numeric_limits<std::int64_t>::min(), -1, 0, 1, 2, 3,
                                       std::numeric_limits<std::int64_t>::max()};
      for (int shift = 0; shift < 63; ++shift) {
        const std::int64_t p = std::int64_t{1} << shift;
        values.insert(values.end(), {p - 1, p, p + 1});
      }
      for (const double b : seconds) {
        const auto at = static_cast<std::int64_t>(std::floor(b * static_cast<double>(units)));
        values.insert(values.end(), {at - 1, at, at + 1});
      }
      for (int i = 0; i < 2000; ++i) values.push_back(static_cast<std::int64_t>(random() >> (random() % 64)));
      for (const std::int64_t v : values) {
        std::size_t expected = 0;
        for (const double b : seconds) expected += static_cast<double>(v) / static_cast<double>(units) > b ? 1 : 0;
        // Within a unit of a bound a double's division can round either way;
        // the rule there is the one the test above checks against prometheus-cpp.
        bool near_bound = false;
        for (const double b : seconds) {
          near_bound = near_bound || std::fabs(static_cast<double>(v) - b * static_cast<double>(units)) <= 1.0;
        }
        if (!near_bound) {
          EXPECT_EQ(histogram.bucket_of(v), expected) << "value " << v << " units " << units;
        }
      }
    }
  }
}

// The clock handlers are timed with (the time-stamp counter where it is
// invariant) measures what the steady clock measures.
TEST(Metrics, TheTickClockAgreesWithTheSteadyClock) {
  const bq::metrics::TickClock clock;
  for (const auto pause : {5ms, 50ms}) {
    const auto steady_start = std::chrono::steady_clock::now();
    const std::uint64_t start = clock.now();
    std::this_thread::sleep_for(pause);
    const std::uint64_t end = clock.now();
    const auto steady_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - steady_start).count();
    const std::int64_t ns = clock.nanoseconds(start, end);
    // Within the rate's measurement error (1e-5; 1e-3 allowed).
    const auto paused_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(pause).count();
    EXPECT_GE(ns, paused_ns - paused_ns / 1000);
    EXPECT_LE(ns, steady_ns + steady_ns / 1000);
    EXPECT_NEAR(static_cast<double>(clock.to_ns(end) - clock.to_ns(start)), static_cast<double>(ns), 1000.0);
  }
  EXPECT_EQ(clock.nanoseconds(10, 5), 0);
}

// The middleware's own registry (lock-free histograms and gauges) writes the
// same /metrics as prometheus-cpp's families in a registry handed in: the
// same families in the same order, with the same help, types, label sets,
// bucket bounds, counts and gauge values; only the timings differ.
TEST(Metrics, TheOwnRegistryWritesWhatPrometheusCppFamiliesWould) {
  auto run = [](std::shared_ptr<bq::metrics::Middleware> metrics) {
    bq::memory::Transport transport;
    bq::Worker worker(transport, options(metrics));
    worker.handle("urn:ok", [](const bq::Message&) {});
    worker.handle("urn:bad", [](const bq::Message&) -> void { throw std::runtime_error("always"); });
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(worker.publish("urn:ok", bq::Value::object({{"i", i}})));
    EXPECT_TRUE(worker.publish("urn:bad", bq::Value::object({})));
    EXPECT_TRUE(transport.publish("orders", "not json"));
    EXPECT_EQ(worker.drain().value(), 9U);  // 5 + 3 attempts + the poison
    std::string text = prometheus::TextSerializer().Serialize(metrics->registry()->Collect());
    // Sums and bucket counts are timings; the bounds and counts are not.
    text = std::regex_replace(text, std::regex(R"(((_sum|_bucket)\{[^}]*\}) \S+)"), "$1 T");
    return text;
  };
  const std::string own = run(std::make_shared<bq::metrics::Middleware>());
  const std::string theirs = run(std::make_shared<bq::metrics::Middleware>(
      bq::metrics::Options{.registry = std::make_shared<prometheus::Registry>()}));
  EXPECT_EQ(own, theirs);
  EXPECT_NE(own.find("babelqueue_handler_duration_seconds_count{queue=\"orders\",urn=\"urn:ok\"} 5"), std::string::npos)
      << own;
  EXPECT_NE(own.find("babelqueue_messages_in_flight{queue=\"orders\"} 0"), std::string::npos);
  EXPECT_NE(own.find("babelqueue_publish_duration_seconds_bucket{queue=\"orders\",le=\"+Inf\"} T"), std::string::npos);
}

// Two middlewares on one registry of the middleware's kind count into the
// same series, as they do in prometheus-cpp's families.
TEST(Metrics, MiddlewaresSharingTheOwnRegistryAddUp) {
  auto first = std::make_shared<bq::metrics::Middleware>();
  auto second = std::make_shared<bq::metrics::Middleware>(bq::metrics::Options{.registry = first->registry()});
  for (const auto& metrics : {first, second}) {
    bq::memory::Transport transport;
    bq::Worker worker(transport, options(metrics));
    worker.handle("urn:ok", [](const bq::Message&) {});
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(worker.publish("urn:ok", bq::Value::object({})));
    ASSERT_EQ(worker.drain().value(), 3U);
  }
  const auto v = scrape(*first->registry());
  EXPECT_EQ(at(v, "babelqueue_messages_handled_total{queue=orders,urn=urn:ok}"), 6);
  EXPECT_EQ(at(v, "babelqueue_handler_duration_seconds_count{queue=orders,urn=urn:ok}"), 6);
  EXPECT_EQ(at(v, "babelqueue_publish_duration_seconds_count{queue=orders}"), 6);
  EXPECT_EQ(at(v, "babelqueue_messages_prefetched{queue=orders}"), 0);
  std::size_t families = 0;
  for (const auto& family : first->registry()->Collect()) families += family.name == "babelqueue_messages_in_flight";
  EXPECT_EQ(families, 1U);
}

TEST(Metrics, TheServerListensAndRefusesABadAddress) {
  auto metrics = std::make_shared<bq::metrics::Middleware>();
  bq::metrics::MetricsServer server("127.0.0.1:0", metrics->registry());
  EXPECT_GT(server.port(), 0);
  EXPECT_THROW(bq::metrics::MetricsServer("127.0.0.1:" + std::to_string(server.port()), metrics->registry()),
               bq::Error);
}

}  // namespace
