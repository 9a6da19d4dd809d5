// SPDX-License-Identifier: Apache-2.0
// What the optional middleware costs per message, in one run next to a
// plain handler (docs/benchmarks.md, "Middleware"): the payload schema check
// (consume side: data read from the envelope and checked; publish side: the
// Value checked), and the idempotency check-and-remember on each store, with
// and without the in-flight claim. Every iteration builds a fresh envelope
// (a new meta.id) and runs it through the handler, so the plain handler's
// time is the common part and the difference is the middleware's.
//
// The Redis store runs when BQ_BENCH_REDIS_URL names a server.
//
// Tracing (unsampled and sampled, with and without a traceparent header) and
// metrics are measured the same way (docs/benchmarks.md, "Observability").
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/idempotency/memory_store.hpp>
#include <babelqueue/idempotency/middleware.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/metrics/middleware.hpp>
#include <babelqueue/otel/middleware.hpp>
#include <babelqueue/redis/idempotency_store.hpp>
#include <babelqueue/schema/middleware.hpp>
#include <babelqueue/sqlite/idempotency_store.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

namespace bq = babelqueue;

namespace {

// The conformance suite's payload_schema schema and a valid order.
constexpr std::string_view kSchema = R"({"type":"object","required":["order_id"],"additionalProperties":false,
  "properties":{"order_id":{"type":"integer","minimum":1},"amount":{"type":"number","minimum":0},
  "currency":{"enum":["USD","EUR","TRY"]}}})";

const bq::Value& order() {
  static const bq::Value v = bq::Value::object({{"order_id", 1042}, {"amount", 99.9}, {"currency", "USD"}});
  return v;
}

// One message through handler: a fresh envelope each time.
template <class Handle>
void run_messages(benchmark::State& state, Handle&& handle, const bq::Headers& headers = {}) {
  bq::MakeOptions make;
  make.queue = "orders";
  make.trace_id = "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b";
  make.created_at = 1749132727000;
  std::uint64_t n = 0;
  const std::string run = bq::uuid_v4().substr(0, 8);
  for (auto _ : state) {
    make.id = run + "-" + std::to_string(++n);
    const auto env = bq::Envelope::make("urn:babel:orders:created", order(), make).value();
    const bq::Message message(env, "orders", headers);
    auto result = handle(message);
    benchmark::DoNotOptimize(result);
  }
}

const bq::MessageHandler& handler() {
  static const bq::MessageHandler h = [](const bq::Message& m) -> bq::Result<void> {
    benchmark::DoNotOptimize(m.id().data());
    return {};
  };
  return h;
}

void BM_PlainHandler(benchmark::State& state) {
  run_messages(state, [](const bq::Message& m) { return handler()(m); });
}
BENCHMARK(BM_PlainHandler);

void BM_SchemaConsume(benchmark::State& state) {
  auto provider = std::make_shared<bq::schema::MapProvider>();
  (void)provider->add("urn:babel:orders:created", kSchema);
  bq::schema::Middleware middleware(provider);
  run_messages(state, [&](const bq::Message& m) { return middleware.handle(m, handler()); });
}
BENCHMARK(BM_SchemaConsume);

void BM_SchemaValidateValue(benchmark::State& state) {
  const auto schema = bq::schema::Schema::parse(kSchema).value();
  for (auto _ : state) benchmark::DoNotOptimize(schema.valid(order()));
}
BENCHMARK(BM_SchemaValidateValue);

void idempotency_run(benchmark::State& state, const std::shared_ptr<bq::idempotency::Store>& store) {
  bq::idempotency::Options options;
  options.claim = state.range(0) == 1;
  options.log = {};
  bq::idempotency::Middleware middleware(store, options);
  run_messages(state, [&](const bq::Message& m) { return middleware.handle(m, handler()); });
  state.SetLabel(options.claim ? "claim" : "seen-set");
}

void BM_IdempotencyMemory(benchmark::State& state) {
  idempotency_run(state, std::make_shared<bq::idempotency::MemoryStore>());
}
BENCHMARK(BM_IdempotencyMemory)->Arg(0)->Arg(1);

