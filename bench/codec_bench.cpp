// SPDX-License-Identifier: Apache-2.0
// Codec benchmarks: what a producer (make), a consumer (decode + accepts), a
// router (decode + urn) and a retry (re-emit with attempts+1) cost, next to
// the fastest strict JSON parser in reach (simdjson DOM) and the most common
// one (nlohmann::json) on the same bytes. Each runs on two payloads:
//   /small - the conformance `order-created` envelope (~260 bytes)
//   /4k    - an envelope whose data is a ~4 KiB nested payload
//
// The binary replaces the global operator new/delete to count heap
// allocations; the BabelQueue benchmarks report them as `allocs_per_iter`.
// bench/ratios.py turns a run into the PASS/FAIL table of the targets
// documented in docs/benchmarks.md.
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/value.hpp>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <utility>

// ---- allocation counting ------------------------------------------------------
//
// Every replaceable allocation function of the binary funnels into these two.
// The counter is thread_local so that counting costs one add on the calling
// thread (no atomic: it would slow the allocation-heavy nlohmann baselines
// and flatter the ratios) and counts only the benchmark thread's allocations.

namespace {

thread_local std::uint64_t t_allocations = 0;

void* counted_alloc(std::size_t size, std::size_t alignment) noexcept {
  ++t_allocations;
  if (size == 0) size = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(size);
  // aligned_alloc wants a size that is a multiple of the alignment.
  return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}

void* counted_alloc_or_throw(std::size_t size, std::size_t alignment) {
  void* p = counted_alloc(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

constexpr auto kDefaultAlign = alignof(std::max_align_t);

}  // namespace

void* operator new(std::size_t size) { return counted_alloc_or_throw(size, kDefaultAlign); }
void* operator new[](std::size_t size) { return counted_alloc_or_throw(size, kDefaultAlign); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return counted_alloc(size, kDefaultAlign); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return counted_alloc(size, kDefaultAlign); }
void* operator new(std::size_t size, std::align_val_t al) {
  return counted_alloc_or_throw(size, static_cast<std::size_t>(al));
}
void* operator new[](std::size_t size, std::align_val_t al) {
  return counted_alloc_or_throw(size, static_cast<std::size_t>(al));
}
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return counted_alloc(size, static_cast<std::size_t>(al));
}
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return counted_alloc(size, static_cast<std::size_t>(al));
}

// malloc, aligned_alloc and free pair up, so every delete is a free.
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using babelqueue::Array;
using babelqueue::Envelope;
using babelqueue::Object;
using babelqueue::Value;

// Counts the allocations of a benchmark's timed loop and reports them per
// iteration as the `allocs_per_iter` counter.
class AllocationCounter {
 public:
  explicit AllocationCounter(benchmark::State& state) : state_(state), start_(t_allocations) {}
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  ~AllocationCounter() {
    state_.counters["allocs_per_iter"] =
        benchmark::Counter(static_cast<double>(t_allocations - start_), benchmark::Counter::kAvgIterations);
  }

 private:
  benchmark::State& state_;
  std::uint64_t start_;
};

// ---- payloads -------------------------------------------------------------------

// The conformance suite's `order-created` envelope, byte for byte.
constexpr std::string_view kOrderCreated =
    R"({"job":"urn:babel:orders:created","trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b","data":{"order_id":1042},)"
    R"("meta":{"id":"f1e2d3c4-b5a6-4789-90ab-cdef01234567","queue":"orders","lang":"php","schema_version":1,)"
    R"("created_at":1749132727000},"attempts":0})";

struct Payload {
  std::string urn;
  Value data;                       // what BM_Encode turns into an envelope
  babelqueue::MakeOptions options;  // fixed id/trace_id/created_at: no UUID or clock work is measured
  std::string bytes;                // what the decode benchmarks and the baselines read
};

babelqueue::MakeOptions fixed_options(std::string queue) {
  babelqueue::MakeOptions options;
  options.queue = std::move(queue);
  options.trace_id = "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b";
  options.id = "f1e2d3c4-b5a6-4789-90ab-cdef01234567";
  options.created_at = 1749132727000;
  return options;
}

