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
#include <babelqueue/data_writer.hpp>
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
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

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
using babelqueue::DataWriter;
using babelqueue::Envelope;
using babelqueue::MakeOptions;
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

// ---- typed messages (typed_message.hpp) ---------------------------------------
// The payloads as the structs a service publishes, each with both paths:
// BM_EncodeTyped measures to_value() + Envelope::make, BM_EncodeTypedDirect
// write_data() into the envelope (data_writer.hpp), the path
// Publisher::publish(message) takes when a type has it. The Value payloads of
// the other benchmarks are these structs' to_value(), so every path encodes
// the same bytes.

struct OrderCreated {
  static constexpr std::string_view urn = "urn:babel:orders:created";
  std::int64_t order_id = 0;
  Value to_value() const { return Value::object({{"order_id", order_id}}); }
  void write_data(DataWriter& out) const { out.begin_object().member("order_id", order_id).end_object(); }
  static OrderCreated from_value(const Value& v) { return {v["order_id"].as_int64()}; }
};

// One line item of the 4 KiB payload: every JSON kind, nesting down to depth
// 5 of the envelope, non-ASCII text and escapes. Deterministic in i.
struct LineItem {
  std::string sku;
  std::string name;
  std::int64_t qty = 0;
  double unit_price = 0;
  double weight_kg = 0;
  bool gift = false;
  std::optional<double> discount;
  std::string service;     // the second tag
  std::int64_t batch = 0;  // the third tag
  std::int64_t width_cm = 0;
  double height_cm = 0;
  std::int64_t depth_cm = 0;
  bool stackable = false;

  static LineItem make(int i) {
    static constexpr std::string_view kNames[] = {"Café crème", "Smørrebrød platter", "東京タワー model kit",
                                                  "Ελληνικό γιαούρτι", "Naïve résumé \"deluxe\" edition"};
    LineItem item;
    item.sku = "SKU-" + std::to_string(100000 + i * 7919);
    item.name = kNames[static_cast<std::size_t>(i) % std::size(kNames)];
    item.qty = (i * 7) % 13 + 1;
    item.unit_price = 9.99 + 0.25 * i;
    item.weight_kg = 0.125 * (i + 1);
    item.gift = i % 3 == 0;
    if (i % 4 != 0) item.discount = 0.05 * (i % 4);
    item.service = i % 2 == 0 ? "express" : "standard";
    item.batch = i;
    item.width_cm = 10 + i;
    item.height_cm = 2.5 * i;
    item.depth_cm = -i;
    return item;
  }

  Value to_value() const {
    return Value::object({
        {"sku", sku},
        {"name", name},
        {"qty", qty},
        {"unit_price", unit_price},
        {"weight_kg", weight_kg},
        {"gift", gift},
        {"discount", discount ? Value(*discount) : Value()},
        {"tags", Value::array({"fragile", service, batch})},
        {"dims", Value::object({{"cm", Value::object({{"w", width_cm}, {"h", height_cm}, {"d", depth_cm}})},
                                {"stackable", stackable}})},
    });
  }

  void write_data(DataWriter& out) const {
    out.begin_object()
        .member("sku", sku)
        .member("name", name)
        .member("qty", qty)
        .member("unit_price", unit_price)
        .member("weight_kg", weight_kg)
        .member("gift", gift)
        .member("discount", discount);
    out.key("tags").begin_array().value("fragile").value(service).value(batch).end_array();
    out.key("dims").begin_object();
    out.key("cm").begin_object().member("w", width_cm).member("h", height_cm).member("d", depth_cm).end_object();
    out.member("stackable", stackable).end_object();
    out.end_object();
  }

  static LineItem from_value(const Value& v) {
    LineItem item;
    item.sku = v["sku"].as_string();
    item.name = v["name"].as_string();
    item.qty = v["qty"].as_int64();
    item.unit_price = v["unit_price"].as_double();
    item.weight_kg = v["weight_kg"].as_double();
    item.gift = v["gift"].as_bool();
    if (!v["discount"].is_null()) item.discount = v["discount"].as_double();
    item.service = v["tags"].as_array().at(1).as_string();
    item.batch = v["tags"].as_array().at(2).as_int64();
    const Value& cm = v["dims"]["cm"];
    item.width_cm = cm["w"].as_int64();
    item.height_cm = cm["h"].as_double();
    item.depth_cm = cm["d"].as_int64();
    item.stackable = v["dims"]["stackable"].as_bool();
    return item;
  }
};

struct OrderSnapshot {
  static constexpr std::string_view urn = "urn:babel:orders:snapshot";
  std::int64_t order_id = 0;
  std::int64_t customer_id = 0;
  std::string customer_name;
  std::string customer_email;
  bool customer_vip = false;
  std::string customer_note;
  std::string currency;
  std::vector<LineItem> items;
  double total = 0;  // and a coupon, always null here

  Value to_value() const {
    Array lines;
    lines.reserve(items.size());
    for (const auto& item : items) lines.push_back(item.to_value());
    return Value::object({{"order_id", order_id},
                          {"customer", Value::object({{"id", customer_id},
                                                      {"name", customer_name},
                                                      {"email", customer_email},
                                                      {"vip", customer_vip},
                                                      {"note", customer_note}})},
                          {"currency", currency},
                          {"items", std::move(lines)},
                          {"total", total},
                          {"coupon", nullptr}});
  }

