// SPDX-License-Identifier: Apache-2.0
// One test per transport that a message's W3C trace context survives every
// hop the SDK makes with it (SPEC ADR-0028): a traced publish, a failing
// handler and its retry, the dead-letter copy, a redrive, and the handler
// that finally succeeds — each delivery with the producer's traceparent and
// tracestate, each consumer span a child of the producer span.
//
// Include it from one .cpp of a transport's test program that links
// babelqueue::otel, and instantiate it:
//
//   INSTANTIATE_TEST_SUITE_P(Redis, TraceHeaders,
//                            testing::Values(babelqueue::test_support::TraceTarget{"plain", open_fn}),
//                            babelqueue::test_support::TraceTarget::name_of);
//
// open() returns a transport on a broker where queues named
// "trace-<random>" can be used (created on first use or by the URL's
// create option). A transport without headers (Capabilities::headers false)
// skips the test: the family degrades silently there.
#pragma once

#include "span_recorder.hpp"

#include <babelqueue/otel/middleware.hpp>
#include <babelqueue/redrive.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace babelqueue::test_support {

struct TraceTarget {
  std::string name;  // the test name suffix: letters, digits and '_'
  std::function<Result<std::unique_ptr<Transport>>()> open;
  // How long a receive may take to see a message just published (Kafka's
  // group join, SQS's long polls).
  std::chrono::milliseconds patience{std::chrono::seconds(20)};

  static std::string name_of(const ::testing::TestParamInfo<TraceTarget>& info) { return info.param.name; }
};

inline void PrintTo(const TraceTarget& target, std::ostream* out) { *out << target.name; }

}  // namespace babelqueue::test_support

// In the global namespace so that INSTANTIATE_TEST_SUITE_P can name it.
class TraceHeaders : public testing::TestWithParam<babelqueue::test_support::TraceTarget> {
 protected:
  using Clock = std::chrono::steady_clock;

  void SetUp() override {
    auto opened = GetParam().open();
    ASSERT_TRUE(opened) << opened.error().message();
    transport_ = std::move(*opened);
    queue_ = "trace-" + babelqueue::uuid_v4().substr(0, 8);
    dlq_ = transport_->dead_letter_queue(queue_);
    babelqueue::otel::TracerOptions o;
    o.service_name = "trace-headers-test";
    o.sampler = babelqueue::otel::Sampler::always_on();
    o.sink = recorder_;
    tracer_ = std::make_shared<babelqueue::otel::Tracer>(o);
  }

  void TearDown() override {
    if (transport_) transport_->close(std::chrono::seconds(2));
  }

  babelqueue::WorkerOptions worker_options() const {
    babelqueue::WorkerOptions o;
    o.default_queue = queue_;
    o.dead_letter = true;
    o.max_attempts = 2;
    o.poll_timeout = std::chrono::milliseconds(200);
    o.release_delay_on_error = std::chrono::milliseconds(200);
    o.log = {};
    o.middleware.push_back(std::make_shared<babelqueue::otel::Middleware>(tracer_));
    return o;
  }

