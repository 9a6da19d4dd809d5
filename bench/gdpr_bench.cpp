// SPDX-License-Identifier: Apache-2.0
// What field encryption costs per message, in one run next to the plain
// codec (docs/benchmarks.md, "Field encryption"): make (encode) against make
// and protect, decode against decode and unprotect, on the conformance
// suite's order-created envelope (order_id marked) and on a customer record
// with five marked values (a leaf, a nested leaf, two array elements, a
// container). AES-256-GCM on OpenSSL, one key.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/gdpr/aes_gcm_cipher.hpp>
#include <babelqueue/gdpr/protect.hpp>

#include <benchmark/benchmark.h>

namespace bq = babelqueue;
namespace gdpr = babelqueue::gdpr;

namespace {

struct Case {
  const char* urn;
  bq::Value data;
  bq::schema::Schema schema;
};

const Case& order() {
  static const Case c{"urn:babel:orders:created", bq::Value::object({{"order_id", 1042}}),
                      bq::schema::Schema::parse(
                          R"({"type":"object","properties":{"order_id":{"type":"integer","x-gdpr-sensitive":true}}})")
                          .value()};
  return c;
}

const Case& customer() {
  static const Case c{
      "urn:shop:customers:registered",
      bq::Value::object(
          {{"customer_id", 7},
           {"email", "alice@example.com"},
           {"profile", bq::Value::object({{"full_name", "Alice Unal"}, {"tier", "gold"}})},
           {"addresses", bq::Value::array({bq::Value::object({{"line", "Main St 1"}, {"country", "DE"}}),
                                           bq::Value::object({{"line", "Side Rd 2"}, {"country", "TR"}})})},
           {"card", bq::Value::object({{"pan", "4111111111111111"}, {"exp", bq::Value::array({12, 2030})}})},
           {"amount", 1234.5}}),
      bq::schema::Schema::parse(R"({"type":"object","properties":{
        "email":{"x-gdpr-sensitive":true},"profile":{"properties":{"full_name":{"x-gdpr-sensitive":true}}},
        "addresses":{"items":{"properties":{"line":{"x-gdpr-sensitive":true}}}},"card":{"x-gdpr-sensitive":true}}})")
          .value()};
  return c;
}

const gdpr::Cipher& cipher() {
  static const auto c = gdpr::AesGcmCipher::create({std::string(32, 'k')}).value();
  return *c;
}

bq::MakeOptions fixed() {
  bq::MakeOptions make;
  make.queue = "orders";
  make.trace_id = "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b";
  make.id = "f1e2d3c4-b5a6-4789-90ab-cdef01234567";
  make.created_at = 1749132727000;
  return make;
}

void BM_Make(benchmark::State& state, const Case& (*c)()) {
  const auto make = fixed();
  for (auto _ : state) benchmark::DoNotOptimize(bq::Envelope::make(c().urn, c().data, make));
}

void BM_MakeProtect(benchmark::State& state, const Case& (*c)()) {
  const auto make = fixed();
  for (auto _ : state) {
    auto env = bq::Envelope::make(c().urn, c().data, make).value();
    benchmark::DoNotOptimize(gdpr::protect(env, c().schema, cipher()));
  }
}

void BM_Decode(benchmark::State& state, const Case& (*c)()) {
  const std::string body(
      gdpr::protect(bq::Envelope::make(c().urn, c().data, fixed()).value(), c().schema, cipher()).value().body());
  for (auto _ : state) benchmark::DoNotOptimize(bq::Envelope::decode(body));
}

void BM_DecodeUnprotect(benchmark::State& state, const Case& (*c)()) {
  const std::string body(
      gdpr::protect(bq::Envelope::make(c().urn, c().data, fixed()).value(), c().schema, cipher()).value().body());
  for (auto _ : state) {
    auto env = bq::Envelope::decode(body).value();
    benchmark::DoNotOptimize(gdpr::unprotect(env, c().schema, cipher()));
  }
}

BENCHMARK_CAPTURE(BM_Make, order, &order);
BENCHMARK_CAPTURE(BM_MakeProtect, order, &order);
BENCHMARK_CAPTURE(BM_Decode, order, &order);
BENCHMARK_CAPTURE(BM_DecodeUnprotect, order, &order);
BENCHMARK_CAPTURE(BM_Make, customer, &customer);
BENCHMARK_CAPTURE(BM_MakeProtect, customer, &customer);
BENCHMARK_CAPTURE(BM_Decode, customer, &customer);
BENCHMARK_CAPTURE(BM_DecodeUnprotect, customer, &customer);

}  // namespace

BENCHMARK_MAIN();
