// SPDX-License-Identifier: Apache-2.0
// WorkerOptions::prefetch 0 (automatic): max(concurrency, 16) on a transport
// whose receive asks the broker, and up to 32 per handler thread on one that
// holds messages ahead of receive() anyway (Capabilities::held_ahead), never
// more than it holds. Seen from the transport: the most a receive asked for.
#include <babelqueue/envelope.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

// The memory transport, saying it holds `held_ahead` messages ahead of
// receive(), and remembering the biggest receive asked of it.
class HoldingTransport final : public bq::Transport {
 public:
  explicit HoldingTransport(std::size_t held_ahead)
      : inner_(bq::open_transport("memory://automatic-prefetch-" + bq::uuid_v4()).value()), held_ahead_(held_ahead) {}

  bq::Capabilities capabilities() const override {
    bq::Capabilities caps = inner_->capabilities();
    caps.held_ahead = held_ahead_;
    return caps;
  }
  bq::Result<void> publish(std::string_view queue, std::string_view body, const bq::PublishOptions& options) override {
    return inner_->publish(queue, body, options);
  }
  bq::Result<std::vector<bq::Delivery>> receive(std::string_view queue, std::size_t max,
                                                std::chrono::milliseconds wait) override {
    std::size_t seen = largest_ask_.load();
    while (max > seen && !largest_ask_.compare_exchange_weak(seen, max)) {
    }
    return inner_->receive(queue, max, wait);
  }
  bq::Result<void> ack(const bq::Delivery& delivery) override { return inner_->ack(delivery); }
  bq::Result<void> release(const bq::Delivery& delivery, std::chrono::milliseconds delay) override {
    return inner_->release(delivery, delay);
  }
  void close(std::chrono::milliseconds deadline) override { inner_->close(deadline); }

  std::size_t largest_ask() const { return largest_ask_.load(); }

 private:
  std::unique_ptr<bq::Transport> inner_;
  std::size_t held_ahead_;
  std::atomic<std::size_t> largest_ask_{0};
};

// Runs a worker with `concurrency` handler threads and automatic prefetch
// over 400 waiting messages; the biggest receive it asked for.
std::size_t largest_receive(std::size_t held_ahead, std::size_t concurrency) {
  HoldingTransport transport(held_ahead);
  bq::MakeOptions make;
  make.queue = "jobs";
  const int messages = 400;
  for (int i = 0; i < messages; ++i) {
    auto envelope = bq::Envelope::make("urn:test:prefetch", bq::Value::object({{"n", i}}), make);
    EXPECT_TRUE(envelope && transport.publish("jobs", envelope->body(), {}));
  }
  bq::WorkerOptions options;
  options.default_queue = "jobs";
  options.concurrency = concurrency;
  options.poll_timeout = 20ms;
  options.log = {};
  bq::Worker worker(transport, options);
  std::atomic<int> handled{0};
  worker.handle("urn:test:prefetch", [&](const bq::Message&) { ++handled; });
  bq::RunLimits limits;
  limits.max_messages = messages;
  auto summary = worker.run({"jobs"}, limits);
  EXPECT_TRUE(summary) << summary.error().message();
  EXPECT_EQ(handled.load(), messages);
  return transport.largest_ask();
}

// The receive loop refills once the buffer is half empty, asking for what
// is left of the prefetch: the biggest ask is more than half the prefetch
// (the handlers, doing nothing, empty the buffer between receives) and never
// more than all of it.
void expect_prefetch(std::size_t held_ahead, std::size_t concurrency, std::size_t prefetch) {
  const std::size_t ask = largest_receive(held_ahead, concurrency);
  EXPECT_GT(ask, prefetch / 2) << "held_ahead " << held_ahead << ", concurrency " << concurrency;
  EXPECT_LE(ask, prefetch) << "held_ahead " << held_ahead << ", concurrency " << concurrency;
}

}  // namespace

TEST(AutomaticPrefetch, SixteenWhenEveryReceiveAsksTheBroker) {
  expect_prefetch(0, 1, 16);
  expect_prefetch(0, 4, 16);
}

TEST(AutomaticPrefetch, ThirtyTwoAThreadWhenTheTransportHoldsMessagesAhead) {
  expect_prefetch(1000, 1, 32);
  expect_prefetch(1000, 4, 128);
}

TEST(AutomaticPrefetch, NoMoreThanTheTransportHoldsAndNeverLessThanTheDefault) {
  expect_prefetch(100, 4, 100);
  expect_prefetch(8, 1, 16);
}
