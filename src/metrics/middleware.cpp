// SPDX-License-Identifier: Apache-2.0
#include "series_registry.hpp"
#include "tick_clock.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/message.hpp>
#include <babelqueue/metrics/middleware.hpp>
#include <babelqueue/transport.hpp>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace babelqueue::metrics {

namespace {

constexpr std::string_view kOther = "other";

constexpr const char* kInFlight = "babelqueue_messages_in_flight";
constexpr const char* kInFlightHelp = "Deliveries being processed by a handler thread";
constexpr const char* kPrefetched = "babelqueue_messages_prefetched";
constexpr const char* kPrefetchedHelp = "Deliveries received and waiting for a handler thread";
constexpr const char* kHandlerDuration = "babelqueue_handler_duration_seconds";
constexpr const char* kHandlerDurationHelp = "Time in the handler (and the middleware inside this one)";
constexpr const char* kLatency = "babelqueue_end_to_end_latency_seconds";
constexpr const char* kLatencyHelp = "From meta.created_at to the handler's end, for handled and failed messages";
constexpr const char* kPublishDuration = "babelqueue_publish_duration_seconds";
constexpr const char* kPublishDurationHelp = "From a publish to the broker's confirmation";

constexpr std::int64_t kNanosecondsPerSecond = 1'000'000'000;
constexpr std::int64_t kMillisecondsPerSecond = 1'000;

// One histogram series: lock-free in the middleware's own registry
// (SeriesRegistry), prometheus-cpp's in a registry the application handed
// in, which takes no series of another kind.
struct HistogramSeries {
  AtomicHistogram* own = nullptr;
  prometheus::Histogram* theirs = nullptr;
  std::int64_t units_per_second = 1;

  void observe(std::int64_t units) const {
    if (own != nullptr) {
      own->observe(units);
    } else {
      theirs->Observe(static_cast<double>(units) / static_cast<double>(units_per_second));
    }
  }
};

// The metrics of one queue label. The in-flight and prefetched gauges are
// activity's counters in the middleware's own registry, else
// prometheus-cpp's gauges.
struct QueueMetrics {
  prometheus::Counter* poison;
  prometheus::Counter* released;
  prometheus::Counter* settle_errors;
  QueueActivity* activity;
  prometheus::Gauge* in_flight;
  prometheus::Gauge* prefetched;
  HistogramSeries publish_duration;

