// SPDX-License-Identifier: Apache-2.0
// What the reconnect-metrics tests share: reading one series from a
// prometheus-cpp registry, and a publish that keeps trying while the broker
// (or the way to it) is away.
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/transport.hpp>

#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include <chrono>
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

}  // namespace babelqueue::testing
