// SPDX-License-Identifier: Apache-2.0
#include "fixed_make_options.hpp"

#include <babelqueue/clock.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/uuid.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>
#include <thread>

namespace bq = babelqueue;

namespace {

constexpr const char* kTrace = bq::test_support::kFixedTrace;
constexpr const char* kId = bq::test_support::kFixedId;

bq::MakeOptions fixed(std::string queue = "orders") { return bq::test_support::fixed_make_options(std::move(queue)); }

bq::Envelope decode(std::string_view body) { return bq::Envelope::decode(body).value(); }

// ---- make ------------------------------------------------------------------------

TEST(EnvelopeMake, WritesTheCanonicalFrame) {
  auto env = bq::Envelope::make("urn:babel:orders:created", bq::Value::object({{"order_id", 1042}}), fixed()).value();
  EXPECT_EQ(
      env.body(),
      R"({"job":"urn:babel:orders:created","trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b","data":{"order_id":1042},)"
      R"("meta":{"id":"f1e2d3c4-b5a6-4789-90ab-cdef01234567","queue":"orders","lang":"cpp","schema_version":1,)"
      R"("created_at":1749132727000},"attempts":0})");
  EXPECT_EQ(env.urn(), "urn:babel:orders:created");
  EXPECT_EQ(env.trace_id(), kTrace);
  EXPECT_EQ(env.id(), kId);
  EXPECT_EQ(env.queue(), "orders");
  EXPECT_EQ(env.lang(), "cpp");
  EXPECT_EQ(env.schema_version(), 1);
  EXPECT_EQ(env.created_at(), 1749132727000);
  EXPECT_EQ(env.attempts(), 0);
  EXPECT_TRUE(bq::accepts(env));
  EXPECT_EQ(env.encode().value(), env.body());
}

TEST(EnvelopeMake, TrimsTheUrnAndRejectsABlankOne) {
  EXPECT_EQ(bq::Envelope::make("  urn:babel:a:b\t", {}).value().urn(), "urn:babel:a:b");
  auto blank = bq::Envelope::make(" \n ", {});
  ASSERT_FALSE(blank);
  EXPECT_EQ(blank.error().code(), bq::Errc::invalid_argument);
}

TEST(EnvelopeMake, NullDataIsAnEmptyObjectAndOtherKindsAreRefused) {
  EXPECT_EQ(bq::Envelope::make("urn:a", bq::Value()).value().data_json(), "{}");
  EXPECT_EQ(bq::Envelope::make("urn:a", bq::Value::object()).value().data_json(), "{}");
  EXPECT_EQ(bq::Envelope::make("urn:a", bq::Value::array({1})).error().code(), bq::Errc::invalid_argument);
  EXPECT_FALSE(bq::Envelope::make("urn:a", bq::Value::object({{"x", std::nan("")}})));
  EXPECT_EQ(bq::Envelope::make("urn:a", bq::Value::object({{"x", std::string("\xff")}})).error().code(),
            bq::Errc::invalid_utf8);
}

TEST(EnvelopeMake, MintsDistinctUuidV4IdsAndContinuesATrace) {
  auto a = bq::Envelope::make("urn:a", {}).value();
  auto b = bq::Envelope::make("urn:a", {}, {.queue = "q", .trace_id = std::string(a.trace_id())}).value();
  EXPECT_NE(a.id(), a.trace_id());
  EXPECT_EQ(b.trace_id(), a.trace_id());
  EXPECT_NE(b.id(), a.id());
  for (std::string_view id : {a.id(), a.trace_id()}) {
    ASSERT_EQ(id.size(), 36U);
    EXPECT_EQ(id[14], '4');                                          // version 4
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos);  // RFC 4122 variant
  }
  auto blank_trace = bq::Envelope::make("urn:a", {}, {.queue = "q", .trace_id = "   "}).value();
  EXPECT_EQ(blank_trace.trace_id().size(), 36U);  // a blank trace id means "start one"
}