  void received(std::size_t n) {
    if (activity != nullptr) {
      activity->received.fetch_add(n, std::memory_order_release);
    } else {
      prefetched->Increment(static_cast<double>(n));
    }
  }
  void returned(std::size_t n) {
    if (activity != nullptr) {
      activity->returned.fetch_add(n, std::memory_order_release);
    } else {
      prefetched->Decrement(static_cast<double>(n));
    }
  }
  void started() {
    if (activity != nullptr) {
      activity->started.fetch_add(1, std::memory_order_release);
    } else {
      prefetched->Decrement();
      in_flight->Increment();
    }
  }
  void finished() {
    if (activity != nullptr) {
      activity->finished.fetch_add(1, std::memory_order_release);
    } else {
      in_flight->Decrement();
    }
  }
};

// The metrics of one (queue, URN) label pair.
struct UrnMetrics {
  QueueMetrics* queue;
  prometheus::Counter* received;
  prometheus::Counter* handled;
  prometheus::Counter* failed;
  prometheus::Counter* retried;
  std::array<prometheus::Counter*, 3> dead_lettered;  // by DeadLetterReason
  prometheus::Counter* unknown_urn;
  prometheus::Counter* dropped;
  prometheus::Counter* published;
  prometheus::Counter* published_bytes;
  prometheus::Counter* publish_errors;
  HistogramSeries handler_duration;  // in nanoseconds
  HistogramSeries latency;           // in milliseconds
};

struct PairView {
  std::string_view queue, urn;
};
struct PairKey {
  std::string queue, urn;
};
struct PairHash {
  using is_transparent = void;
  std::size_t operator()(PairView v) const noexcept {
    const std::size_t h = std::hash<std::string_view>{}(v.queue);
    return h ^ (std::hash<std::string_view>{}(v.urn) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  }
  std::size_t operator()(const PairKey& k) const noexcept { return (*this)(PairView{k.queue, k.urn}); }
};
struct PairEqual {
  using is_transparent = void;
  static PairView view(const PairKey& k) noexcept { return {k.queue, k.urn}; }
  static PairView view(PairView v) noexcept { return v; }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const noexcept {
    return view(a).queue == view(b).queue && view(a).urn == view(b).urn;
  }
};
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Tells apart the middleware a thread's cache (below) belongs to, even one
// built where a destroyed one was.
std::atomic<std::uint64_t> next_instance{1};

// Unix milliseconds at a reading of the TickClock, through the offset
// between the two clocks, read again once a second: a handler's end is
// already read on the TickClock, and a second clock read per message would
// cost as much as the rest of the metrics. A step of the system clock is
// seen within a second.
class WallClock {
 public:
  std::int64_t unix_ms(const TickClock& clock, std::uint64_t at) noexcept {
    using std::chrono::nanoseconds;
    const std::int64_t at_ns = clock.to_ns(at);
    const std::int64_t taken = taken_ns_.load(std::memory_order_acquire);
    if (taken == kNever || at_ns - taken >= kRefreshNs) {
      const auto wall = std::chrono::system_clock::now();
      const std::int64_t ticks_ns = clock.to_ns(clock.now());
      const std::int64_t offset = std::chrono::duration_cast<nanoseconds>(wall.time_since_epoch()).count() - ticks_ns;
      offset_ns_.store(offset, std::memory_order_relaxed);
      taken_ns_.store(std::max<std::int64_t>(at_ns, kNever + 1), std::memory_order_release);
      return (at_ns + offset) / 1'000'000;
    }
    return (at_ns + offset_ns_.load(std::memory_order_relaxed)) / 1'000'000;
  }

 private:
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::min();
  static constexpr std::int64_t kRefreshNs = 1'000'000'000;
  std::atomic<std::int64_t> taken_ns_{kNever};
  std::atomic<std::int64_t> offset_ns_{0};
};

std::int64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

void check_buckets(const std::vector<double>& buckets, const char* name) {
  if (buckets.empty() || !std::is_sorted(buckets.begin(), buckets.end()) ||
      std::adjacent_find(buckets.begin(), buckets.end()) != buckets.end()) {
    throw Error(Errc::invalid_argument, std::string("metrics::Options::") + name + " must rise strictly");
  }
}

}  // namespace

class Middleware::Impl {
 public:
  explicit Impl(Options options)
      : instance_(next_instance.fetch_add(1)),
        options_(std::move(options)),
        registry_(options_.registry ? options_.registry : std::make_shared<SeriesRegistry>()),
        own_(dynamic_cast<SeriesRegistry*>(registry_.get())),
        received_(counter("babelqueue_messages_received_total",
                          "Deliveries a handler thread took up, by queue and URN (empty for poison)")),
        handled_(counter("babelqueue_messages_handled_total", "Messages handled and acknowledged")),
        failed_(counter("babelqueue_messages_failed_total",
                        "Handler failures, including unknown URNs under the fail strategy")),
        retried_(counter("babelqueue_messages_retried_total", "Messages republished for a retry (attempts + 1)")),
        dead_lettered_(counter("babelqueue_messages_dead_lettered_total",
                               "Messages published to the dead-letter queue, by reason")),
        poison_(counter("babelqueue_messages_poison_total", "Poison messages (not a readable envelope)")),
        unknown_urn_(counter("babelqueue_messages_unknown_urn_total", "Messages whose URN has no handler")),
        dropped_(counter("babelqueue_messages_dropped_total",
                         "Messages acknowledged without being handled or dead-lettered, by choice")),
        released_(counter("babelqueue_messages_released_total", "Messages handed back to the broker for redelivery")),
        settle_errors_(counter("babelqueue_settle_errors_total", "Acks, releases and republishes that failed")),
        published_(counter("babelqueue_published_total", "Messages published (Worker::publish)")),
        published_bytes_(counter("babelqueue_published_bytes_total", "Bytes of the bodies published")),
        publish_errors_(counter("babelqueue_publish_errors_total", "Publishes that failed")),
        in_flight_(gauge(kInFlight, kInFlightHelp)),
        prefetched_(gauge(kPrefetched, kPrefetchedHelp)),
        handler_duration_(histogram(kHandlerDuration, kHandlerDurationHelp)),
        latency_(histogram(kLatency, kLatencyHelp)),
        publish_duration_(histogram(kPublishDuration, kPublishDurationHelp)),
        reconnects_(counter("babelqueue_reconnects_total",
                            "Connections a transport re-established after losing them, by transport")) {
    if (options_.max_queues == 0 || options_.max_urns == 0) {
      throw Error(Errc::invalid_argument, "metrics::Options: max_queues and max_urns must be at least 1");
    }
    check_buckets(options_.handler_buckets, "handler_buckets");
    check_buckets(options_.latency_buckets, "latency_buckets");
    check_buckets(options_.publish_buckets, "publish_buckets");
  }

