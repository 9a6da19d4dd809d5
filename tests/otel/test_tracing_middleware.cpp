// SPDX-License-Identifier: Apache-2.0
// The tracing middleware on a Worker over the memory transport, spans kept
// by a SpanRecorder: the consumer span's parent (traceparent, else the
// trace_id's synthetic parent), its attributes and status, the span current
// while the handler runs, the producer span and what it stamps, and a
// message followed across two hops and a retry.
#include "span_recorder.hpp"

#include <babelqueue/handler_outcome.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/otel/middleware.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

namespace bq = babelqueue;
namespace otel = babelqueue::otel;
using bq::test_support::attribute;
using bq::test_support::SpanRecorder;

namespace {

constexpr const char* kParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

struct Traced {
  explicit Traced(otel::Sampler sampler = {}) {
    otel::TracerOptions o;
    o.service_name = "test";
    o.sampler = sampler;
    o.sink = recorder;
    tracer = std::make_shared<otel::Tracer>(o);
    bq::WorkerOptions w;
    w.default_queue = "orders";
    w.log = {};
    w.dead_letter = true;
    w.max_attempts = 2;
    w.poll_timeout = std::chrono::milliseconds(20);
    w.middleware.push_back(std::make_shared<otel::Middleware>(tracer));
    worker = std::make_unique<bq::Worker>(transport, w);
  }
  // Publishes a message straight to the transport, around the middleware.
  void publish_raw(const std::string& trace_id, bq::Headers headers = {}) {
    bq::MakeOptions m;
    m.queue = "orders";
    m.trace_id = trace_id;
    auto env = bq::Envelope::make("urn:a", bq::Value::object({{"n", 1}}), m).value();
    bq::PublishOptions p;
    p.headers = std::move(headers);
    ASSERT_TRUE(transport.publish("orders", env.body(), p));
  }
  std::shared_ptr<SpanRecorder> recorder = std::make_shared<SpanRecorder>();
  std::shared_ptr<otel::Tracer> tracer;
  bq::memory::Transport transport;
  std::unique_ptr<bq::Worker> worker;
};

TEST(TracingMiddleware, AConsumerSpanIsAChildOfTheTraceparent) {
  Traced s;
  s.worker->handle("urn:a", [](const bq::Message&) {});
  s.publish_raw("7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b", {{"traceparent", kParent}, {"tracestate", "k=v"}});
  ASSERT_EQ(s.worker->drain().value(), 1U);
  auto spans = s.recorder->spans();
  ASSERT_EQ(spans.size(), 1U);
  const auto& span = spans[0];
  EXPECT_EQ(span.name, "process urn:a");
  EXPECT_EQ(span.kind, otel::SpanKind::consumer);
  EXPECT_EQ(span.context.trace_id.hex(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(span.parent_span_id.hex(), "b7ad6b7169203331");
  EXPECT_TRUE(span.parent_remote);
  EXPECT_EQ(span.context.trace_state, "k=v");
  EXPECT_EQ(span.status, otel::StatusCode::unset);
  EXPECT_LE(span.start_unix_nano, span.end_unix_nano);
}

TEST(TracingMiddleware, WithoutAHeaderTheTraceIdDecidesTheTraceAndParent) {
  Traced s;
  s.worker->handle("urn:a", [](const bq::Message&) {});
  s.publish_raw("order-42");
  ASSERT_EQ(s.worker->drain().value(), 1U);
  auto spans = s.recorder->spans();
  ASSERT_EQ(spans.size(), 1U);
  // The Python SDK's values for "order-42".
  EXPECT_EQ(spans[0].context.trace_id.hex(), "3bf8b157c4238eefe5ae4a66eca81c6b");
  EXPECT_EQ(spans[0].parent_span_id.hex(), "b6e264bb68d2452d");
}

TEST(TracingMiddleware, AMalformedTraceparentIsIgnored) {
  Traced s;
  s.worker->handle("urn:a", [](const bq::Message&) {});
  s.publish_raw("order-42", {{"traceparent", "00-zzz-b7ad6b7169203331-01"}});
  ASSERT_EQ(s.worker->drain().value(), 1U);
  auto spans = s.recorder->spans();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0].context.trace_id.hex(), "3bf8b157c4238eefe5ae4a66eca81c6b");
  EXPECT_EQ(spans[0].parent_span_id.hex(), "b6e264bb68d2452d");
}

TEST(TracingMiddleware, TheConsumerSpanCarriesTheFamilysAttributes) {
  Traced s;
  std::string id;
  s.worker->handle("urn:a", [&](const bq::Message& m) { id = std::string(m.id()); });
  s.publish_raw("order-42");
  ASSERT_EQ(s.worker->drain().value(), 1U);
  const auto span = s.recorder->spans().at(0);
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.system")), "babelqueue");
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.operation")), "process");
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.destination.name")), "orders");
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.message.id")), id);
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.message.conversation_id")), "order-42");
  EXPECT_EQ(std::get<std::int64_t>(*attribute(span, "messaging.babelqueue.attempts")), 0);
}

TEST(TracingMiddleware, AFailingHandlerSetsErrorAndTheRetryStaysInTheTrace) {
  Traced s;
  s.worker->handle("urn:a", [](const bq::Message&) { throw std::runtime_error("gateway down"); });
  s.publish_raw("order-42", {{"traceparent", kParent}});
  (void)s.worker->drain();
  (void)s.worker->drain();
  auto spans = s.recorder->spans();
  ASSERT_EQ(spans.size(), 2U);  // attempt 0, then the retry (max_attempts 2), then the dead-letter queue
  for (std::size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i].status, otel::StatusCode::error);
    EXPECT_EQ(spans[i].status_message, "gateway down");
    ASSERT_EQ(spans[i].events.size(), 1U);
    EXPECT_EQ(spans[i].events[0].name, "exception");
    EXPECT_EQ(spans[i].context.trace_id.hex(), "0af7651916cd43dd8448eb211c80319c");
    EXPECT_EQ(spans[i].parent_span_id.hex(), "b7ad6b7169203331");
    EXPECT_EQ(std::get<std::int64_t>(*attribute(spans[i], "messaging.babelqueue.attempts")),
              static_cast<std::int64_t>(i));
  }
  auto dlq = s.transport.receive("orders.dlq", 10, std::chrono::milliseconds(0)).value();
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(dlq[0].headers.at("traceparent"), kParent);
}

