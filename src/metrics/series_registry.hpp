// SPDX-License-Identifier: Apache-2.0
// The registry a metrics middleware makes for itself: a prometheus::Registry
// (the application can add its own families, attach it to its own exposer
// or hand it to more middlewares) whose Collect() also reports the
// middleware's lock-free series: AtomicHistogram histograms and gauges read
// from QueueActivity counters (docs/adr/0045). prometheus-cpp's registry
// takes no collectable of another kind; overriding Collect() is how a scrape
// sees these, every observation made before it at once.
//
// Families come out as prometheus-cpp would write them had they been its
// own: counters, then gauges, then histograms, each kind in the order
// registered (these before the base registry's of the same kind), a family
// without a series left out, labels sorted by name.
//
// Thread-safety: every member from any thread.
#pragma once

#include "atomic_histogram.hpp"
#include "queue_activity.hpp"

#include <prometheus/labels.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace babelqueue::metrics {

class SeriesRegistry final : public prometheus::Registry {
 public:
  /// Declares a histogram family before its first series, so that it comes
  /// out in the order declared, as prometheus-cpp's come out in the order
  /// registered.
  void declare_histogram(const std::string& name, const std::string& help);

  /// The histogram series of family name with these labels, made at the
  /// first call (with this help, bounds and resolution; later calls get the
  /// same series, as prometheus-cpp's Family::Add does). Stays valid as long
  /// as the registry.
  AtomicHistogram& histogram(const std::string& name, const std::string& help, const prometheus::Labels& labels,
                             const std::vector<double>& bounds_seconds, std::int64_t units_per_second);

  /// The activity counters of a queue label, made at the first call with its
  /// in-flight and prefetched gauge series (families in_flight_name and
  /// prefetched_name, label "queue"). Stays valid as long as the registry.
  QueueActivity& queue_activity(const std::string& queue_label, const std::string& in_flight_name,
                                const std::string& in_flight_help, const std::string& prefetched_name,
                                const std::string& prefetched_help);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  template <class Series>
  struct Family {
    std::string name, help;
    std::map<prometheus::Labels, Series> series;
  };
  template <class Series>
  static Family<Series>& family(std::vector<std::unique_ptr<Family<Series>>>& families, const std::string& name,
                                const std::string& help);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Family<std::unique_ptr<AtomicHistogram>>>> histograms_;
  std::vector<std::unique_ptr<Family<std::function<double()>>>> gauges_;
  std::map<std::string, std::unique_ptr<QueueActivity>> queues_;
};

}  // namespace babelqueue::metrics