  std::shared_ptr<prometheus::Registry> registry() const noexcept { return registry_; }

  Result<void> handle(const Message& message, const MessageHandler& next) {
    UrnMetrics& m = delivery_urn_metrics(&message.envelope(), message.queue(), message.urn());
    struct Done {
      Impl& impl;
      UrnMetrics& m;
      std::optional<std::int64_t> created_at;
      std::uint64_t start = impl.tick_clock_.now();
      ~Done() {
        // One clock read for the handler's end and the latency's now.
        const std::uint64_t end = impl.tick_clock_.now();
        m.handler_duration.observe(impl.tick_clock_.nanoseconds(start, end));
        if (created_at) {
          const std::int64_t now_ms = impl.wall_clock_.unix_ms(impl.tick_clock_, end);
          if (now_ms >= *created_at) m.latency.observe(now_ms - *created_at);
        }
      }
    } done{*this, m, message.envelope().created_at()};
    return next(message);
  }

  Result<void> publish(PublishRequest& request, const PublishStep& next) {
    const auto start = std::chrono::steady_clock::now();
    auto sent = next(request);
    UrnMetrics& m = urn_metrics(request.queue, request.envelope.urn());
    if (sent) {
      m.published->Increment();
      m.published_bytes->Increment(static_cast<double>(request.envelope.body().size()));
      m.queue->publish_duration.observe(nanoseconds_since(start));
    } else {
      m.publish_errors->Increment();
    }
    return sent;
  }

  void on_event(const WorkerEvent& e) noexcept {
    try {
      switch (e.kind) {
        case WorkerEventKind::received: queue_metrics(e.queue).received(e.count); return;
        case WorkerEventKind::started: {
          QueueMetrics& q = queue_metrics(e.queue);
          q.started();
          Delivery& d = delivery();
          d = Delivery{instance_, &q, nullptr, nullptr};
          return;
        }
        case WorkerEventKind::finished: {
          Delivery& d = delivery();
          QueueMetrics* q = d.owner == instance_ && d.queue != nullptr ? d.queue : &queue_metrics(e.queue);
          d = Delivery{};
          q->finished();
          return;
        }
        case WorkerEventKind::returned: queue_metrics(e.queue).returned(e.count); return;
        case WorkerEventKind::decoded: {
          UrnMetrics& m = urn_metrics(e.queue, e.urn);
          Delivery& d = delivery();
          if (d.owner == instance_ && e.envelope != nullptr) {
            d.envelope = e.envelope;
            d.urn = &m;
          }
          m.received->Increment();
          return;
        }
        case WorkerEventKind::handled: delivery_urn_metrics(e.envelope, e.queue, e.urn).handled->Increment(); return;
        case WorkerEventKind::failed: delivery_urn_metrics(e.envelope, e.queue, e.urn).failed->Increment(); return;
        case WorkerEventKind::retried: delivery_urn_metrics(e.envelope, e.queue, e.urn).retried->Increment(); return;
        case WorkerEventKind::dead_lettered: {
          const auto reason = static_cast<std::size_t>(e.reason.value_or(DeadLetterReason::failed));
          delivery_urn_metrics(e.envelope, e.queue, e.urn).dead_lettered.at(reason)->Increment();
          return;
        }
        case WorkerEventKind::poison: queue_metrics(e.queue).poison->Increment(); return;
        case WorkerEventKind::unknown_urn:
          delivery_urn_metrics(e.envelope, e.queue, e.urn).unknown_urn->Increment();
          return;
        case WorkerEventKind::dropped: delivery_urn_metrics(e.envelope, e.queue, e.urn).dropped->Increment(); return;
        case WorkerEventKind::released: queue_metrics(e.queue).released->Increment(); return;
        case WorkerEventKind::settle_error: queue_metrics(e.queue).settle_errors->Increment(); return;
        case WorkerEventKind::reconnected: count_reconnects(e); return;
      }
    } catch (...) {
      // Out of memory while adding a label: the count is lost, the message is not.
    }
  }