TEST(TracingMiddleware, OutcomesAndReturnedErrorsSetTheStatusAsTheWorkerDecides) {
  Traced s;
  int n = 0;
  s.worker->handle("urn:a", [&](const bq::Message&) -> bq::HandlerOutcome {
    switch (n++) {
      case 0: return bq::HandlerOutcome::ack();
      case 1: return bq::HandlerOutcome::drop("not ours");
      default: return bq::HandlerOutcome::dead_letter("bad order");
    }
  });
  for (int i = 0; i < 3; ++i) s.publish_raw("t" + std::to_string(i));
  ASSERT_EQ(s.worker->drain().value(), 3U);
  auto spans = s.recorder->spans();
  ASSERT_EQ(spans.size(), 3U);
  EXPECT_EQ(spans[0].status, otel::StatusCode::unset);
  EXPECT_EQ(spans[1].status, otel::StatusCode::unset);
  EXPECT_EQ(spans[2].status, otel::StatusCode::error);
  EXPECT_EQ(spans[2].status_message, "bad order");
}

TEST(TracingMiddleware, APublishStartsAProducerSpanAndInjectsTheHeader) {
  Traced s;
  bq::PublishParams p;
  p.trace_id = "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b";
  const std::string id = s.worker->publish("urn:a", bq::Value::object({}), p).value();
  auto spans = s.recorder->spans();
  ASSERT_EQ(spans.size(), 1U);
  const auto& span = spans[0];
  EXPECT_EQ(span.name, "publish urn:a");
  EXPECT_EQ(span.kind, otel::SpanKind::producer);
  // No span was current: a root span in the trace the trace_id maps to, the trace_id kept.
  EXPECT_FALSE(span.parent_span_id.valid());
  EXPECT_EQ(span.context.trace_id.hex(), "7b3f9c2ae41d4f889b2a1c0d5e6f7a8b");
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.destination.name")), "urn:a");
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.operation")), "publish");
  EXPECT_EQ(std::get<std::string>(*attribute(span, "messaging.message.id")), id);
  auto sent = s.transport.receive("orders", 1, std::chrono::milliseconds(0)).value();
  ASSERT_EQ(sent.size(), 1U);
  EXPECT_EQ(sent[0].headers.at("traceparent"), otel::format_traceparent(span.context));
  EXPECT_EQ(sent[0].headers.count("tracestate"), 0U);
  EXPECT_EQ(bq::Envelope::decode(sent[0].body).value().trace_id(), p.trace_id);
}

