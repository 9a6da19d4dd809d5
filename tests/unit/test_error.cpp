// SPDX-License-Identifier: Apache-2.0
// The error type: std::error_code interoperation, the broker's own code kept,
// retriability decided where the error arises, outcome unknown, and decode
// failures as the same error type.
#include <babelqueue/envelope.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/rejection.hpp>
#include <babelqueue/result.hpp>

#include <gtest/gtest.h>

#include <string>
#include <system_error>

namespace bq = babelqueue;

TEST(ErrorCode, ErrcIsAStdErrorCodeEnum) {
  const std::error_code ec = bq::Errc::timeout;
  EXPECT_STREQ(ec.category().name(), "babelqueue");
  EXPECT_EQ(ec.message(), "timeout");
  EXPECT_EQ(ec, bq::Errc::timeout);
  EXPECT_NE(ec, bq::Errc::connection);
  EXPECT_EQ(&ec.category(), &bq::error_category());
}

TEST(ErrorCode, CodesWithAPortableMeaningCompareEqualToStdErrc) {
  EXPECT_EQ(std::error_code(bq::Errc::timeout), std::errc::timed_out);
  EXPECT_EQ(std::error_code(bq::Errc::invalid_argument), std::errc::invalid_argument);
  EXPECT_EQ(std::error_code(bq::Errc::unsupported), std::errc::operation_not_supported);
  EXPECT_EQ(std::error_code(bq::Errc::auth), std::errc::permission_denied);
  EXPECT_EQ(std::error_code(bq::Errc::io), std::errc::io_error);
  EXPECT_EQ(std::error_code(bq::Errc::connection), std::errc::not_connected);
  EXPECT_NE(std::error_code(bq::Errc::broker), std::errc::io_error);
  EXPECT_NE(std::error_code(bq::Errc::outcome_unknown), std::errc::timed_out)
      << "an unknown outcome is not a plain timeout: the broker may hold the message";
}

TEST(ErrorCode, TheExceptionIsAStdSystemErrorWithTheSameText) {
  try {
    bq::Result<int> failed = bq::unexpected(bq::Errc::auth, "refused");
    (void)failed.value();
    FAIL() << "value() did not throw";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), bq::Errc::auth);
    EXPECT_EQ(e.code(), std::errc::permission_denied);
    EXPECT_STREQ(e.what(), "auth: refused");
    const auto* error = dynamic_cast<const bq::Error*>(&e);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(error->code(), bq::Errc::auth);  // source-compatible: still the Errc
    EXPECT_EQ(error->errc(), bq::Errc::auth);
    EXPECT_FALSE(error->retriable());
  }
  const bq::Error copy = bq::Error(bq::Errc::io, "disk");
  const bq::Error second = copy;  // NOLINT: copying an exception must keep its text
  EXPECT_STREQ(second.what(), "io: disk");
  EXPECT_EQ(second.info().error_code(), std::errc::io_error);
}

TEST(ErrorInfo, KeepsTheBrokersOwnCodeAndText) {
  auto error = bq::ErrorInfo(bq::Errc::broker, "Redis refused RPUSH on queue q: OOM command not allowed", true)
                   .with_native("OOM", "command not allowed when used memory > 'maxmemory'");
  EXPECT_EQ(error.native_code(), "OOM");
  EXPECT_EQ(error.native_message(), "command not allowed when used memory > 'maxmemory'");
  const bq::ErrorInfo renamed = error.with_message("publish to q failed (after 3 tries)");
  EXPECT_EQ(renamed.native_code(), "OOM");
  EXPECT_TRUE(renamed.retriable());
  EXPECT_EQ(renamed.code(), bq::Errc::broker);
  EXPECT_EQ(renamed.message(), "publish to q failed (after 3 tries)");
  EXPECT_TRUE(bq::ErrorInfo(bq::Errc::broker, "x").native_code().empty());
}

TEST(ErrorInfo, RetriabilityDecidedWhereTheErrorAriseWinsOverTheCode) {
  EXPECT_TRUE(bq::ErrorInfo(bq::Errc::io, "a short read").retriable());
  EXPECT_FALSE(bq::ErrorInfo(bq::Errc::io, "not a database", false).retriable());
  EXPECT_TRUE(bq::ErrorInfo(bq::Errc::not_found, "not replicated yet", true).retriable());
}

TEST(ErrorInfo, OutcomeUnknownIsItsOwnCode) {
  const bq::ErrorInfo unknown(bq::Errc::outcome_unknown, "sent; no confirm within 5000 ms");
  EXPECT_TRUE(unknown.outcome_unknown());
  EXPECT_TRUE(unknown.retriable()) << "re-publishing with the same meta.id is allowed";
  EXPECT_EQ(bq::to_string(bq::Errc::outcome_unknown), "outcome_unknown");
  EXPECT_FALSE(bq::ErrorInfo(bq::Errc::timeout, "nothing sent").outcome_unknown());
}

TEST(DecodeError, AnswersLikeEveryErrorAndConvertsToErrorInfo) {
  auto decoded = bq::Envelope::decode("not json");
  ASSERT_FALSE(decoded);
  const bq::DecodeError& failure = decoded.error();
  EXPECT_EQ(failure.code(), bq::Errc::invalid_json);
  EXPECT_FALSE(failure.retriable());
  EXPECT_EQ(failure.message().rfind("invalid_json: ", 0), 0U) << failure.message();

  const bq::ErrorInfo info = failure;  // one error type
  EXPECT_EQ(info.code(), bq::Errc::invalid_json);
  EXPECT_FALSE(info.retriable());
  ASSERT_TRUE(info.rejection());
  EXPECT_EQ(*info.rejection(), bq::Rejection::invalid_json);
  EXPECT_EQ(info.message(), failure.message());

  const bq::DecodeError other{bq::Rejection::duplicate_key, "meta.id twice"};
  EXPECT_EQ(other.code(), bq::Errc::rejected);
  EXPECT_EQ(bq::ErrorInfo(other).rejection(), bq::Rejection::duplicate_key);

  try {
    (void)bq::Envelope::decode("[1]").value();
    FAIL() << "value() did not throw";
  } catch (const bq::Error& e) {
    EXPECT_EQ(e.code(), bq::Errc::rejected);
    EXPECT_FALSE(e.retriable()) << "poison is never retried: it was retriable before DecodeError said otherwise";
    EXPECT_EQ(e.info().rejection(), bq::Rejection::not_an_object);
  }
}