 private:
  prometheus::Family<prometheus::Counter>& counter(const char* name, const char* help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
  }
  // The gauges and histograms: in prometheus-cpp's families only where the
  // registry is not the middleware's own (null: series of SeriesRegistry).
  prometheus::Family<prometheus::Gauge>* gauge(const char* name, const char* help) {
    if (own_ != nullptr) return nullptr;
    return &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  }
  prometheus::Family<prometheus::Histogram>* histogram(const char* name, const char* help) {
    if (own_ != nullptr) {
      own_->declare_histogram(name, help);
      return nullptr;
    }
    return &prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
  }
  HistogramSeries histogram_series(prometheus::Family<prometheus::Histogram>* family, const char* name,
                                   const char* help, const prometheus::Labels& labels,
                                   const std::vector<double>& buckets, std::int64_t units_per_second) {
    HistogramSeries series;
    series.units_per_second = units_per_second;
    if (own_ != nullptr) {
      series.own = &own_->histogram(name, help, labels, buckets, units_per_second);
    } else {
      series.theirs = &family->Add(labels, prometheus::Histogram::BucketBoundaries(buckets));
    }
    return series;
  }

  // The label value for value: itself while under the cap, else "other".
  // Under mutex_ (exclusive).
  static std::string bounded(std::string_view value, std::unordered_set<std::string, StringHash, std::equal_to<>>& seen,
                             std::size_t cap) {
    if (seen.find(value) != seen.end()) return std::string(value);
    if (seen.size() >= cap) return std::string(kOther);
    return *seen.emplace(value).first;
  }

  // A thread's last queue and (queue, URN): a delivery's events come from
  // one handler thread, so most lookups end here without a lock.
  struct Recent {
    std::uint64_t owner = 0;  // the instance_ it belongs to
    std::string queue, urn;
    QueueMetrics* queue_metrics = nullptr;
    UrnMetrics* urn_metrics = nullptr;
  };
  static Recent& recent_queue() {
    thread_local Recent r;
    return r;
  }
  static Recent& recent_urn() {
    thread_local Recent r;
    return r;
  }

  // A transport's total reconnects, as far as they are not counted yet:
  // workers that share a transport each report its total. A lower total
  // than the one seen is another transport at the same address (the first
  // one was destroyed): all of it is new. Rare: under a mutex.
  void count_reconnects(const WorkerEvent& e) {
    if (e.transport == nullptr) return;
    const std::string_view name = e.transport->connection_stats().transport;
    const auto total = static_cast<std::uint64_t>(e.count);
    std::lock_guard lock(reconnects_mutex_);
    std::uint64_t& seen = reconnects_seen_[e.transport];
    const std::uint64_t added = total >= seen ? total - seen : total;
    seen = total;
    if (added == 0) return;
    reconnects_.Add({{"transport", name.empty() ? std::string("unknown") : std::string(name)}})
        .Increment(static_cast<double>(added));
  }