TEST(EnvelopeMake, CreatedAtIsEpochMilliseconds) {
  const auto before = bq::now_epoch_ms();
  auto env = bq::Envelope::make("urn:a", {}).value();
  EXPECT_GE(*env.created_at(), before);
  EXPECT_LE(*env.created_at(), bq::now_epoch_ms());
  EXPECT_GT(*env.created_at(), 1'600'000'000'000);  // milliseconds, not seconds
}

TEST(Uuid, UniqueAcrossThreads) {
  std::vector<std::set<std::string>> per_thread(4);
  std::vector<std::thread> threads;
  for (auto& ids : per_thread) {
    threads.emplace_back([&ids] {
      for (int i = 0; i < 5000; ++i) ids.insert(bq::uuid_v4());
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& ids : per_thread) all.insert(ids.begin(), ids.end());
  EXPECT_EQ(all.size(), 20000U);
}

// ---- typed messages -------------------------------------------------------------

struct OrderCreated {
  static constexpr std::string_view urn = "urn:babel:orders:created";
  std::int64_t order_id = 0;
  std::string currency;
  bq::Value to_value() const { return bq::Value::object({{"order_id", order_id}, {"currency", currency}}); }
  static OrderCreated from_value(const bq::Value& v) { return {v["order_id"].as_int64(), v["currency"].as_string()}; }
};
static_assert(bq::TypedMessage<OrderCreated>);

TEST(TypedMessage, MakeAndReadBack) {
  auto env = bq::Envelope::make(OrderCreated{1042, "EUR"}, fixed()).value();
  EXPECT_EQ(env.urn(), OrderCreated::urn);
  EXPECT_EQ(env.data_json(), R"({"order_id":1042,"currency":"EUR"})");
  const auto back = decode(env.body()).data_as<OrderCreated>();
  EXPECT_EQ(back.order_id, 1042);
  EXPECT_EQ(back.currency, "EUR");
}

// ---- decode -------------------------------------------------------------------

TEST(EnvelopeDecode, KeepsDataBytesUntilAsked) {
  const std::string body =
      R"({"job":"urn:a","trace_id":"t","data":{"x":1.10,"y":[1, 2]},"meta":{"schema_version":1},"attempts":2})";
  auto env = decode(body);
  EXPECT_EQ(env.data_json(), R"({"x":1.10,"y":[1, 2]})");
  EXPECT_EQ(env.data()["x"].as_double(), 1.1);
  EXPECT_EQ(env.attempts(), 2);
  EXPECT_EQ(env.body(), body);
}

TEST(EnvelopeDecode, EveryRejectionIsTyped) {
  struct Case {
    std::string body;
    bq::Rejection reason;
  };
  const std::vector<Case> cases = {
      {"", bq::Rejection::invalid_json},
      {"not json", bq::Rejection::invalid_json},
      {"[1]", bq::Rejection::not_an_object},
      {"7", bq::Rejection::not_an_object},
      {"{\"job\":\"\xff\"}", bq::Rejection::invalid_utf8},
      {R"({"job":"a","job":"b"})", bq::Rejection::duplicate_key},
      {R"({"meta":{"id":"a","id":"b"}})", bq::Rejection::duplicate_key},
      {R"({"data":)" + std::string(600, '[') + std::string(600, ']') + "}", bq::Rejection::too_deep},
  };
  for (const auto& c : cases) {
    auto r = bq::Envelope::decode(c.body);
    ASSERT_FALSE(r) << c.body;
    EXPECT_EQ(r.error().reason, c.reason) << c.body << " -> " << r.error().detail;
    EXPECT_FALSE(r.error().detail.empty());
  }
  auto big = bq::Envelope::decode(std::string(100, ' ') + "{}", {.max_bytes = 64});
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().reason, bq::Rejection::too_large);
  auto shallow = bq::Envelope::decode(R"({"data":{"a":{"b":{}}}})", {.max_depth = 3});
  ASSERT_FALSE(shallow);
  EXPECT_EQ(shallow.error().reason, bq::Rejection::too_deep);
  EXPECT_TRUE(bq::Envelope::decode(R"({"data":{"a":{}}})", {.max_depth = 3}));
}

TEST(EnvelopeDecode, ValueThrowsATypedError) {
  try {
    (void)bq::Envelope::decode("[]").value();
    FAIL();
  } catch (const bq::Error& e) {
    EXPECT_EQ(e.code(), bq::Errc::rejected);
    EXPECT_NE(std::string(e.what()).find("not_an_object"), std::string::npos);
  }
}

TEST(EnvelopeDecode, ForbiddenKeysWarnThroughTheHookAndAreDropped) {
  std::vector<std::string> seen;
  bq::DecodeOptions options;
  options.on_warning = [&](std::string_view p) { seen.emplace_back(p); };
  auto env =
      bq::Envelope::decode(
          R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1,"ts":1},"attempts":0,"timestamp":2})",
          options)
          .value();
  EXPECT_EQ(seen, (std::vector<std::string>{"/meta/ts", "/timestamp"}));
  EXPECT_EQ(env.warnings(), seen);
  EXPECT_EQ(env.encode().value(),
            R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0})");
}