Payload make_small() {
  Payload p;
  p.urn = "urn:babel:orders:created";
  p.data = Value::object({{"order_id", 1042}});
  p.options = fixed_options("orders");
  p.bytes = std::string(kOrderCreated);
  return p;
}

// One line item of the 4 KiB payload: every JSON kind, nesting down to depth
// 5 of the envelope, non-ASCII text and escapes. Deterministic in i.
Value line_item(int i) {
  static constexpr std::string_view kNames[] = {"Café crème", "Smørrebrød platter", "東京タワー model kit",
                                                "Ελληνικό γιαούρτι", "Naïve résumé \"deluxe\" edition"};
  const auto n = static_cast<std::size_t>(i);
  std::string sku = "SKU-";
  sku.append(std::to_string(100000 + i * 7919));
  return Value::object({
      {"sku", std::move(sku)},
      {"name", kNames[n % std::size(kNames)]},
      {"qty", (i * 7) % 13 + 1},
      {"unit_price", 9.99 + 0.25 * i},
      {"weight_kg", 0.125 * (i + 1)},
      {"gift", i % 3 == 0},
      {"discount", i % 4 == 0 ? Value() : Value(0.05 * (i % 4))},
      {"tags", Value::array({"fragile", i % 2 == 0 ? "express" : "standard", i})},
      {"dims",
       Value::object({{"cm", Value::object({{"w", 10 + i}, {"h", 2.5 * i}, {"d", -i}})}, {"stackable", false}})},
  });
}

Value make_4k_data() {
  Object data;
  data.set("order_id", 1042);
  data.set("customer", Value::object({{"id", std::int64_t{9007199254740993}},
                                      {"name", "Zoë Ångström"},
                                      {"email", "zoe@example.com"},
                                      {"vip", true},
                                      {"note", "Leave at the door.\nRing twice — \"bitte\"."}}));
  data.set("currency", "EUR");
  data.set("items", Array());
  // Add line items until the canonical data is at least 4 KiB.
  for (int i = 0; babelqueue::to_json(Value(data)).value().size() < 4096; ++i) {
    data.find("items")->as_array().push_back(line_item(i));
  }
  data.set("total", 1234.56);
  data.set("coupon", nullptr);
  return Value(std::move(data));
}

Payload make_4k() {
  Payload p;
  p.urn = "urn:babel:orders:snapshot";
  p.data = make_4k_data();
  p.options = fixed_options("orders");
  // The canonical compact bytes, as this SDK produces them.
  p.bytes = std::string(Envelope::make(p.urn, p.data, p.options).value().body());
  return p;
}

enum class Size { small, k4 };

const Payload& payload(Size size) {
  static const Payload small = make_small();
  static const Payload k4 = make_4k();
  return size == Size::small ? small : k4;
}

void set_bytes(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
}

// ---- BabelQueue -----------------------------------------------------------------

// Fields -> Envelope::make -> bytes (body() is the envelope's own buffer, what
// a transport hands to the broker client).
void BM_Encode(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  std::size_t bytes = 0;
  {
    auto probe = Envelope::make(p.urn, p.data, p.options);
    if (!probe) return state.SkipWithError(probe.error().message().c_str());
    bytes = probe->body().size();
  }
  {
    AllocationCounter allocations(state);
    for (auto _ : state) {
      auto env = Envelope::make(p.urn, p.data, p.options);
      std::string_view body = env->body();
      benchmark::DoNotOptimize(body);
    }
  }
  set_bytes(state, bytes);
}

// Bytes -> Envelope::decode -> accepts(): what a consumer does before it
// dispatches to a handler.
void BM_DecodeAccept(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  {
    // Warm-up: grows this thread's parser to the document once, outside the
    // measurement.
    auto probe = Envelope::decode(p.bytes);
    if (!probe || !accepts(*probe)) return state.SkipWithError("the payload does not decode to an accepted envelope");
  }
  {
    AllocationCounter allocations(state);
    for (auto _ : state) {
      auto env = Envelope::decode(p.bytes);
      bool ok = env.has_value() && accepts(*env).accepted();
      benchmark::DoNotOptimize(ok);
    }
  }
  set_bytes(state, p.bytes.size());
}