  // The delivery a handler thread is processing, between its started and
  // finished events: its metrics, resolved once from its queue and URN, so
  // the rest of its events and handle() find them by the address of its
  // envelope (alive and unique while it is processed) instead of by label.
  // Anything else (another thread, a nested worker, an envelope a middleware
  // replaced) looks them up by name.
  struct Delivery {
    std::uint64_t owner = 0;  // the instance_ it belongs to; 0: none
    QueueMetrics* queue = nullptr;
    const Envelope* envelope = nullptr;
    UrnMetrics* urn = nullptr;
  };
  static Delivery& delivery() {
    thread_local Delivery d;
    return d;
  }
  UrnMetrics& delivery_urn_metrics(const Envelope* envelope, std::string_view queue, std::string_view urn) {
    const Delivery& d = delivery();
    if (envelope != nullptr && d.owner == instance_ && d.envelope == envelope) return *d.urn;
    return urn_metrics(queue, urn);
  }

  QueueMetrics& queue_metrics(std::string_view queue) {
    Recent& r = recent_queue();
    if (r.owner == instance_ && r.queue == queue) return *r.queue_metrics;
    QueueMetrics* found = nullptr;
    {
      std::shared_lock lock(mutex_);
      if (auto it = queues_.find(queue); it != queues_.end()) found = it->second;
    }
    if (found == nullptr) {
      std::unique_lock lock(mutex_);
      found = add_queue(queue);
    }
    r.owner = instance_;
    r.queue.assign(queue);
    r.queue_metrics = found;
    return *found;
  }

  UrnMetrics& urn_metrics(std::string_view queue, std::string_view urn) {
    Recent& r = recent_urn();
    if (r.owner == instance_ && r.urn == urn && r.queue == queue) return *r.urn_metrics;
    UrnMetrics* found = nullptr;
    {
      std::shared_lock lock(mutex_);
      if (auto it = urns_.find(PairView{queue, urn}); it != urns_.end()) found = it->second;
    }
    if (found == nullptr) {
      std::unique_lock lock(mutex_);
      found = add_urn(queue, urn);
    }
    r.owner = instance_;
    r.queue.assign(queue);
    r.urn.assign(urn);
    r.urn_metrics = found;
    return *found;
  }

  // Under mutex_ (exclusive).
  QueueMetrics* add_queue(std::string_view queue) {
    if (auto it = queues_.find(queue); it != queues_.end()) return it->second;
    const std::string label = bounded(queue, queue_labels_, options_.max_queues);
    QueueMetrics* metrics = nullptr;
    if (auto same = by_queue_label_.find(label); same != by_queue_label_.end()) {
      metrics = same->second;
    } else {
      const prometheus::Labels l{{"queue", label}};
      QueueActivity* activity = nullptr;
      if (own_ != nullptr)
        activity = &own_->queue_activity(label, kInFlight, kInFlightHelp, kPrefetched, kPrefetchedHelp);
      auto made = std::make_unique<QueueMetrics>(QueueMetrics{
          &poison_.Add(l), &released_.Add(l), &settle_errors_.Add(l), activity,
          activity != nullptr ? nullptr : &in_flight_->Add(l), activity != nullptr ? nullptr : &prefetched_->Add(l),
          histogram_series(publish_duration_, kPublishDuration, kPublishDurationHelp, l, options_.publish_buckets,
                           kNanosecondsPerSecond)});
      metrics = made.get();
      owned_queues_.push_back(std::move(made));
      by_queue_label_.emplace(label, metrics);
    }
    queues_.emplace(std::string(queue), metrics);
    return metrics;
  }