TEST(EnvelopeDecode, ReadsEveryMemberWhateverTheSpacingAndEscapes) {
  // White space around every token, escapes in keys and values, unknown keys
  // holding containers: each member's bytes are found where they are.
  const std::string data = R"({ "x" : [ 1 , {"y":null} , -0.5e3 ] , "z":"\"}]" , "e" : {} })";
  const std::string body =
      " {\t\"job\" : \"urn:a\\u0062\" ,\n \"trace_id\":\"t\" , \"data\" : " + data +
      R"( , "meta" : { "schema_version" : 1 , "id" : "i\n" , "extra" : [ { } ] ,)" +
      R"( "created_at" : 12 } , "attempts" : 3 , "x-unknown" : { "a" : [ ] } , "k\u0065y" : true )" + "}\r\n";
  auto env = decode(body);
  EXPECT_EQ(env.urn(), "urn:ab");
  EXPECT_EQ(env.trace_id(), "t");
  EXPECT_EQ(env.data_json(), data);
  EXPECT_EQ(env.data()["z"].as_string(), "\"}]");
  EXPECT_EQ(env.id(), "i\n");
  EXPECT_EQ(env.schema_version(), 1);
  EXPECT_EQ(env.created_at(), 12);
  EXPECT_EQ(env.attempts(), 3);
  EXPECT_TRUE(bq::accepts(env));
  EXPECT_EQ(env.body(), body);
  EXPECT_EQ(env.encode().value(),
            R"({"job":"urn:a\u0062","trace_id":"t","data":{"x":[1,{"y":null},-0.5e3],"z":"\"}]","e":{}},)"
            R"("meta":{"id":"i\n","schema_version":1,"created_at":12,"extra":[{}]},"attempts":3,)"
            R"("x-unknown":{"a":[]},"k\u0065y":true})");
}

TEST(EnvelopeDecode, NumbersNoMachineTypeHoldsAreValidJson) {
  // Valid JSON whatever their size: kept as bytes in data, read as text.
  const std::string body =
      R"({"job":"urn:a","trace_id":"t","data":{"big":123456789012345678901234567890,"huge":1e400},)"
      R"("meta":{"schema_version":1},"attempts":0})";
  auto env = decode(body);
  EXPECT_TRUE(bq::accepts(env));
  EXPECT_EQ(env.data_json(), R"({"big":123456789012345678901234567890,"huge":1e400})");
  EXPECT_EQ(env.data()["huge"].kind(), bq::Value::Kind::number_text);
  EXPECT_EQ(env.data()["big"].kind(), bq::Value::Kind::number_text);
}

