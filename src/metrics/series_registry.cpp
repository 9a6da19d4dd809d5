// SPDX-License-Identifier: Apache-2.0
#include "series_registry.hpp"

#include <algorithm>
#include <utility>

namespace babelqueue::metrics {

namespace {

// prometheus-cpp's label list: the labels in name order (a Labels map
// iterates in that order already).
std::vector<prometheus::ClientMetric::Label> label_list(const prometheus::Labels& labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (const auto& [name, value] : labels) out.push_back({name, value});
  return out;
}

}  // namespace

template <class Series>
SeriesRegistry::Family<Series>& SeriesRegistry::family(std::vector<std::unique_ptr<Family<Series>>>& families,
                                                       const std::string& name, const std::string& help) {
  for (auto& f : families) {
    if (f->name == name) return *f;
  }
  families.push_back(std::make_unique<Family<Series>>(Family<Series>{name, help, {}}));
  return *families.back();
}

void SeriesRegistry::declare_histogram(const std::string& name, const std::string& help) {
  const std::lock_guard lock(mutex_);
  (void)family(histograms_, name, help);
}

AtomicHistogram& SeriesRegistry::histogram(const std::string& name, const std::string& help,
                                           const prometheus::Labels& labels, const std::vector<double>& bounds_seconds,
                                           std::int64_t units_per_second) {
  const std::lock_guard lock(mutex_);
  auto& f = family(histograms_, name, help);
  auto [it, added] = f.series.try_emplace(labels);
  if (added) it->second = std::make_unique<AtomicHistogram>(bounds_seconds, units_per_second);
  return *it->second;
}

QueueActivity& SeriesRegistry::queue_activity(const std::string& queue_label, const std::string& in_flight_name,
                                              const std::string& in_flight_help, const std::string& prefetched_name,
                                              const std::string& prefetched_help) {
  const std::lock_guard lock(mutex_);
  auto [it, added] = queues_.try_emplace(queue_label);
  if (!added) return *it->second;
  it->second = std::make_unique<QueueActivity>();
  const QueueActivity* activity = it->second.get();
  const prometheus::Labels labels{{"queue", queue_label}};
  family(gauges_, in_flight_name, in_flight_help).series.emplace(labels, [activity] { return activity->in_flight(); });
  family(gauges_, prefetched_name, prefetched_help).series.emplace(labels, [activity] {
    return activity->prefetched();
  });
  return *it->second;
}

std::vector<prometheus::MetricFamily> SeriesRegistry::Collect() const {
  std::vector<prometheus::MetricFamily> base = prometheus::Registry::Collect();
  std::vector<prometheus::MetricFamily> gauges, histograms;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& f : gauges_) {
      if (f->series.empty()) continue;
      prometheus::MetricFamily out{f->name, f->help, prometheus::MetricType::Gauge, {}};
      for (const auto& [labels, read] : f->series) {
        prometheus::ClientMetric m;
        m.label = label_list(labels);
        m.gauge.value = read();
        out.metric.push_back(std::move(m));
      }
      gauges.push_back(std::move(out));
    }
    for (const auto& f : histograms_) {
      if (f->series.empty()) continue;
      prometheus::MetricFamily out{f->name, f->help, prometheus::MetricType::Histogram, {}};
      for (const auto& [labels, series] : f->series) {
        prometheus::ClientMetric m = series->collect();
        m.label = label_list(labels);
        out.metric.push_back(std::move(m));
      }
      histograms.push_back(std::move(out));
    }
  }
  // Ours go before the base registry's families of the same kind, as if
  // registered first (the middleware registers its families when made).
  std::vector<prometheus::MetricFamily> all;
  all.reserve(base.size() + gauges.size() + histograms.size());
  auto take = [&](prometheus::MetricType type, std::vector<prometheus::MetricFamily>* ours) {
    if (ours != nullptr) std::move(ours->begin(), ours->end(), std::back_inserter(all));
    for (auto& f : base) {
      if (f.type == type) all.push_back(std::move(f));
    }
  };
  take(prometheus::MetricType::Counter, nullptr);
  take(prometheus::MetricType::Gauge, &gauges);
  take(prometheus::MetricType::Histogram, &histograms);
  take(prometheus::MetricType::Summary, nullptr);
  take(prometheus::MetricType::Untyped, nullptr);
  return all;
}

}  // namespace babelqueue::metrics