  // Runs worker until done() holds or the target's patience runs out.
  void run_until(babelqueue::Worker& worker, std::vector<std::string> queues, const std::function<bool()>& done) {
    std::thread runner([&] { (void)worker.run(std::move(queues)); });
    const auto deadline = Clock::now() + GetParam().patience;
    while (!done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    worker.stop();
    runner.join();
  }

  // Receives one message of queue, waiting up to the target's patience.
  std::vector<babelqueue::Delivery> receive_one(const std::string& queue) {
    const auto deadline = Clock::now() + GetParam().patience;
    while (Clock::now() < deadline) {
      auto got = transport_->receive(queue, 1, std::chrono::milliseconds(500));
      EXPECT_TRUE(got) << got.error().message();
      if (!got) return {};
      if (!got->empty()) return std::move(*got);
    }
    return {};
  }

  struct Seen {
    std::string traceparent, tracestate;
    std::int64_t attempts;
    bool replay;
  };

  std::unique_ptr<babelqueue::Transport> transport_;
  std::string queue_, dlq_;
  std::shared_ptr<babelqueue::test_support::SpanRecorder> recorder_ =
      std::make_shared<babelqueue::test_support::SpanRecorder>();
  std::shared_ptr<babelqueue::otel::Tracer> tracer_;
};

TEST_P(TraceHeaders, RetryDeadLetterAndRedriveKeepTraceparentAndTracestate) {
  namespace bq = babelqueue;
  namespace otel = babelqueue::otel;
  if (!transport_->capabilities().headers) GTEST_SKIP() << "the transport carries no headers";

  std::mutex mutex;
  std::vector<Seen> seen;
  std::atomic<bool> fixed{false};
  auto handler = [&](const bq::Message& m) {
    std::lock_guard lock(mutex);
    seen.push_back(
        {std::string(m.header("traceparent")), std::string(m.header("tracestate")), m.attempts(), m.is_replay()});
    if (!fixed) throw std::runtime_error("not yet");
  };
  auto count_seen = [&] {
    std::lock_guard lock(mutex);
    return seen.size();
  };

  // A traced publish inside an upstream trace that carries a tracestate.
  otel::SpanContext upstream = *otel::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  upstream.trace_state = "vendor=abc,other=1";
  {
    bq::Worker producer(*transport_, worker_options());
    const otel::ContextScope scope(upstream);
    ASSERT_TRUE(producer.publish("urn:trace:test", bq::Value::object({{"n", 1}})));
  }
  const auto produced = recorder_->named("publish urn:trace:test");
  ASSERT_EQ(produced.size(), 1U);
  const std::string traceparent = otel::format_traceparent(produced[0].context);

  // Attempt 0 fails, the retry (attempt 1) fails, the copy goes to the dead-letter queue.
  {
    bq::Worker worker(*transport_, worker_options());
    worker.handle("urn:trace:test", handler);
    run_until(worker, {queue_}, [&] { return worker.metrics().snapshot().dead_lettered >= 1; });
    ASSERT_EQ(worker.metrics().snapshot().dead_lettered, 1U);
  }
  ASSERT_EQ(count_seen(), 2U);
  for (std::int64_t attempt = 0; attempt < 2; ++attempt) {
    const Seen& s = seen[static_cast<std::size_t>(attempt)];
    EXPECT_EQ(s.attempts, attempt);
    EXPECT_EQ(s.traceparent, traceparent) << "attempt " << attempt;
    EXPECT_EQ(s.tracestate, "vendor=abc,other=1") << "attempt " << attempt;
  }

  // The dead-letter copy carries both; it goes back for the redrive.
  auto dead = receive_one(dlq_);
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(dead[0].headers["traceparent"], traceparent);
  EXPECT_EQ(dead[0].headers["tracestate"], "vendor=abc,other=1");
  ASSERT_TRUE(transport_->release(dead[0]));

  // Redriven with bypass, then handled.
  bq::RedriveOptions redrive;
  redrive.bypass = true;
  redrive.wait = std::chrono::milliseconds(200);  // well inside the shortest visibility timeout
  std::size_t redriven = 0;
  const auto deadline = Clock::now() + GetParam().patience;
  while (redriven == 0 && Clock::now() < deadline) {
    auto moved = bq::redrive(*transport_, dlq_, redrive);
    ASSERT_TRUE(moved) << moved.error().message();
    redriven += moved->redriven;
  }
  ASSERT_EQ(redriven, 1U);
  fixed = true;
  {
    bq::Worker worker(*transport_, worker_options());
    worker.handle("urn:trace:test", handler);
    run_until(worker, {queue_}, [&] { return worker.metrics().snapshot().succeeded >= 1; });
  }
  ASSERT_EQ(count_seen(), 3U);
  EXPECT_EQ(seen[2].traceparent, traceparent);
  EXPECT_EQ(seen[2].tracestate, "vendor=abc,other=1");
  EXPECT_TRUE(seen[2].replay);

  // Every consumer span: a child of the producer span, in the upstream trace.
  const auto processed = recorder_->named("process urn:trace:test");
  ASSERT_EQ(processed.size(), 3U);
  for (const auto& span : processed) {
    EXPECT_EQ(span.context.trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(span.parent_span_id, produced[0].context.span_id);
  }
  EXPECT_EQ(produced[0].parent_span_id.hex(), "00f067aa0ba902b7");
}
