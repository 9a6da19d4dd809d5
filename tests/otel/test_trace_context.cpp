// SPDX-License-Identifier: Apache-2.0
// The family's id rules (trace_id -> trace id, the synthetic parent) checked
// against values the published Python SDK's babelqueue.otel computes, W3C
// traceparent parsing and formatting, and the samplers.
#include <babelqueue/otel/sampler.hpp>
#include <babelqueue/otel/trace_context.hpp>

#include <gtest/gtest.h>

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