// Bytes -> Envelope::decode -> urn(), data never touched: what a router does.
void BM_DecodeRoute(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  {
    auto probe = Envelope::decode(p.bytes);
    if (!probe || probe->urn() != p.urn) return state.SkipWithError("the payload does not decode to its URN");
  }
  {
    AllocationCounter allocations(state);
    for (auto _ : state) {
      auto env = Envelope::decode(p.bytes);
      std::string_view urn = env->urn();
      benchmark::DoNotOptimize(urn);
    }
  }
  set_bytes(state, p.bytes.size());
}

// A decoded envelope -> encode_with_attempts(attempts + 1): the body a retry
// publishes again.
void BM_Retry(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  auto decoded = Envelope::decode(p.bytes);
  if (!decoded) return state.SkipWithError(decoded.error().detail.c_str());
  const Envelope& env = *decoded;
  if (!env.encode_with_attempts(env.attempts() + 1)) return state.SkipWithError("the envelope is not re-emitted");
  {
    AllocationCounter allocations(state);
    for (auto _ : state) {
      auto out = env.encode_with_attempts(env.attempts() + 1);
      benchmark::DoNotOptimize(out->data());
    }
  }
  set_bytes(state, p.bytes.size());
}

// ---- baselines ------------------------------------------------------------------

// The fastest strict (fully validating) parse: simdjson DOM with a reused
// parser on bytes padded once.
void BM_BaselineSimdjsonParse(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(p.bytes);
  simdjson::dom::element probe;
  if (parser.parse(padded).get(probe) != simdjson::SUCCESS) return state.SkipWithError("simdjson rejects the payload");
  for (auto _ : state) {
    simdjson::dom::element doc;
    auto error = parser.parse(padded).get(doc);
    benchmark::DoNotOptimize(error);
    benchmark::DoNotOptimize(doc);
  }
  set_bytes(state, p.bytes.size());
}

void BM_BaselineNlohmannParse(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  for (auto _ : state) {
    auto doc = nlohmann::ordered_json::parse(p.bytes);
    benchmark::DoNotOptimize(doc);
  }
  set_bytes(state, p.bytes.size());
}

void BM_BaselineNlohmannDump(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  const auto doc = nlohmann::ordered_json::parse(p.bytes);
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string out = doc.dump();
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  set_bytes(state, bytes);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Encode, small, Size::small);
BENCHMARK_CAPTURE(BM_Encode, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_DecodeAccept, small, Size::small);
BENCHMARK_CAPTURE(BM_DecodeAccept, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_DecodeRoute, small, Size::small);
BENCHMARK_CAPTURE(BM_DecodeRoute, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_Retry, small, Size::small);
BENCHMARK_CAPTURE(BM_Retry, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_BaselineSimdjsonParse, small, Size::small);
BENCHMARK_CAPTURE(BM_BaselineSimdjsonParse, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_BaselineNlohmannParse, small, Size::small);
BENCHMARK_CAPTURE(BM_BaselineNlohmannParse, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_BaselineNlohmannDump, small, Size::small);
BENCHMARK_CAPTURE(BM_BaselineNlohmannDump, 4k, Size::k4);

// --payloads_to=DIR writes the two payloads' bytes (small.json, 4k.json) and
// exits, so that other codecs (bench/python_codec.py) can be measured on the
// same bytes; every other argument goes to Google Benchmark.
int main(int argc, char** argv) {
  constexpr std::string_view kPayloadsTo = "--payloads_to=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kPayloadsTo.size()) != kPayloadsTo) continue;
    const std::string dir(arg.substr(kPayloadsTo.size()));
    for (const auto& [name, size] : {std::pair{"small.json", Size::small}, std::pair{"4k.json", Size::k4}}) {
      std::ofstream file(dir + "/" + name, std::ios::binary);
      file << payload(size).bytes;
      if (!file.flush()) {
        std::cerr << "cannot write " << dir << "/" << name << "\n";
        return 1;
      }
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Which JSON kernel the decoder (and the simdjson baseline, whose parser
  // takes the same process-wide choice) runs: BABELQUEUE_JSON_KERNEL=portable
  // measures the portable one.
  benchmark::AddCustomContext("json_kernel", std::string(babelqueue::json_kernel()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
