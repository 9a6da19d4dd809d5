// SPDX-License-Identifier: Apache-2.0
// Result's std::expected-style composition: and_then, transform, or_else,
// transform_error, value_or, on values, errors and Result<void>.
#include <babelqueue/result.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace bq = babelqueue;

namespace {

bq::Result<int> parse(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return bq::unexpected(bq::Errc::invalid_argument, "not a number: '" + text + "'");
  }
  return std::stoi(text);
}

bq::Result<int> positive(int n) {
  if (n <= 0) return bq::unexpected(bq::Errc::invalid_argument, "not positive");
  return n;
}

}  // namespace

TEST(Result, AndThenChainsOnlyOnAValue) {
  EXPECT_EQ(parse("42").and_then(positive).value(), 42);
  auto zero = parse("0").and_then(positive);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().message(), "not positive");
  int calls = 0;
  auto bad = parse("x").and_then([&](int n) {
    ++calls;
    return positive(n);
  });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(bad.error().message(), "not a number: 'x'");
}

TEST(Result, TransformMapsTheValueAndKeepsTheError) {
  auto text = parse("7").transform([](int n) { return std::to_string(n * 2); });
  static_assert(std::is_same_v<decltype(text), bq::Result<std::string>>);
  EXPECT_EQ(text.value(), "14");
  EXPECT_EQ(parse("?").transform([](int n) { return n + 1; }).error().code(), bq::Errc::invalid_argument);
  int seen = 0;
  bq::Result<void> done = parse("3").transform([&](int n) { seen = n; });
  EXPECT_TRUE(done);
  EXPECT_EQ(seen, 3);
}

TEST(Result, OrElseRecoversAndTransformErrorAddsContext) {
  EXPECT_EQ(parse("x").or_else([](const bq::ErrorInfo&) -> bq::Result<int> { return 0; }).value(), 0);
  EXPECT_EQ(parse("5").or_else([](const bq::ErrorInfo&) -> bq::Result<int> { return 0; }).value(), 5);
  auto wrapped = parse("x").transform_error(
      [](const bq::ErrorInfo& e) { return bq::ErrorInfo(e.code(), "reading the count: " + e.message()); });
  EXPECT_EQ(wrapped.error().message(), "reading the count: not a number: 'x'");
  EXPECT_EQ(wrapped.error().code(), bq::Errc::invalid_argument);
}

TEST(Result, ValueOrAndMoveOnlyValues) {
  EXPECT_EQ(parse("x").value_or(-1), -1);
  EXPECT_EQ(parse("9").value_or(-1), 9);
  bq::Result<std::unique_ptr<int>> owned(std::make_unique<int>(4));
  auto doubled = std::move(owned).transform([](std::unique_ptr<int> p) { return *p * 2; });
  EXPECT_EQ(doubled.value(), 8);
  bq::Result<std::unique_ptr<int>> again(std::make_unique<int>(5));
  auto chained = std::move(again).and_then([](std::unique_ptr<int> p) -> bq::Result<int> { return *p; });
  EXPECT_EQ(chained.value(), 5);
}

TEST(Result, VoidResultsCompose) {
  bq::Result<void> ok;
  bq::Result<void> failed = bq::unexpected(bq::Errc::closed, "closed");
  EXPECT_EQ(ok.and_then([] { return parse("1"); }).value(), 1);
  EXPECT_EQ(failed.and_then([] { return parse("1"); }).error().code(), bq::Errc::closed);
  EXPECT_EQ(ok.transform([] { return 3; }).value(), 3);
  EXPECT_FALSE(failed.transform([] { return 3; }));
  EXPECT_TRUE(failed.or_else([](const bq::ErrorInfo&) { return bq::Result<void>(); }));
  EXPECT_EQ(failed.transform_error([](const bq::ErrorInfo& e) { return bq::ErrorInfo(e.code(), "x: " + e.message()); })
                .error()
                .message(),
            "x: closed");
}
