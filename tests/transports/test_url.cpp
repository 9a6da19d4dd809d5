// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/url.hpp>

#include <gtest/gtest.h>

namespace bq = babelqueue;

namespace {

bq::Url parse(std::string_view text) {
  auto url = bq::Url::parse(text);
  EXPECT_TRUE(url) << text << ": " << url.error().message();
  return url ? *url : bq::Url{};
}

bq::ErrorInfo parse_error(std::string_view text) {
  auto url = bq::Url::parse(text);
  EXPECT_FALSE(url) << text << " should not parse";
  return url ? bq::ErrorInfo(bq::Errc::internal, "parsed") : url.error();
}

}  // namespace

TEST(Url, ParsesEveryPart) {
  const bq::Url url = parse("REDIS://alice:s3cret@cache.local:6380/2?ssl=true&timeout=2.5");
  EXPECT_EQ(url.scheme, "redis");
  EXPECT_EQ(url.user, "alice");
  EXPECT_EQ(url.password, "s3cret");
  EXPECT_EQ(url.host, "cache.local");
  EXPECT_EQ(url.port, 6380);
  EXPECT_EQ(url.path, "2");
  EXPECT_EQ(url.param("ssl"), "true");
  EXPECT_EQ(url.param("missing", "fallback"), "fallback");
  EXPECT_EQ(url.number("timeout", 0).value(), 2.5);
  EXPECT_TRUE(url.flag("ssl", false).value());
}

TEST(Url, HostOnlyAndNothingElse) {
  const bq::Url url = parse("amqp://rabbit");
  EXPECT_EQ(url.host, "rabbit");
  EXPECT_FALSE(url.port);
  EXPECT_TRUE(url.user.empty());
  EXPECT_TRUE(url.path.empty());
  EXPECT_TRUE(url.query.empty());
  EXPECT_TRUE(parse("memory://").host.empty());
}

TEST(Url, PercentDecodesEachComponent) {
  const bq::Url url = parse("amqp://us%40er:p%3Ass%2Fw%25rd@host/%2Fvhost?name=a%20b+c&k%3D=v%26");
  EXPECT_EQ(url.user, "us@er");
  EXPECT_EQ(url.password, "p:ss/w%rd");
  EXPECT_EQ(url.path, "/vhost");
  EXPECT_EQ(url.param("name"), "a b c");  // '+' is a space in the query
  EXPECT_EQ(url.param("k="), "v&");
}

TEST(Url, PlusIsLiteralOutsideTheQuery) { EXPECT_EQ(parse("redis://a+b:c+d@h").password, "c+d"); }

TEST(Url, TheLastAtSignEndsTheUserInformation) {
  const bq::Url url = parse("redis://user:p@ss@host:1");
  EXPECT_EQ(url.password, "p@ss");
  EXPECT_EQ(url.host, "host");
}

TEST(Url, Ipv6HostsLoseTheirBrackets) {
  const bq::Url url = parse("redis://[::1]:6379/0");
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, 6379);
  EXPECT_EQ(url.path, "0");
  const bq::Url no_port = parse("amqp://[fe80::1%25eth0]");
  EXPECT_EQ(no_port.host, "fe80::1%25eth0");
  EXPECT_FALSE(no_port.port);
}

TEST(Url, SeveralHostsStayAsWritten) {
  const bq::Url url = parse("kafka://b1:9092,b2:9093,[::1]:9094/?group=g");
  EXPECT_EQ(url.host, "b1:9092,b2:9093,[::1]:9094");
  EXPECT_FALSE(url.port);
  EXPECT_EQ(url.param("group"), "g");
}

TEST(Url, SqlitePaths) {
  const bq::Url relative = parse("sqlite://data/queues/q.db?visibility_timeout=1");
  EXPECT_EQ(relative.host, "data");
  EXPECT_EQ(relative.path, "queues/q.db");
  const bq::Url bare = parse("sqlite://q.db");
  EXPECT_EQ(bare.host, "q.db");
  EXPECT_TRUE(bare.path.empty());
  const bq::Url absolute = parse("sqlite:///var/lib/app/q.db");
  EXPECT_TRUE(absolute.host.empty());
  EXPECT_EQ(absolute.path, "var/lib/app/q.db");
  EXPECT_EQ(parse("sqlite://../up/q.db").host, "..");
}