TEST(EnvelopeDecode, DepthIsCountedInsideEveryMember) {
  // data at depth 2, an unknown meta member at depth 3.
  EXPECT_TRUE(bq::Envelope::decode(R"({"data":[[1]],"meta":{"x":[]}})", {.max_depth = 3}));
  for (const char* body : {R"({"data":[[[1]]]})", R"({"meta":{"x":[[]]}})", R"({"other":{"a":{"b":{}}}})"}) {
    auto r = bq::Envelope::decode(body, {.max_depth = 3});
    ASSERT_FALSE(r) << body;
    EXPECT_EQ(r.error().reason, bq::Rejection::too_deep) << body;
  }
  auto meta = bq::Envelope::decode(R"({"meta":{}})", {.max_depth = 1});
  ASSERT_FALSE(meta);
  EXPECT_EQ(meta.error().reason, bq::Rejection::too_deep);
}

TEST(EnvelopeDecode, WarningsAreToldOnceEvenWhenTheBodyIsRejectedLater) {
  int told = 0;
  bq::DecodeOptions options;
  options.on_warning = [&](std::string_view) { ++told; };
  auto r = bq::Envelope::decode(R"({"timestamp":1,"job":"a","job":"b"})", options);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, bq::Rejection::duplicate_key);
  EXPECT_LE(told, 1);
}

TEST(JsonKernel, IsASimdjsonKernelAndTheEnvironmentForcesThePortableOne) {
  const std::string_view kernel = bq::json_kernel();
  const char* forced = std::getenv("BABELQUEUE_JSON_KERNEL");
  if (forced != nullptr && std::string_view(forced) == "portable") {
    EXPECT_EQ(kernel, "fallback");
  } else {
    const std::set<std::string_view> known{"icelake", "haswell", "westmere", "arm64", "ppc64", "fallback"};
    EXPECT_TRUE(known.count(kernel) == 1) << kernel;
  }
}

// ---- accepts ------------------------------------------------------------------------

TEST(Accepts, ChecksTheRulesInOrder) {
  auto reason = [](std::string_view body) {
    auto verdict = bq::accepts(decode(body));
    return verdict ? std::string("accepted") : std::string(bq::to_string(*verdict.reason()));
  };
  EXPECT_EQ(reason(R"({})"), "missing_urn");
  EXPECT_EQ(reason(R"({"job":"u"})"), "missing_meta");
  EXPECT_EQ(reason(R"({"job":"u","meta":{}})"), "unsupported_schema_version");
  EXPECT_EQ(reason(R"({"job":"u","meta":{"schema_version":2}})"), "unsupported_schema_version");
  EXPECT_EQ(reason(R"({"job":"u","meta":{"schema_version":1}})"), "invalid_data");
  EXPECT_EQ(reason(R"({"job":"u","meta":{"schema_version":1},"data":{}})"), "missing_trace_id");
  EXPECT_EQ(reason(R"({"job":"u","meta":{"schema_version":1},"data":{},"trace_id":"t","attempts":-1})"),
            "invalid_attempts");
  EXPECT_EQ(reason(R"({"job":"u","meta":{"schema_version":1},"data":{},"trace_id":"t"})"), "accepted");
  EXPECT_EQ(reason(R"({"job":" ","urn":"u","meta":{"schema_version":1},"data":{},"trace_id":"t"})"), "accepted");
}

// ---- re-emit ----------------------------------------------------------------------

TEST(EnvelopeReemit, RetryChangesOnlyAttempts) {
  const std::string body =
      R"({"job":"urn:a","trace_id":"t","data":{"big":123456789012345678901234567890,"f":1.10,"e":1E5},)"
      R"("meta":{"id":"i","queue":"q","lang":"cobol","schema_version":1,"created_at":1,"x":{"y":[]}},"attempts":4,"x-top":[null]})";
  auto env = decode(body);
  std::string expected = body;
  expected.replace(expected.find("\"attempts\":4"), 12, "\"attempts\":5");
  EXPECT_EQ(env.encode_with_attempts(5).value(), expected);
  EXPECT_EQ(env.encode().value(), body);
}