TEST(TracingMiddleware, AHandlersPublishIsAChildInTheSameTraceWithItsTraceIdStamped) {
  Traced s;
  s.worker->handle("urn:a", [&](const bq::Message&) {
    // No trace_id given: the worker makes a fresh one, which the span's trace replaces.
    EXPECT_TRUE(s.worker->publish("urn:b", bq::Value::object({{"x", 1}}), {.queue = "next"}));
  });
  s.publish_raw("order-42", {{"traceparent", kParent}, {"tracestate", "k=v"}});
  ASSERT_EQ(s.worker->drain().value(), 1U);
  const auto process = s.recorder->named("process urn:a").at(0);
  const auto publish = s.recorder->named("publish urn:b").at(0);
  EXPECT_EQ(publish.parent_span_id, process.context.span_id);
  EXPECT_FALSE(publish.parent_remote);
  EXPECT_EQ(publish.context.trace_id, process.context.trace_id);
  auto next = s.transport.receive("next", 1, std::chrono::milliseconds(0)).value();
  ASSERT_EQ(next.size(), 1U);
  auto env = bq::Envelope::decode(next[0].body).value();
  EXPECT_EQ(env.trace_id(), "0af76519-16cd-43dd-8448-eb211c80319c");
  EXPECT_EQ(env.data_json(), R"({"x":1})");
  EXPECT_EQ(next[0].headers.at("traceparent"), otel::format_traceparent(publish.context));
  EXPECT_EQ(next[0].headers.at("tracestate"), "k=v");
}

TEST(TracingMiddleware, TwoHopsLinkProducerAndConsumer) {
  Traced s;
  s.worker->handle("urn:a", [](const bq::Message&) {});
  ASSERT_TRUE(s.worker->publish("urn:a", bq::Value::object({})));
  ASSERT_EQ(s.worker->drain().value(), 1U);
  const auto publish = s.recorder->named("publish urn:a").at(0);
  const auto process = s.recorder->named("process urn:a").at(0);
  EXPECT_EQ(process.context.trace_id, publish.context.trace_id);
  EXPECT_EQ(process.parent_span_id, publish.context.span_id);
  EXPECT_TRUE(process.parent_remote);
}

TEST(TracingMiddleware, UnsampledSpansAreNotRecordedButTheirContextTravels) {
  Traced s(otel::Sampler::always_off());
  std::string seen;
  s.worker->handle("urn:a", [&](const bq::Message& m) { seen = std::string(m.header("traceparent")); });
  ASSERT_TRUE(s.worker->publish("urn:a", bq::Value::object({})));
  ASSERT_EQ(s.worker->drain().value(), 1U);
  EXPECT_TRUE(s.recorder->spans().empty());
  ASSERT_TRUE(otel::parse_traceparent(seen));
  EXPECT_FALSE(otel::parse_traceparent(seen)->sampled);
}

// Without a header, an unsampled consumer span skips the synthetic parent's
// hash, which only a recorded span shows: what it propagates is the same.
TEST(TracingMiddleware, AnUnsampledSpanWithoutAHeaderPropagatesTheMappedTrace) {
  Traced s(otel::Sampler::always_off());
  std::optional<otel::SpanContext> current;
  s.worker->handle("urn:a", [&](const bq::Message&) { current = otel::current_span_context(); });
  s.publish_raw("order-42");
  ASSERT_EQ(s.worker->drain().value(), 1U);
  EXPECT_TRUE(s.recorder->spans().empty());
  ASSERT_TRUE(current);
  EXPECT_EQ(current->trace_id.hex(), "3bf8b157c4238eefe5ae4a66eca81c6b");
  EXPECT_FALSE(current->sampled);
  EXPECT_TRUE(current->span_id.valid());
  EXPECT_NE(current->span_id.hex(), "b6e264bb68d2452d");  // its own, not the parent's
  // A parent-based sampler follows the synthetic parent, which is sampled:
  // that span records, with the parent's hashed id.
  Traced parent_based(otel::Sampler::parent_based(otel::Sampler::always_off()));
  parent_based.worker->handle("urn:a", [](const bq::Message&) {});
  parent_based.publish_raw("order-42");
  ASSERT_EQ(parent_based.worker->drain().value(), 1U);
  const auto spans = parent_based.recorder->spans();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0].parent_span_id.hex(), "b6e264bb68d2452d");
}