void BM_IdempotencySqlite(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / ("bq-bench-idempotency-" + bq::uuid_v4());
  std::filesystem::create_directories(dir);
  {
    bq::sqlite::IdempotencyStore::Options o;
    o.path = (dir / "seen.db").string();
    std::shared_ptr<bq::idempotency::Store> store = bq::sqlite::IdempotencyStore::open(o).value();
    idempotency_run(state, store);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_IdempotencySqlite)->Arg(0)->Arg(1);

void BM_IdempotencyRedis(benchmark::State& state) {
  const char* url = std::getenv("BQ_BENCH_REDIS_URL");
  if (url == nullptr || *url == '\0') {
    state.SkipWithError("set BQ_BENCH_REDIS_URL to a Redis server");
    return;
  }
  bq::redis::register_idempotency_store();
  const std::string prefix = "bq-bench-" + bq::uuid_v4().substr(0, 8);
  auto opened =
      bq::idempotency::open_store(std::string(url) + (std::string(url).find('?') == std::string::npos ? "?" : "&") +
                                  "prefix=" + prefix + ":seen:&claim_prefix=" + prefix + ":claim:&ttl=60s");
  if (!opened) {
    state.SkipWithError(opened.error().message().c_str());
    return;
  }
  idempotency_run(state, std::shared_ptr<bq::idempotency::Store>(std::move(*opened)));
}
BENCHMARK(BM_IdempotencyRedis)->Arg(0)->Arg(1);

// ---- observability -----------------------------------------------------------------------

// Records nothing: a sampled span's cost without an export.
class DiscardingSink final : public bq::otel::SpanSink {
 public:
  void on_end(bq::otel::SpanData&& span) noexcept override { benchmark::DoNotOptimize(span.name.data()); }
};

std::shared_ptr<bq::otel::Tracer> tracer(bq::otel::Sampler sampler) {
  bq::otel::TracerOptions o;
  o.sampler = sampler;
  o.sink = std::make_shared<DiscardingSink>();
  return std::make_shared<bq::otel::Tracer>(o);
}

const bq::Headers& traceparent() {
  static const bq::Headers h{{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  return h;
}

// range(0): 1 = the delivery carries a traceparent, 0 = the synthetic parent
// from the trace_id (SHA-256).
void tracing_run(benchmark::State& state, bq::otel::Sampler sampler, bq::Middleware* inner) {
  bq::otel::Middleware middleware(tracer(sampler));
  const bool header = state.range(0) == 1;
  run_messages(
      state,
      [&](const bq::Message& m) {
        return middleware.handle(
            m, [&](const bq::Message& n) { return inner ? inner->handle(n, handler()) : handler()(n); });
      },
      header ? traceparent() : bq::Headers{});
  state.SetLabel(header ? "traceparent" : "no header");
}

void BM_TracingUnsampled(benchmark::State& state) { tracing_run(state, bq::otel::Sampler::always_off(), nullptr); }
BENCHMARK(BM_TracingUnsampled)->Arg(1)->Arg(0);

void BM_TracingSampled(benchmark::State& state) { tracing_run(state, bq::otel::Sampler::always_on(), nullptr); }
BENCHMARK(BM_TracingSampled)->Arg(1)->Arg(0);

// What a delivery costs the metrics middleware: handle() (two clock reads,
// two histograms) and the five events a handled message raises.
void metrics_message(bq::metrics::Middleware& metrics, const bq::Message& m) {
  metrics.on_event(bq::WorkerEvent{bq::WorkerEventKind::received, "orders"});
  metrics.on_event(bq::WorkerEvent{bq::WorkerEventKind::started, "orders"});
  metrics.on_event(bq::WorkerEvent{bq::WorkerEventKind::decoded, "orders", m.urn(), &m.envelope()});
}
void metrics_done(bq::metrics::Middleware& metrics, const bq::Message& m) {
  metrics.on_event(bq::WorkerEvent{bq::WorkerEventKind::handled, "orders", m.urn(), &m.envelope()});
  metrics.on_event(bq::WorkerEvent{bq::WorkerEventKind::finished, "orders"});
}

void BM_Metrics(benchmark::State& state) {
  bq::metrics::Middleware metrics;
  run_messages(state, [&](const bq::Message& m) {
    metrics_message(metrics, m);
    auto r = metrics.handle(m, handler());
    metrics_done(metrics, m);
    return r;
  });
}
BENCHMARK(BM_Metrics);

void BM_TracingUnsampledAndMetrics(benchmark::State& state) {
  bq::metrics::Middleware metrics;
  bq::otel::Middleware tracing(tracer(bq::otel::Sampler::always_off()));
  run_messages(
      state,
      [&](const bq::Message& m) {
        metrics_message(metrics, m);
        auto r = tracing.handle(m, [&](const bq::Message& n) { return metrics.handle(n, handler()); });
        metrics_done(metrics, m);
        return r;
      },
      traceparent());
}
BENCHMARK(BM_TracingUnsampledAndMetrics);

}  // namespace

BENCHMARK_MAIN();