TEST(EnvelopeReemit, RejectedEnvelopesAreNeverReemitted) {
  auto env = decode(R"({"job":"u","meta":{"schema_version":2}})");
  EXPECT_EQ(env.encode().error().code(), bq::Errc::rejected);
}

TEST(EnvelopeReemit, SetAttemptsIsWhatIsWritten) {
  auto env = decode(R"({"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":1})");
  env.set_attempts(3);
  EXPECT_EQ(env.encode().value(), R"({"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":3})");
}

TEST(EnvelopeReemit, WithTraceIdChangesOnlyTheTraceId) {
  const std::string body =
      R"({"job":"urn:a","trace_id":"t","data":{"f":1.10},"meta":{"id":"i","queue":"q","schema_version":1,)"
      R"("created_at":1,"x":2},"attempts":4,"x-top":[null]})";
  auto env = decode(body);
  auto moved = env.with_trace_id("0af76519-16cd-43dd-8448-eb211c80319c").value();
  std::string expected = body;
  expected.replace(expected.find("\"t\""), 3, "\"0af76519-16cd-43dd-8448-eb211c80319c\"");
  EXPECT_EQ(moved.body(), expected);
  EXPECT_EQ(moved.trace_id(), "0af76519-16cd-43dd-8448-eb211c80319c");
  EXPECT_EQ(moved.id(), "i");
  EXPECT_EQ(moved.attempts(), 4);
  EXPECT_EQ(env.with_trace_id(" ").error().code(), bq::Errc::invalid_argument);
  EXPECT_EQ(env.with_trace_id("\xff").error().code(), bq::Errc::invalid_utf8);
  EXPECT_EQ(decode(R"({"job":"u","meta":{"schema_version":2}})").with_trace_id("t").error().code(), bq::Errc::rejected);
}

// ---- dead letter ----------------------------------------------------------------------

bq::DeadLetter block(std::string reason = "failed") {
  bq::DeadLetter b;
  b.reason = std::move(reason);
  b.error = "Payment gateway timeout";
  b.exception = "app::GatewayTimeout";
  b.failed_at = 1749132730000;
  b.original_queue = "orders";
  b.attempts = 3;
  b.lang = "cpp";
  return b;
}

TEST(DeadLetter, AllSevenKeysInOrderWithNulls) {
  std::string out;
  auto b = block();
  b.exception.reset();
  bq::write_dead_letter(out, b).value();
  EXPECT_EQ(out, R"({"reason":"failed","error":"Payment gateway timeout","exception":null,"failed_at":1749132730000,)"
                 R"("original_queue":"orders","attempts":3,"lang":"cpp"})");
  auto made = bq::DeadLetter::make(bq::DeadLetterReason::unknown_urn, "q", 2);
  EXPECT_EQ(made.reason, "unknown_urn");
  EXPECT_EQ(made.lang, "cpp");
  EXPECT_FALSE(made.error);
  EXPECT_GT(made.failed_at, 0);
}

TEST(DeadLetter, AcceptedEnvelopeGainsTheBlockAfterAttempts) {
  const std::string body =
      R"({"job":"u","trace_id":"t","data":{"a":1},"meta":{"schema_version":1},"attempts":3,"z":0})";
  auto out = decode(body).encode_dead_letter(block()).value();
  EXPECT_EQ(out,
            R"({"job":"u","trace_id":"t","data":{"a":1},"meta":{"schema_version":1},"attempts":3,)"
            R"("dead_letter":{"reason":"failed","error":"Payment gateway timeout","exception":"app::GatewayTimeout",)"
            R"("failed_at":1749132730000,"original_queue":"orders","attempts":3,"lang":"cpp"},"z":0})");
  auto again = decode(out);
  EXPECT_EQ(again.dead_letter(), block());
  // A second dead-lettering replaces the block instead of adding a key.
  auto twice = again.encode_dead_letter(block("unknown_urn")).value();
  EXPECT_EQ(decode(twice).dead_letter()->reason, "unknown_urn");
}

