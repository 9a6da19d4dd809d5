// SPDX-License-Identifier: Apache-2.0
// Envelope::decode's fast path (stage 1 and a walk over the structural
// indexes, docs/adr/0043) against the On-Demand pass alone, on bodies that
// take each branch of the walk: both must give the same reason and message,
// or envelopes with the same fields, warnings, verdict and re-emitted bytes.
#include "on_demand.hpp"

#include <babelqueue/envelope.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace bq = babelqueue;

namespace {

std::string frame(std::string_view data, std::string_view extra = {}) {
  std::string body = R"({"job":"urn:babel:t:x","trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b","data":)";
  body.append(data);
  body.append(R"(,"meta":{"id":"f1","queue":"q","lang":"go","schema_version":1,"created_at":17})");
  body.append(extra);
  body.append(R"(,"attempts":2})");
  return body;
}

void expect_same(std::string_view body, const bq::DecodeOptions& options = {}) {
  SCOPED_TRACE(std::string(body));
  std::vector<std::string> fast_warnings;
  std::vector<std::string> exact_warnings;
  bq::DecodeOptions fast_options = options;
  fast_options.on_warning = [&](std::string_view p) { fast_warnings.emplace_back(p); };
  bq::DecodeOptions exact_options = options;
  exact_options.on_warning = [&](std::string_view p) { exact_warnings.emplace_back(p); };
  const auto fast = bq::Envelope::decode(body, fast_options);
  const auto exact = bq::detail::decode_on_demand(body, exact_options);
  ASSERT_EQ(fast.has_value(), exact.has_value()) << (fast ? exact.error().detail : fast.error().detail);
  EXPECT_EQ(fast_warnings, exact_warnings);
  if (!fast) {
    EXPECT_EQ(fast.error().reason, exact.error().reason);
    EXPECT_EQ(fast.error().detail, exact.error().detail);
    return;
  }
  EXPECT_EQ(fast->urn(), exact->urn());
  EXPECT_EQ(fast->trace_id(), exact->trace_id());
  EXPECT_EQ(fast->id(), exact->id());
  EXPECT_EQ(fast->queue(), exact->queue());
  EXPECT_EQ(fast->lang(), exact->lang());
  EXPECT_EQ(fast->schema_version(), exact->schema_version());
  EXPECT_EQ(fast->created_at(), exact->created_at());
  EXPECT_EQ(fast->attempts(), exact->attempts());
  EXPECT_EQ(fast->data_json(), exact->data_json());
  EXPECT_EQ(fast->warnings(), exact->warnings());
  EXPECT_EQ(bq::accepts(*fast).reason(), bq::accepts(*exact).reason());
  const auto a = fast->encode();
  const auto b = exact->encode();
  ASSERT_EQ(a.has_value(), b.has_value());
  if (a) {
    EXPECT_EQ(*a, *b);
  }
}

TEST(DecodePaths, ValidBodiesReadTheSame) {
  expect_same(frame("{}"));
  expect_same(frame(R"({"a":[1,-0,0.5,-1.25e-3,1E+2,true,false,null,"",{"":[]}],"b":{"c":{"d":[[]]}}})"));
  expect_same(frame(R"({"big":1e400,"huge":123456789012345678901234567890,"neg":-9223372036854775809})"));
  expect_same(frame(R"({"esc":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00","k\u0065y":1})"));
  expect_same(frame(R"("not an object")"));
  expect_same(frame("{}", R"(,"x-unknown":{"k":[1,2]},"timestamp":5)"));
  expect_same(" \n\t" + frame("{ \"a\" : [ 1 , 2 ] }") + " \r\n");
  expect_same(R"({"job":"urn:\u0062abel:t:x","trace_id":"t\"1","data":{},"meta":{"id":"i\\d","queue":"q\u00e9ue",)"
              R"("lang":"go","schema_version":1,"created_at":-0,"ts":1},"attempts":99999999999999999999})");
  expect_same(R"({"job":"u","data":{},"meta":{},"attempts":-1,"dead_letter":{"reason":"x"}})");
  expect_same(R"({"job":"u","data":{},"meta":[1,2],"attempts":1.0})");
  expect_same("{}");
}

TEST(DecodePaths, InvalidBodiesFailTheSame) {
  for (const char* data : {"01",          "1.",
                           "-",           "1e",
                           "1e+",         ".5",
                           "+1",          "tru",
                           "nulll",       "truex",
                           "[1,]",        "[,1]",
                           "{\"a\"}",     "{\"a\":}",
                           "{\"a\" 1}",   "{\"a\":1,}",
                           "[1 2]",       "\"\\x\"",
                           "\"\\u12\"",   "\"\\ud800\"",
                           "\"\\udc00\"", "\"\\ud800\\u0041\"",
                           "{\"a\":1}}",  "[[1]",
                           "\"a\"\"b\""}) {
    expect_same(frame(data));
  }
  expect_same(frame("{}") + " x");
  expect_same(R"({"job":"u","job":"v"})");
  expect_same(R"({"job":"u","meta":{"id":"a","id":"b"}})");
  expect_same(R"({"x\u0079":1,"xy":2})");
  expect_same(R"({"job":"u",})");
  expect_same(R"({"job" "u"})");
  expect_same("[1,2]");
  expect_same("\"just a string\"");
  expect_same("{\"job\":\"u\xff\"}");
  expect_same("{\"job\":\"a\tb\"}");
  expect_same("{\"job\":\"unclosed}");
}

// The canonical frame, what every SDK writes, is read by a pass of its own
// (docs/adr/0049) that gives way to the general walk as soon as the body
// leaves that form: each way of leaving it, at each member, reads the same.
TEST(DecodePaths, CanonicalFrameAndItsNearMisses) {
  const std::string canonical = frame(R"({"order_id":1042})");
  expect_same(canonical);
  // White space after each '{', ':' and ',' and before each '}' and ',', in turn.
  for (std::size_t i = 0; i < canonical.size(); ++i) {
    const char c = canonical[i];
    if (c == '{' || c == ':' || c == ',') {
      std::string body = canonical;
      body.insert(i + 1, " ");
      expect_same(body);
    }
    if (c == '}' || c == ',') {
      std::string body = canonical;
      body.insert(i, "\n");
      expect_same(body);
    }
  }
  const std::vector<std::pair<std::string, std::string>> changes = {
      {R"("job":"urn:babel:t:x")", R"("job":7)"},
      {R"("job":"urn:babel:t:x")", R"("urn":"urn:babel:t:x")"},
      {R"("job":"urn:babel:t:x")", R"("job":"urn:\u0062abel:t:x")"},
      {R"("job":"urn:babel:t:x")", R"("job":"  ")"},
      {R"("job":"urn:babel:t:x")", R"("jobs":"urn:babel:t:x")"},
      {R"("trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b")", R"("trace_id":null)"},
      {R"("trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b")", R"("trace_id":"a\\b")"},
      {R"("data":{"order_id":1042})", R"("data":[1])"},
      {R"("data":{"order_id":1042})", R"("data":{"order_id":"\u00e9"})"},
      {R"("data":{"order_id":1042})", R"("data":{"order_id":1042)"},
      {R"("meta":{)", R"("meta":{"x":1,)"},
      {R"("meta":{"id":"f1","queue":"q","lang":"go","schema_version":1,"created_at":17})", R"("meta":{})"},
      {R"("meta":{"id":"f1","queue":"q","lang":"go","schema_version":1,"created_at":17})", R"("meta":"m")"},
      {R"("id":"f1")", R"("id":1)"},
      {R"("queue":"q")", R"("queue":"q\"")"},
      {R"("lang":"go")", R"("lang":"go","lang":"go")"},
      {R"("schema_version":1)", R"("schema_version":1.0)"},
      {R"("schema_version":1)", R"("schema_version":"1")"},
      {R"("schema_version":1)", R"("schema_version":2)"},
      {R"("created_at":17)", R"("created_at":-17)"},
      {R"("created_at":17)", R"("created_at":9223372036854775807)"},
      {R"("created_at":17)", R"("created_at":1749132727000)"},
      {R"("created_at":17)", R"("created_at":-12345678)"},
      {R"("created_at":17)", R"("created_at":999999999999999999)"},
      {R"("created_at":17)", R"("created_at":1234567890123456)"},
      {R"("created_at":17)", R"("created_at":12345678.5)"},
      {R"("created_at":17)", R"("created_at":1234567/)"},
      {R"("created_at":17)", R"("created_at":1234567:9)"},
      {R"("created_at":17)", R"("created_at":123456789012345678901)"},
      {R"("created_at":17)", R"("created_at":17,"ts":1)"},
      {R"("created_at":17})", R"("created_at":17,})"},
      {R"("attempts":2)", R"("attempts":-1)"},
      {R"("attempts":2)", R"("attempts":1e2)"},
      {R"("attempts":2)", R"("attempts":02)"},
      {R"("attempts":2)", R"("attempts":123456789012345678)"},
      {R"("attempts":2})", R"("attempts":2,"dead_letter":{"reason":"x"}})"},
      {R"("attempts":2})", R"("attempts":2,"job":"again"})"},
      {R"("attempts":2})", R"("attempts":2,"timestamp":1})"},
      {R"("attempts":2})", R"("attempts":2,"x-unknown":[1],"dead_letter":{"reason":"x"},"y":"\u0041"})"},
      {R"("attempts":2})", R"("attempts":2,"urn":"urn:babel:t:y"})"},
      {R"("attempts":2})", R"("attempts":2,"meta":{}})"},
      {R"("attempts":2})", R"("attempts":2,})"},
      {R"("attempts":2})", R"("attempts":2,"x":})"},
      {R"("attempts":2})", R"("attempts":2}{})"},
      {R"("attempts":2})", R"("attempts":2)"},
      {R"(,"attempts":2)", ""},
      {R"(,"trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b")", ""},
      {R"("job":"urn:babel:t:x",)", R"("job":"urn:babel:t:x","job":"u",)"},
      {R"(,"data":{"order_id":1042},"meta":{"id":"f1","queue":"q","lang":"go","schema_version":1,"created_at":17},)"
       R"("attempts":2)",
       ""},
      {R"(,"schema_version":1,"created_at":17)", ""},
      {R"("id":"f1",)", ""},
      {R"("id":"f1",)", R"("id":"f1","id":"f2",)"},
  };
  for (const auto& [from, to] : changes) {
    std::string body = canonical;
    const auto at = body.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    body.replace(at, from.size(), to);
    expect_same(body);
  }
}

TEST(DecodePaths, DepthLimitsAgree) {
  bq::DecodeOptions options;
  options.max_depth = 4;
  expect_same(frame(R"({"a":{"b":1}})"), options);      // depth 3
  expect_same(frame(R"({"a":{"b":[1]}})"), options);    // depth 4
  expect_same(frame(R"({"a":{"b":[[1]]}})"), options);  // depth 5
  options.max_depth = 2;
  expect_same(frame("{}"), options);
  options.max_depth = 1;
  expect_same(frame("{}"), options);
  expect_same(R"({"job":"u","attempts":0})", options);
  std::string deep(2000, '[');
  deep.append(2000, ']');
  expect_same(frame(deep));
}

}  // namespace