TEST(Url, QueryEdgeCases) {
  const bq::Url url = parse("sqs://eu-west-1?endpoint=http%3A%2F%2Flocalhost%3A4566&&flag&x=1&x=2#fragment");
  EXPECT_EQ(url.host, "eu-west-1");
  EXPECT_EQ(url.param("endpoint"), "http://localhost:4566");
  EXPECT_EQ(url.param("flag", "absent"), "");  // present without a value
  EXPECT_EQ(url.param("x"), "2");              // the last one wins
  EXPECT_EQ(url.query.size(), 3U);
}

TEST(Url, FlagsAndNumbers) {
  const bq::Url url = parse("x://h?a=YES&b=off&c=maybe&n=1e3&bad=12abc&inf=inf");
  EXPECT_TRUE(url.flag("a", false).value());
  EXPECT_FALSE(url.flag("b", true).value());
  EXPECT_TRUE(url.flag("absent", true).value());
  ASSERT_FALSE(url.flag("c", true));
  EXPECT_EQ(url.flag("c", true).error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(url.flag("c", true).error().message().find("c='maybe'"), std::string::npos);
  EXPECT_EQ(url.number("n", 0).value(), 1000.0);
  EXPECT_EQ(url.number("absent", 7).value(), 7.0);
  EXPECT_EQ(url.number("bad", 0).error().code(), bq::Errc::invalid_argument);
  EXPECT_FALSE(url.number("inf", 0));
}

TEST(Url, RedactedHidesThePasswordAndSecretParameters) {
  const bq::Url url = parse("amqp://guest:hunter2@[::1]:5672/v%2Fh?heartbeat=10&secret_key=abc&sas_key=zzz");
  const std::string shown = url.redacted();
  EXPECT_EQ(shown.find("hunter2"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("abc"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("zzz"), std::string::npos) << shown;
  EXPECT_EQ(shown, "amqp://guest:***@[::1]:5672/v/h?heartbeat=10&sas_key=***&secret_key=***");
  // What redacted() prints parses back to the same URL, password aside.
  const bq::Url again = parse(shown);
  EXPECT_EQ(again.host, "::1");
  EXPECT_EQ(again.path, "v/h");
  EXPECT_EQ(parse("redis://h:1").redacted(), "redis://h:1");
  EXPECT_EQ(parse("kafka://a:1,b:2").redacted(), "kafka://a:1,b:2");
}

// RabbitMQ's default vhost "/" is given as %2F and printed back the same
// way (it once came back as "amqp://host//", which reads like an empty
// vhost).
TEST(Url, RedactedWritesAPathStartingWithASlashAsItWasGiven) {
  EXPECT_EQ(parse("amqp://guest:pw@h:5672/%2F").redacted(), "amqp://guest:***@h:5672/%2F");
  EXPECT_EQ(parse("amqp://h/%2Fteam").redacted(), "amqp://h/%2Fteam");
  EXPECT_EQ(parse(parse("amqp://h/%2Fteam").redacted()).path, "/team");
  EXPECT_EQ(parse("sqlite:///var/q.db").redacted(), "sqlite:///var/q.db");
  EXPECT_EQ(parse("sqlite://data/q.db").redacted(), "sqlite://data/q.db");
  // A URL inside a parameter keeps its password hidden too.
  EXPECT_EQ(parse("sqs://eu-west-1?endpoint=http://u:pw@h:1").redacted(),
            "sqs://eu-west-1?endpoint=http://u:***%40h:1");
}

TEST(Url, RejectsMalformedText) {
  for (const char* text : {"localhost:6379", "://host", "1redis://h", "re dis://h", "redis://h:port", "redis://h:70000",
                           "redis://h:", "redis://[::1", "redis://[::1]x", "redis://[]:1", "redis://h/%zz",
                           "redis://h/%4", "redis://h?=v"}) {
    const bq::ErrorInfo error = parse_error(text);
    EXPECT_EQ(error.code(), bq::Errc::invalid_argument) << text;
    EXPECT_FALSE(error.message().empty());
  }
}

TEST(Url, ErrorsNeverQuoteThePassword) {
  const bq::ErrorInfo error = parse_error("redis://user:top%zzsecret@host");
  EXPECT_EQ(error.message().find("topsecret"), std::string::npos);
  EXPECT_EQ(error.message().find("top%zz"), std::string::npos) << error.message();
}
