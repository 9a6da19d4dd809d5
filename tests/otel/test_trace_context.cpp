// SPDX-License-Identifier: Apache-2.0
// The family's id rules (trace_id -> trace id, the synthetic parent) checked
// against values the published Python SDK's babelqueue.otel computes, W3C
// traceparent parsing and formatting, and the samplers.
#include <babelqueue/otel/sampler.hpp>
#include <babelqueue/otel/trace_context.hpp>

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace otel = babelqueue::otel;

namespace {

// trace_id, its trace id, its synthetic span id: from babelqueue 1.24.0
// (Python), otel.trace_id_of and otel._span_id_of.
struct Vector {
  const char* trace_id;
  const char* trace_hex;
  const char* span_hex;
};
constexpr Vector kVectors[] = {
    {"order-42", "3bf8b157c4238eefe5ae4a66eca81c6b", "b6e264bb68d2452d"},
    {"7B3F9C2A-E41D-4F88-9B2A-1C0D5E6F7A8B", "7b3f9c2ae41d4f889b2a1c0d5e6f7a8b", "4a4e192d74806026"},
    {"00000000-0000-0000-0000-000000000000", "12b9377cbe7e5c94e8a70d9d23929523", "e47eabb353476bde"},
    {"0af7651916cd43dd8448eb211c80319c", "0af7651916cd43dd8448eb211c80319c", "9a1e38bb13df2722"},
    {"7b3f9c2ae41d4f889b2a1c0d5e6f7a8", "fe89ad340d456da74a71a468e51bdda6", "9a8afbc3afffc1e7"},  // 31 digits
    {"", "e3b0c44298fc1c149afbf4c8996fb924", "e22ee649de3f1d55"},
};

TEST(TraceIdMapping, MatchesThePythonSdk) {
  for (const auto& v : kVectors) {
    SCOPED_TRACE(v.trace_id);
    EXPECT_EQ(otel::trace_id_of(v.trace_id).hex(), v.trace_hex);
    EXPECT_EQ(otel::synthetic_span_id_of(v.trace_id).hex(), v.span_hex);
    const auto parent = otel::synthetic_parent(v.trace_id);
    EXPECT_EQ(parent.trace_id.hex(), v.trace_hex);
    EXPECT_EQ(parent.span_id.hex(), v.span_hex);
    EXPECT_TRUE(parent.sampled);
    EXPECT_TRUE(parent.remote);
  }
}

TEST(TraceIdMapping, AUuidRoundTripsInLowerCase) {
  const std::string uuid = "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b";
  EXPECT_EQ(otel::uuid_of(otel::trace_id_of(uuid)), uuid);
  EXPECT_EQ(otel::uuid_of(otel::trace_id_of("7B3F9C2A-E41D-4F88-9B2A-1C0D5E6F7A8B")), uuid);
  // Dashes anywhere are stripped.
  EXPECT_EQ(otel::trace_id_of("7b3f9c2ae41d4f88-9b2a1c0d5e6f7a8b").hex(), "7b3f9c2ae41d4f889b2a1c0d5e6f7a8b");
}

TEST(Traceparent, ParsesVersion00AndKeepsTheFlagsAndState) {
  auto c = otel::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "congo=t61rcWkgMzE");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->trace_id.hex(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(c->span_id.hex(), "b7ad6b7169203331");
  EXPECT_TRUE(c->sampled);
  EXPECT_TRUE(c->remote);
  EXPECT_EQ(c->trace_state, "congo=t61rcWkgMzE");
  EXPECT_EQ(otel::format_traceparent(*c), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  auto unsampled = otel::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  ASSERT_TRUE(unsampled);
  EXPECT_FALSE(unsampled->sampled);
  EXPECT_EQ(otel::format_traceparent(*unsampled), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
}

TEST(Traceparent, AFutureVersionIsReadByItsFirstFourFields) {
  EXPECT_TRUE(otel::parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-ever"));
  EXPECT_TRUE(otel::parse_traceparent("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09"));
  EXPECT_FALSE(otel::parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x"));
}

TEST(Traceparent, MalformedOnesAreIgnored) {
  const char* bad[] = {
      "",
      "garbage",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",  // version 00 has four fields
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",        // version ff is invalid
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",        // zero trace id
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",        // zero span id
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",        // upper case
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",         // short span id
      "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0z",
  };
  for (const char* h : bad) EXPECT_FALSE(otel::parse_traceparent(h)) << h;
}

// Every byte value in every digit of the ids, against a byte-at-a-time rule:
// the ids are read eight digits at a time. A traceparent takes lowercase hex
// only; a UUID trace_id either case (any other trace_id is hashed, so its
// trace id then differs from the digits read as hex).
TEST(Traceparent, EveryByteInEveryDigitAgreesWithTheDigitRule) {
  const std::string good = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const auto lower_hex = [](int c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  const auto value = [](int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (std::size_t at = 3; at < 52; ++at) {
    if (at == 35) continue;  // the dash
    for (int c = 0; c < 256; ++c) {
      std::string text = good;
      text[at] = static_cast<char>(c);
      const auto parsed = otel::parse_traceparent(text);
      ASSERT_EQ(parsed.has_value(), lower_hex(c)) << "byte " << c << " at " << at;
      if (!parsed) continue;
      EXPECT_EQ(parsed->trace_id.hex() + "-" + parsed->span_id.hex(), text.substr(3, 49)) << "byte " << c;
    }
  }
  const std::string uuid = "7b3f9c2ae41d4f889b2a1c0d5e6f7a8b";
  for (std::size_t at = 0; at < uuid.size(); ++at) {
    for (int c = 0; c < 256; ++c) {
      if (c == '-') continue;  // stripped: the trace_id is then 31 digits, hashed
      std::string text = uuid;
      text[at] = static_cast<char>(c);
      const std::string got = otel::trace_id_of(text).hex();
      if (lower_hex(c) || (c >= 'A' && c <= 'F')) {
        std::string expected = uuid;
        expected[at] = "0123456789abcdef"[value(c)];
        EXPECT_EQ(got, expected) << "byte " << c << " at " << at;
        continue;
      }
      // Hashed: no reading of the byte as a digit gives this trace id.
      for (const char digit : std::string_view("0123456789abcdef")) {
        std::string as_digit = uuid;
        as_digit[at] = digit;
        ASSERT_NE(got, as_digit) << "byte " << c << " at " << at;
      }
    }
  }
}

TEST(Traceparent, AnUnreadableTracestateIsDroppedButTheParentStays) {
  auto c = otel::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", std::string(513, 'a'));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->trace_state, "");
  c = otel::parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=\x01");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->trace_state, "");
}

TEST(Sampler, NamesAndDecisions) {
  const auto trace = otel::trace_id_of("7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b");
  otel::SpanContext sampled_parent = otel::synthetic_parent("x");
  otel::SpanContext unsampled_parent = sampled_parent;
  unsampled_parent.sampled = false;

  const otel::Sampler def;
  EXPECT_TRUE(def.should_sample(nullptr, trace));
  EXPECT_TRUE(def.should_sample(&sampled_parent, trace));
  EXPECT_FALSE(def.should_sample(&unsampled_parent, trace));

  EXPECT_TRUE(otel::Sampler::always_on().should_sample(&unsampled_parent, trace));
  EXPECT_FALSE(otel::Sampler::always_off().should_sample(&sampled_parent, trace));
  EXPECT_TRUE(otel::Sampler::from_name("parentbased_always_off")->should_sample(&sampled_parent, trace));
  EXPECT_FALSE(otel::Sampler::from_name("parentbased_always_off")->should_sample(nullptr, trace));
  EXPECT_FALSE(otel::Sampler::from_name("bogus"));
  EXPECT_FALSE(otel::Sampler::from_name("traceidratio", "2"));
  EXPECT_FALSE(otel::Sampler::from_name("traceidratio", "half"));
}

TEST(Sampler, TheRatioKeepsItsShareOfTracesByTheirLastEightBytes) {
  const auto quarter = *otel::Sampler::from_name("traceidratio", "0.25");
  int kept = 0;
  for (int i = 0; i < 4000; ++i) {
    if (quarter.should_sample(nullptr, otel::trace_id_of("trace-" + std::to_string(i)))) ++kept;
  }
  EXPECT_NEAR(kept, 1000, 120);
  otel::TraceId low;
  low.bytes[7] = 0xff;  // the first 8 bytes do not count
  low.bytes[15] = 1;
  EXPECT_TRUE(quarter.should_sample(nullptr, low));
  otel::TraceId high;
  high.bytes[8] = 0x40;  // exactly 0.25 * 2^64: not below the bound
  EXPECT_FALSE(quarter.should_sample(nullptr, high));
  EXPECT_FALSE(otel::Sampler::trace_id_ratio(0).should_sample(nullptr, low));
}

}  // namespace