TEST(DeadLetter, RejectedObjectKeepsEveryByte) {
  const std::string body = "{ \"job\" : \"u\",\n \"meta\": {\"schema_version\": 2}, \"timestamp\": 1 }\n";
  auto out = decode(body).encode_dead_letter(block("poison")).value();
  std::string block_json;
  bq::write_dead_letter(block_json, block("poison")).value();
  EXPECT_EQ(out, "{ \"job\" : \"u\",\n \"meta\": {\"schema_version\": 2}, \"timestamp\": 1 ,\"dead_letter\":" +
                     block_json + "}\n");
  EXPECT_EQ(decode("{}").encode_dead_letter(block("poison")).value(), "{\"dead_letter\":" + block_json + "}");
}

TEST(DeadLetter, BodiesThatAreNotObjectsTravelUnchanged) {
  for (std::string body : {"not json", "[1,2]", "{\"a\":1,\"a\":2}", "\xff\xfe"}) {
    EXPECT_EQ(bq::dead_letter_body(body, block("poison")), body);
  }
}

TEST(DeadLetter, ExceptionTypeNamesAreDemangled) {
  EXPECT_EQ(bq::exception_type_name(std::runtime_error("x")), "std::runtime_error");
  try {
    throw std::out_of_range("x");
  } catch (...) {
    EXPECT_EQ(bq::current_exception_type_name(), "std::out_of_range");
  }
}

}  // namespace

// A whole envelope followed by more bytes is reported as what it is —
// trailing content, at the byte where it starts — not as a document that
// "ended early"; a body that really is cut short still says so.
TEST(EnvelopeDecode, TrailingBytesAfterAWholeEnvelopeAreNamedAsSuch) {
  const std::string body = R"({"job":"u","trace_id":"t","data":{"s":"}]"},"meta":{"schema_version":1},"attempts":0})";
  for (const std::string tail : {" x", "{}", "}", "]", " 1", "\"x\"", ",", "\n\tnull", "[]"}) {
    auto decoded = bq::Envelope::decode(body + tail);
    ASSERT_FALSE(decoded) << tail;
    EXPECT_EQ(decoded.error().reason, bq::Rejection::invalid_json) << tail;
    const std::string where = "trailing content after the envelope object, at byte ";
    EXPECT_NE(decoded.error().detail.find(where), std::string::npos) << tail << ": " << decoded.error().detail;
    const std::size_t at = body.size() + (tail.find_first_not_of(" \n\t"));
    EXPECT_NE(decoded.error().detail.find(where + std::to_string(at)), std::string::npos) << decoded.error().detail;
  }
  for (const std::string& cut : {body.substr(0, body.size() - 1), std::string(R"({"job":"u","data":{"a":"}"} x)")}) {
    auto decoded = bq::Envelope::decode(cut);
    ASSERT_FALSE(decoded);
    EXPECT_EQ(decoded.error().detail.find("trailing"), std::string::npos) << decoded.error().detail;
  }
  EXPECT_TRUE(bq::Envelope::decode(body + " \n"));  // white space is not content
  auto array = bq::Envelope::decode("[1] x");
  ASSERT_FALSE(array);
  EXPECT_NE(array.error().detail.find("trailing content after the JSON value, at byte 4"), std::string::npos)
      << array.error().detail;
  // The generic reader says the same.
  auto value = bq::parse_json(R"({"a":[1,2]} {"b":2})");
  ASSERT_FALSE(value);
  EXPECT_NE(value.error().message().find("trailing content after the JSON value, at byte 12"), std::string::npos)
      << value.error().message();
}