// A consumer span that records nothing makes its context only when the
// handler asks: once (the same span id every time), in the header's trace,
// the parent of a publish from the handler, and under a scope the handler
// opens itself only while that scope lives.
TEST(TracingMiddleware, AnUnrecordedSpansContextIsMadeWhenAskedAndOnce) {
  constexpr const char* kUnsampledParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
  for (const auto& [sampler, header] :
       {std::pair{otel::Sampler::always_off(), kParent},  // records nothing whatever the parent
        std::pair{otel::Sampler::parent_based(otel::Sampler::always_on()), kUnsampledParent}}) {
    Traced s(sampler);
    std::optional<otel::SpanContext> first, second, inner, after_inner;
    s.worker->handle("urn:a", [&](const bq::Message&) {
      first = otel::current_span_context();
      second = otel::current_span_context();
      otel::SpanContext other;
      other.trace_id.bytes.fill(7);
      other.span_id.bytes.fill(9);
      {
        const otel::ContextScope scope(other);
        inner = otel::current_span_context();
      }
      after_inner = otel::current_span_context();
      (void)s.worker->publish("urn:b", bq::Value::object({}));
    });
    s.worker->handle("urn:b", [](const bq::Message&) {});
    s.publish_raw("order-42", {{"traceparent", header}});
    ASSERT_EQ(s.worker->drain().value(), 2U);
    EXPECT_TRUE(s.recorder->spans().empty());
    ASSERT_TRUE(first && second && inner && after_inner);
    EXPECT_EQ(first->trace_id.hex(), "0af7651916cd43dd8448eb211c80319c");
    EXPECT_FALSE(first->sampled);
    EXPECT_TRUE(first->span_id.valid());
    EXPECT_NE(first->span_id.hex(), "b7ad6b7169203331");
    EXPECT_EQ(second->span_id, first->span_id);
    EXPECT_EQ(inner->span_id.hex(), "0909090909090909");
    EXPECT_EQ(after_inner->span_id, first->span_id);
    EXPECT_FALSE(otel::current_span_context());
  }
}

TEST(TracingMiddleware, ACallersTraceparentIsTheProducersParent) {
  Traced s;
  bq::PublishParams p;
  p.headers["traceparent"] = kParent;
  ASSERT_TRUE(s.worker->publish("urn:a", bq::Value::object({}), p));
  const auto span = s.recorder->spans().at(0);
  EXPECT_EQ(span.parent_span_id.hex(), "b7ad6b7169203331");
  auto sent = s.transport.receive("orders", 1, std::chrono::milliseconds(0)).value();
  EXPECT_EQ(bq::Envelope::decode(sent.at(0).body).value().trace_id(), "0af76519-16cd-43dd-8448-eb211c80319c");
  EXPECT_NE(sent.at(0).headers.at("traceparent"), kParent);
}

TEST(TracingMiddleware, NoSpanIsCurrentOutsideTheHandler) {
  Traced s;
  std::optional<otel::SpanContext> inside;
  s.worker->handle("urn:a", [&](const bq::Message&) { inside = otel::current_span_context(); });
  s.publish_raw("order-42");
  ASSERT_EQ(s.worker->drain().value(), 1U);
  ASSERT_TRUE(inside);
  EXPECT_EQ(inside->span_id, s.recorder->spans().at(0).context.span_id);
  EXPECT_FALSE(otel::current_span_context());
  EXPECT_THROW(otel::Middleware(nullptr), bq::Error);
}

}  // namespace
