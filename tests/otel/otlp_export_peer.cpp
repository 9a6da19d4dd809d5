// SPDX-License-Identifier: Apache-2.0
// The C++ side of the OTLP export test (otlp_export_test.py): a Worker on the
// memory transport with the tracing middleware, its tracer configured from
// the OTEL_* environment and its spans sent by the OTLP exporter and kept in
// memory too. It publishes and handles a few messages (one fails and is
// retried, then dead-lettered), flushes, and prints every span it recorded
// as one JSON line, then one line of the exporter's counts; the test
// compares them with what the receiver decoded.
//
//   otlp_export_peer
#include "span_recorder.hpp"

#include <babelqueue/json.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/otel/environment.hpp>
#include <babelqueue/otel/middleware.hpp>
#include <babelqueue/worker.hpp>

#include <iostream>
#include <memory>
#include <stdexcept>

namespace bq = babelqueue;
namespace otel = babelqueue::otel;

namespace {

// Hands each span to both sinks.
class Tee final : public otel::SpanSink {
 public:
  Tee(std::shared_ptr<otel::SpanSink> a, std::shared_ptr<otel::SpanSink> b) : a_(std::move(a)), b_(std::move(b)) {}
  void on_end(otel::SpanData&& span) noexcept override {
    otel::SpanData copy = span;
    a_->on_end(std::move(copy));
    b_->on_end(std::move(span));
  }

 private:
  std::shared_ptr<otel::SpanSink> a_, b_;
};

bq::Value attributes_json(const std::vector<otel::Attribute>& attributes) {
  bq::Value out = bq::Value::object({});
  for (const auto& a : attributes) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            out.as_object().set(a.key, bq::Value::object({{"string", v}}));
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            out.as_object().set(a.key, bq::Value::object({{"int", v}}));
          } else if constexpr (std::is_same_v<T, bool>) {
            out.as_object().set(a.key, bq::Value::object({{"bool", v}}));
          } else {
            out.as_object().set(a.key, bq::Value::object({{"double", v}}));
          }
        },
        a.value);
  }
  return out;
}

bq::Value span_json(const otel::SpanData& s) {
  bq::Value events = bq::Value::array({});
  for (const auto& e : s.events) {
    events.as_array().push_back(bq::Value::object(
        {{"name", e.name}, {"time", std::to_string(e.time_unix_nano)}, {"attributes", attributes_json(e.attributes)}}));
  }
  return bq::Value::object({{"trace_id", s.context.trace_id.hex()},
                            {"span_id", s.context.span_id.hex()},
                            {"parent_span_id", s.parent_span_id.valid() ? s.parent_span_id.hex() : ""},
                            {"parent_remote", s.parent_remote},
                            {"sampled", s.context.sampled},
                            {"trace_state", s.context.trace_state},
                            {"name", s.name},
                            {"kind", static_cast<std::int64_t>(s.kind)},
                            {"start", std::to_string(s.start_unix_nano)},
                            {"end", std::to_string(s.end_unix_nano)},
                            {"attributes", attributes_json(s.attributes)},
                            {"events", events},
                            {"status_code", static_cast<std::int64_t>(s.status)},
                            {"status_message", s.status_message}});
}

}  // namespace

int main() {
  auto env = otel::options_from_environment();
  if (!env.enabled) {
    std::cerr << "otlp_export_peer: set OTEL_EXPORTER_OTLP_ENDPOINT\n";
    return 2;
  }
  auto exporter = std::make_shared<otel::OtlpExporter>(env.exporter);
  auto recorder = std::make_shared<bq::test_support::SpanRecorder>();
  env.tracer.sink = std::make_shared<Tee>(exporter, recorder);
  auto tracer = std::make_shared<otel::Tracer>(env.tracer);

  bq::memory::Transport transport;
  bq::WorkerOptions o;
  o.default_queue = "orders";
  o.dead_letter = true;
  o.max_attempts = 2;
  o.poll_timeout = std::chrono::milliseconds(20);
  o.log = {};
  bq::Worker worker(transport, o);
  worker.use(std::make_shared<otel::Middleware>(tracer));
  worker.handle("urn:orders:created", [](const bq::Message&) {});
  worker.handle("urn:orders:failing", [](const bq::Message&) -> void { throw std::runtime_error("card declined"); });

  otel::SpanContext upstream = *otel::parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  upstream.trace_state = "vendor=abc";
  {
    const otel::ContextScope scope(upstream);
    if (!worker.publish("urn:orders:created", bq::Value::object({{"order_id", 1}}))) return 1;
  }
  if (!worker.publish("urn:orders:failing", bq::Value::object({{"order_id", 2}}), {.trace_id = "order-2"})) return 1;
  for (int i = 0; i < 3; ++i) (void)worker.drain();

  if (!exporter->force_flush(std::chrono::seconds(10))) {
    std::cerr << "otlp_export_peer: the flush did not finish\n";
    return 1;
  }
  for (const auto& span : recorder->spans()) std::cout << bq::to_json(span_json(span)).value() << "\n";
  const auto stats = exporter->stats();
  std::cout << bq::to_json(bq::Value::object({{"exported", static_cast<std::int64_t>(stats.exported)},
                                              {"dropped", static_cast<std::int64_t>(stats.dropped)},
                                              {"failed", static_cast<std::int64_t>(stats.failed)},
                                              {"requests", static_cast<std::int64_t>(stats.requests)}}))
                   .value()
            << "\n";
  exporter->shutdown(std::chrono::seconds(5));
  return 0;
}