  void write_data(DataWriter& out) const {
    out.begin_object().member("order_id", order_id);
    out.key("customer")
        .begin_object()
        .member("id", customer_id)
        .member("name", customer_name)
        .member("email", customer_email)
        .member("vip", customer_vip)
        .member("note", customer_note)
        .end_object();
    out.member("currency", currency).key("items").begin_array();
    for (const auto& item : items) item.write_data(out);
    out.end_array().member("total", total).member("coupon", nullptr).end_object();
  }

  static OrderSnapshot from_value(const Value& v) {
    OrderSnapshot s;
    s.order_id = v["order_id"].as_int64();
    const Value& c = v["customer"];
    s.customer_id = c["id"].as_int64();
    s.customer_name = c["name"].as_string();
    s.customer_email = c["email"].as_string();
    s.customer_vip = c["vip"].as_bool();
    s.customer_note = c["note"].as_string();
    s.currency = v["currency"].as_string();
    for (const auto& item : v["items"].as_array()) s.items.push_back(LineItem::from_value(item));
    s.total = v["total"].as_double();
    return s;
  }
};

OrderCreated make_small_typed() { return {1042}; }

// Line items are added until the canonical data without its last two members
// (total and coupon) is at least 4 KiB.
OrderSnapshot make_4k_typed() {
  OrderSnapshot s;
  s.order_id = 1042;
  s.customer_id = 9007199254740993;
  s.customer_name = "Zoë Ångström";
  s.customer_email = "zoe@example.com";
  s.customer_vip = true;
  s.customer_note = "Leave at the door.\nRing twice — \"bitte\".";
  s.currency = "EUR";
  s.total = 1234.56;
  const std::size_t last_two = std::string_view(R"(,"total":1234.56,"coupon":null)").size();
  for (int i = 0; babelqueue::to_json(s.to_value()).value().size() < 4096 + last_two; ++i) {
    s.items.push_back(LineItem::make(i));
  }
  return s;
}

Payload make_small() {
  Payload p;
  p.urn = "urn:babel:orders:created";
  p.data = make_small_typed().to_value();
  p.options = fixed_options("orders");
  p.bytes = std::string(kOrderCreated);
  return p;
}

Payload make_4k() {
  Payload p;
  p.urn = "urn:babel:orders:snapshot";
  p.data = make_4k_typed().to_value();
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

// The same with only the queue given, as a publisher makes a new message:
// meta.id and trace_id are new UUIDs and created_at is read from the clock
// on every iteration (uuid.hpp: random bytes taken 256 at a time).
void BM_EncodeNewIds(benchmark::State& state, Size size) {
  const Payload& p = payload(size);
  babelqueue::MakeOptions options;
  options.queue = p.options.queue;
  std::size_t bytes = 0;
  {
    AllocationCounter allocations(state);
    for (auto _ : state) {
      auto env = Envelope::make(p.urn, p.data, options);
      std::string_view body = env->body();
      bytes = body.size();
      benchmark::DoNotOptimize(body);
    }
  }
  set_bytes(state, bytes);
}

// A typed message -> make(message, options) -> bytes: what
// Publisher::publish(message) does before the transport. Checked equal to
// what BM_Encode makes of the payload before it is timed.
template <class Message, class Make>
void encode_typed(benchmark::State& state, const Message& message, const Payload& p, Make make) {
  std::size_t bytes = 0;
  {
    auto probe = make(message, p.options);
    if (!probe) return state.SkipWithError(probe.error().message().c_str());
    if (probe->body() != Envelope::make(p.urn, p.data, p.options).value().body()) {
      return state.SkipWithError("the typed message encodes other bytes than the payload's Value");
    }
    bytes = probe->body().size();
  }
  {
    AllocationCounter allocations(state);
    for (auto _ : state) {
      auto env = make(message, p.options);
      std::string_view body = env->body();
      benchmark::DoNotOptimize(body);
    }
  }
  set_bytes(state, bytes);
}

template <class Make>
void encode_typed(benchmark::State& state, Size size, Make make) {
  static const OrderCreated small = make_small_typed();
  static const OrderSnapshot k4 = make_4k_typed();
  if (size == Size::small) return encode_typed(state, small, payload(size), make);
  encode_typed(state, k4, payload(size), make);
}

// Through to_value(), spelt out: Envelope::make(message) would take
// write_data, which these structs have too.
void BM_EncodeTyped(benchmark::State& state, Size size) {
  encode_typed(state, size, [](const auto& message, const MakeOptions& options) {
    return Envelope::make(std::remove_cvref_t<decltype(message)>::urn, message.to_value(), options);
  });
}

// write_data() straight into the envelope: Envelope::make(message).
void BM_EncodeTypedDirect(benchmark::State& state, Size size) {
  encode_typed(state, size,
               [](const auto& message, const MakeOptions& options) { return Envelope::make(message, options); });
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
BENCHMARK_CAPTURE(BM_EncodeNewIds, small, Size::small);
BENCHMARK_CAPTURE(BM_EncodeNewIds, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_EncodeTyped, small, Size::small);
BENCHMARK_CAPTURE(BM_EncodeTyped, 4k, Size::k4);
BENCHMARK_CAPTURE(BM_EncodeTypedDirect, small, Size::small);
BENCHMARK_CAPTURE(BM_EncodeTypedDirect, 4k, Size::k4);
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
