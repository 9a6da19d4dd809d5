// SPDX-License-Identifier: Apache-2.0
// Prometheus metrics for a Worker (library babelqueue::metrics, on
// prometheus-cpp): a middleware that counts what the worker does with its
// messages (docs/adr/0027), into a prometheus::Registry that MetricsServer
// serves on /metrics or that an application attaches to its own exposer.
//
//   auto metrics = std::make_shared<babelqueue::metrics::Middleware>();
//   worker.use(metrics);                                   // after tracing, before the rest
//   babelqueue::metrics::MetricsServer server("127.0.0.1:9464", metrics->registry());
//
// Families (docs/observability.md has the list with their labels):
// messages received, handled, failed, retried, dead-lettered (with the
// reason), poison, unknown-URN, dropped and released; settle errors; handler
// duration and end-to-end latency (now - meta.created_at, when the handler
// is done) histograms; in-flight and prefetched gauges; published messages,
// bytes, errors and the publish confirm latency; reconnects per transport.
//
// Labels are bounded: at most max_queues queue names and max_urns URNs get a
// label value of their own; later ones are counted under "other".
//
// Thread-safety: one middleware serves every thread of a worker (and
// several workers may share one; their counts add up).
#pragma once

#include <babelqueue/middleware.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace prometheus {
class Registry;
}

namespace babelqueue::metrics {

/// Where the metrics middleware registers its families, how many label
/// values it allows, and its histogram buckets. The Middleware's constructor
/// checks them.
struct Options {
  /// Where the families are registered; null = a registry of its own, whose
  /// histograms and in-flight/prefetched gauges take no lock per message
  /// (an application may add families of its own to it, and hand it to more
  /// middlewares through registry()). A registry made any other way gets
  /// prometheus-cpp's histograms and gauges, which cost a mutex and atomic
  /// double updates per message; /metrics reads the same either way.
  std::shared_ptr<prometheus::Registry> registry;
  /// Distinct label values before they fold into "other", at least 1: queue
  /// names, and URNs (counted across every queue).
  ///@{
  std::size_t max_queues = 64;
  std::size_t max_urns = 256;
  ///@}
  /// Histogram bucket upper bounds, in seconds, not empty and strictly
  /// rising (prometheus-cpp adds +Inf): handler_buckets for
  /// babelqueue_handler_duration_seconds, latency_buckets for
  /// babelqueue_end_to_end_latency_seconds, publish_buckets for
  /// babelqueue_publish_duration_seconds.
  ///@{
  std::vector<double> handler_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  std::vector<double> latency_buckets{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600};
  std::vector<double> publish_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  ///@}
};

/// The Prometheus metrics middleware (the families are in the file comment
/// and docs/observability.md). Safe to share between every thread of a
/// worker and between workers, whose counts then add up.
class Middleware final : public babelqueue::Middleware {
 public:
  /// Registers the families in options.registry (or a registry of its own).
  /// Errc::invalid_argument Error for a cap of 0 or buckets that do not rise.
  explicit Middleware(Options options = {});
  ~Middleware() override;
  Middleware(const Middleware&) = delete;
  Middleware& operator=(const Middleware&) = delete;

  /// Times the rest of the chain and the handler (handler duration) and, when
  /// meta.created_at is set and not in the future, the end-to-end latency.
  /// The result passes through unchanged.
  Result<void> handle(const Message& message, const MessageHandler& next) override;
  /// Counts the publish (messages and body bytes, or an error) and, when it
  /// succeeded, the time to the broker's confirmation. The result passes
  /// through unchanged.
  Result<void> publish(PublishRequest& request, const PublishStep& next) override;
  /// Counts the event and moves the in-flight and prefetched gauges. Never
  /// throws: a count that cannot be recorded (out of memory) is lost.
  void on_event(const WorkerEvent& event) noexcept override;

  /// The registry the families are in.
  std::shared_ptr<prometheus::Registry> registry() const noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace babelqueue::metrics