  UrnMetrics* add_urn(std::string_view queue, std::string_view urn) {
    if (auto it = urns_.find(PairView{queue, urn}); it != urns_.end()) return it->second;
    QueueMetrics* q = add_queue(queue);
    const std::string queue_label = bounded(queue, queue_labels_, options_.max_queues);
    const std::string urn_label = bounded(urn, urn_labels_, options_.max_urns);
    UrnMetrics* metrics = nullptr;
    if (auto same = by_urn_label_.find(PairView{queue_label, urn_label}); same != by_urn_label_.end()) {
      metrics = same->second;
    } else {
      const prometheus::Labels l{{"queue", queue_label}, {"urn", urn_label}};
      auto with_reason = [&](DeadLetterReason reason) {
        prometheus::Labels r = l;
        r.emplace("reason", std::string(to_string(reason)));
        return &dead_lettered_.Add(r);
      };
      auto made = std::make_unique<UrnMetrics>(UrnMetrics{
          q,
          &received_.Add(l),
          &handled_.Add(l),
          &failed_.Add(l),
          &retried_.Add(l),
          {with_reason(DeadLetterReason::failed), with_reason(DeadLetterReason::unknown_urn),
           with_reason(DeadLetterReason::poison)},
          &unknown_urn_.Add(l),
          &dropped_.Add(l),
          &published_.Add(l),
          &published_bytes_.Add(l),
          &publish_errors_.Add(l),
          histogram_series(handler_duration_, kHandlerDuration, kHandlerDurationHelp, l, options_.handler_buckets,
                           kNanosecondsPerSecond),
          histogram_series(latency_, kLatency, kLatencyHelp, l, options_.latency_buckets, kMillisecondsPerSecond)});
      metrics = made.get();
      owned_urns_.push_back(std::move(made));
      by_urn_label_.emplace(PairKey{queue_label, urn_label}, metrics);
    }
    urns_.emplace(PairKey{std::string(queue), std::string(urn)}, metrics);
    return metrics;
  }

  const std::uint64_t instance_;
  Options options_;
  TickClock tick_clock_;
  WallClock wall_clock_;
  std::shared_ptr<prometheus::Registry> registry_;
  SeriesRegistry* own_;  // registry_, when it is the middleware's own kind; else null
  prometheus::Family<prometheus::Counter>& received_;
  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Counter>& failed_;
  prometheus::Family<prometheus::Counter>& retried_;
  prometheus::Family<prometheus::Counter>& dead_lettered_;
  prometheus::Family<prometheus::Counter>& poison_;
  prometheus::Family<prometheus::Counter>& unknown_urn_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Family<prometheus::Counter>& released_;
  prometheus::Family<prometheus::Counter>& settle_errors_;
  prometheus::Family<prometheus::Counter>& published_;
  prometheus::Family<prometheus::Counter>& published_bytes_;
  prometheus::Family<prometheus::Counter>& publish_errors_;
  // Null in the middleware's own registry (SeriesRegistry has them).
  prometheus::Family<prometheus::Gauge>* in_flight_;
  prometheus::Family<prometheus::Gauge>* prefetched_;
  prometheus::Family<prometheus::Histogram>* handler_duration_;
  prometheus::Family<prometheus::Histogram>* latency_;
  prometheus::Family<prometheus::Histogram>* publish_duration_;
  prometheus::Family<prometheus::Counter>& reconnects_;
  std::mutex reconnects_mutex_;
  std::unordered_map<const Transport*, std::uint64_t> reconnects_seen_;  // guarded by reconnects_mutex_

  std::shared_mutex mutex_;
  // Every raw name seen maps to the metrics of its (bounded) label; the
  // metrics themselves are owned once per label.
  std::unordered_map<std::string, QueueMetrics*, StringHash, std::equal_to<>> queues_;
  std::unordered_map<PairKey, UrnMetrics*, PairHash, PairEqual> urns_;
  std::unordered_map<std::string, QueueMetrics*, StringHash, std::equal_to<>> by_queue_label_;
  std::unordered_map<PairKey, UrnMetrics*, PairHash, PairEqual> by_urn_label_;
  std::vector<std::unique_ptr<QueueMetrics>> owned_queues_;
  std::vector<std::unique_ptr<UrnMetrics>> owned_urns_;
  std::unordered_set<std::string, StringHash, std::equal_to<>> queue_labels_, urn_labels_;
};

Middleware::Middleware(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Middleware::~Middleware() = default;

Result<void> Middleware::handle(const Message& message, const MessageHandler& next) {
  return impl_->handle(message, next);
}
Result<void> Middleware::publish(PublishRequest& request, const PublishStep& next) {
  return impl_->publish(request, next);
}
void Middleware::on_event(const WorkerEvent& event) noexcept { impl_->on_event(event); }
std::shared_ptr<prometheus::Registry> Middleware::registry() const noexcept { return impl_->registry(); }

}  // namespace babelqueue::metrics
