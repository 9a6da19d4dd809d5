// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/value.hpp>

#include <gtest/gtest.h>

namespace bq = babelqueue;

TEST(Value, KindsAndAccessors) {
  bq::Value v = bq::Value::object({{"n", 7}, {"u", 7U}, {"d", 2.5}, {"s", "x"}, {"b", true}, {"z", nullptr}});
  EXPECT_TRUE(v.is_object());
  EXPECT_EQ(v["n"].as_int64(), 7);
  EXPECT_EQ(v["u"].kind(), bq::Value::Kind::uint64);
  EXPECT_EQ(v["u"].as_int64(), 7);
  EXPECT_EQ(v["d"].as_double(), 2.5);
  EXPECT_EQ(v["n"].as_double(), 7.0);
  EXPECT_EQ(v["s"].as_string(), "x");
  EXPECT_TRUE(v["b"].as_bool());
  EXPECT_TRUE(v["z"].is_null());
  EXPECT_TRUE(v["missing"].is_null());
}

TEST(Value, WrongKindThrowsWithBothKindsNamed) {
  const bq::Value v("text");
  try {
    (void)v.as_int64();
    FAIL();
  } catch (const bq::Error& e) {
    EXPECT_EQ(e.code(), bq::Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("expected integer, got string"), std::string::npos);
  }
  EXPECT_THROW((void)bq::Value(-1).as_uint64(), bq::Error);
  EXPECT_THROW((void)bq::Value(std::uint64_t{1} << 63U).as_int64(), bq::Error);
}

TEST(Value, ObjectKeepsInsertionOrderAndReplacesInPlace) {
  bq::Object o;
  o.set("z", 1);
  o.set("a", 2);
  o.set("z", 3);
  ASSERT_EQ(o.size(), 2U);
  EXPECT_EQ(o.begin()->first, "z");
  EXPECT_EQ(o.begin()->second, bq::Value(3));
  EXPECT_TRUE(o.erase("z"));
  EXPECT_FALSE(o.contains("z"));
}

TEST(Value, EqualityIsJsonEquality) {
  EXPECT_EQ(bq::Value(1), bq::Value(1U));
  EXPECT_NE(bq::Value(1), bq::Value(1.0));  // type-strict, as the conformance suite
  EXPECT_NE(bq::Value(-1), bq::Value(std::numeric_limits<std::uint64_t>::max()));
  EXPECT_EQ(bq::Value::object({{"a", 1}, {"b", 2}}), bq::Value::object({{"b", 2}, {"a", 1}}));
  EXPECT_NE(bq::Value::array({1, 2}), bq::Value::array({2, 1}));
}

TEST(Value, MutableIndexTurnsNullIntoObject) {
  bq::Value v;
  v["a"]["b"] = 1;
  EXPECT_EQ(v["a"]["b"], bq::Value(1));
}
