// SPDX-License-Identifier: Apache-2.0
// What the reconnect-metrics tests share: a worker with the metrics
// middleware running on its own thread, reading one series from its
// registry, waiting for a condition, and a publish that keeps trying while
// the broker (or the way to it) is away.
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/metrics/middleware.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace babelqueue::testing {

// The value of family{label=value}, -1 when the registry has no such series.
inline double counter_value(prometheus::Registry& registry, const std::string& family, const std::string& label,
                            const std::string& value) {
  for (const auto& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const auto& metric : f.metric) {
      for (const auto& l : metric.label) {
        if (l.name == label && l.value == value) return metric.counter.value;
      }
    }
  }
  return -1;
}

// Publishes {"n": n} as urn:test:reconnect, retrying a retriable failure
// every `pause` until `within` has passed (then the test fails).
inline void publish_with_retry(Transport& transport, const std::string& queue, int n, std::chrono::seconds within,
                               std::chrono::milliseconds pause) {
  MakeOptions make;
  make.queue = queue;
  auto envelope = Envelope::make("urn:test:reconnect", Value::object({{"n", n}}), make);
  ASSERT_TRUE(envelope);
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    auto sent = transport.publish(queue, envelope->body());
    if (sent) return;
    ASSERT_TRUE(sent.error().retriable()) << sent.error().message();
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << sent.error().message();
    std::this_thread::sleep_for(pause);
  }
}

// Polls done() every 50 ms until it holds or `within` has passed; whether it held.
template <class Done>
bool wait_until(Done done, std::chrono::seconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// A Worker with the metrics middleware consuming `queue` on a thread of its
// own from construction to stop(), counting the urn:test:reconnect
// messages it handled.
class MeteredWorker {
 public:
  MeteredWorker(Transport& transport, const std::string& queue)
      : metrics_(std::make_shared<metrics::Middleware>()), worker_(transport, options(metrics_)) {
    worker_.handle("urn:test:reconnect", [this](const Message&) { ++handled_; });
    runner_ = std::thread([this, queue] { EXPECT_TRUE(worker_.run({queue})); });
  }
  MeteredWorker(const MeteredWorker&) = delete;
  MeteredWorker& operator=(const MeteredWorker&) = delete;
  ~MeteredWorker() { stop(); }

  int handled() const { return handled_.load(); }
  prometheus::Registry& registry() { return *metrics_->registry(); }
  void stop() {
    if (!runner_.joinable()) return;
    worker_.stop();
    runner_.join();
  }

 private:
  static WorkerOptions options(const std::shared_ptr<metrics::Middleware>& metrics) {
    WorkerOptions options;
    options.poll_timeout = std::chrono::milliseconds(200);
    options.log = {};
    options.middleware.push_back(metrics);
    return options;
  }

  std::shared_ptr<metrics::Middleware> metrics_;
  Worker worker_;
  std::atomic<int> handled_{0};
  std::thread runner_;
};

}  // namespace babelqueue::testing
