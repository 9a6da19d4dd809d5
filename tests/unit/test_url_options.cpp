// SPDX-License-Identifier: Apache-2.0
// UrlOptionReader (babelqueue/url_options.hpp) and TlsOptions: the one way
// every transport reads its URL query, and the one error text per kind.
#include <babelqueue/tls_options.hpp>
#include <babelqueue/url_options.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

bq::Url url_of(const std::string& text) {
  auto url = bq::Url::parse(text);
  EXPECT_TRUE(url) << text;
  return url ? *url : bq::Url{};
}

enum class Mode { normal, full };

// A transport's options and its declarations, as a transport writes them.
struct Options {
  std::chrono::milliseconds visibility_timeout{30s};
  std::chrono::milliseconds connect_timeout{5s};
  std::chrono::milliseconds poll{50ms};
  std::chrono::seconds wait{20};
  std::size_t max_connections = 16;
  std::uint16_t prefetch = 0;
  int partitions = 1;
  bool confirm = true;
  std::string name = "default";
  Mode mode = Mode::normal;
  std::vector<std::chrono::milliseconds> tiers;
  std::map<std::string, std::string> properties;
  bq::TlsOptions tls;
};

bq::Result<Options> read_options(const std::string& text, bool tls_enabled = false) {
  const bq::Url url = url_of(text);
  Options options;
  options.tls.enabled = tls_enabled;
  bq::UrlOptionReader read(url);
  read.duration("visibility_timeout", options.visibility_timeout, {.min = 1ms});
  read.duration("connect_timeout", options.connect_timeout, {.min = 1ms, .max = 1h});
  read.duration("poll_interval", options.poll, {.unit = 1ms, .min = 1ms, .max = 1min});
  read.duration("wait_time", options.wait, {.max = 20s});
  read.integer("max_connections", options.max_connections, 1, 1024);
  read.integer("prefetch", options.prefetch, 0, 65535);
  read.integer("partitions", options.partitions, 1, 100, {"partition_count"});
  read.flag("confirm", options.confirm);
  read.text("name", options.name, {"connection_name"});
  read.choice("mode", options.mode, {{"normal", Mode::normal}, {"full", Mode::full}});
  read.durations("retry_tiers", options.tiers, {.min = 1ms});
  read.prefixed("rdkafka.", options.properties);
  read.tls(options.tls, "rediss://");
  if (auto done = read.finish(); !done) return bq::unexpected(done.error());
  return options;
}

std::string error_of(const std::string& text, bool tls_enabled = false) {
  auto options = read_options(text, tls_enabled);
  EXPECT_FALSE(options) << text;
  if (options) return {};
  EXPECT_EQ(options.error().code(), bq::Errc::invalid_argument) << text;
  return options.error().message();
}

}  // namespace

TEST(UrlOptions, DefaultsStayWhenNothingIsGiven) {
  const Options options = read_options("redis://h").value();
  EXPECT_EQ(options.visibility_timeout, 30s);
  EXPECT_EQ(options.wait, 20s);
  EXPECT_EQ(options.max_connections, 16U);
  EXPECT_TRUE(options.confirm);
  EXPECT_EQ(options.name, "default");
  EXPECT_EQ(options.mode, Mode::normal);
  EXPECT_TRUE(options.tiers.empty());
  EXPECT_TRUE(options.properties.empty());
  EXPECT_FALSE(options.tls.enabled);
  EXPECT_TRUE(options.tls.verify);
}

TEST(UrlOptions, ReadsEveryKind) {
  const Options options = read_options(
                              "redis://h?visibility_timeout=2.5&connect_timeout=500ms&poll_interval=250&wait_time=5"
                              "&max_connections=4&prefetch=65535&partitions=3&confirm=off&name=a%20b&mode=full"
                              "&retry_tiers=500ms,5s,2m&rdkafka.linger.ms=5&rdkafka.security.protocol=SSL")
                              .value();
  EXPECT_EQ(options.visibility_timeout, 2500ms);
  EXPECT_EQ(options.connect_timeout, 500ms);
  EXPECT_EQ(options.poll, 250ms);  // this key's bare numbers are milliseconds
  EXPECT_EQ(options.wait, 5s);
  EXPECT_EQ(options.max_connections, 4U);
  EXPECT_EQ(options.prefetch, 65535);
  EXPECT_EQ(options.partitions, 3);
  EXPECT_FALSE(options.confirm);
  EXPECT_EQ(options.name, "a b");
  EXPECT_EQ(options.mode, Mode::full);
  EXPECT_EQ(options.tiers, (std::vector<std::chrono::milliseconds>{500ms, 5s, 2min}));
  EXPECT_EQ(options.properties, (std::map<std::string, std::string>{{"linger.ms", "5"}, {"security.protocol", "SSL"}}));
}

TEST(UrlOptions, FlagsTakeTheUsualSpellings) {
  for (const char* on : {"true", "TRUE", "yes", "on", "1"})
    EXPECT_TRUE(read_options(std::string("x://h?confirm=") + on)->confirm);
  for (const char* off : {"false", "No", "off", "0"})
    EXPECT_FALSE(read_options(std::string("x://h?confirm=") + off)->confirm);
}

TEST(UrlOptions, AnEmptyValueKeepsTheDefault) {
  // As Python's parse_qs reads ?key= : not given.
  const Options options = read_options("redis://h?visibility_timeout=&name=&confirm&mode=&rdkafka.linger.ms=").value();
  EXPECT_EQ(options.visibility_timeout, 30s);
  EXPECT_EQ(options.name, "default");
  EXPECT_TRUE(options.confirm);
  EXPECT_TRUE(options.properties.empty());
}

TEST(UrlOptions, AliasesKeepOldSpellingsWorking) {
  EXPECT_EQ(read_options("x://h?connection_name=app").value().name, "app");
  EXPECT_EQ(read_options("x://h?partition_count=7").value().partitions, 7);
  // Both spellings at once: refused rather than one silently winning.
  EXPECT_EQ(error_of("x://h?name=a&connection_name=b"),
            "x:// URL: parameters 'name' and 'connection_name' are one option; give one of them");
}

TEST(UrlOptions, AMisspeltKeyIsRefusedNamingTheKnownOnes) {
  EXPECT_EQ(error_of("redis://h?visiblity_timeout=1"),
            "redis:// URL: unknown parameter 'visiblity_timeout' (known: visibility_timeout, connect_timeout, "
            "poll_interval, wait_time, max_connections, prefetch, partitions, confirm, name, mode, retry_tiers, "
            "rdkafka.*, tls_ca, tls_cert, tls_key, tls_server_name, tls_verify)");
  EXPECT_NE(error_of("redis://h?rdkafka.=1").find("unknown parameter 'rdkafka.'"), std::string::npos);
}

TEST(UrlOptions, AMalformedValueIsRefusedNamingTheAcceptedForm) {
  EXPECT_EQ(error_of("redis://h?connect_timeout=abc"),
            "redis:// URL: parameter 'connect_timeout' is 'abc', expected a duration (500ms, 5s, 2m, or a number of "
            "seconds) between 1ms and 1h");
  EXPECT_EQ(error_of("redis://h?connect_timeout=2h"),
            "redis:// URL: parameter 'connect_timeout' is '2h', expected a duration (500ms, 5s, 2m, or a number of "
            "seconds) between 1ms and 1h");
  EXPECT_EQ(error_of("redis://h?wait_time=1.5"),
            "redis:// URL: parameter 'wait_time' is '1.5', expected a duration in whole seconds (5s, 2m, or a number "
            "of seconds) between 0s and 20s");
  EXPECT_EQ(error_of("redis://h?max_connections=0"),
            "redis:// URL: parameter 'max_connections' is '0', expected a whole number from 1 to 1024");
  EXPECT_EQ(error_of("redis://h?max_connections=4.0"),
            "redis:// URL: parameter 'max_connections' is '4.0', expected a whole number from 1 to 1024");
  EXPECT_EQ(error_of("redis://h?confirm=maybe"),
            "redis:// URL: parameter 'confirm' is 'maybe', expected true or false (also yes/no, on/off, 1/0)");
  EXPECT_EQ(error_of("redis://h?mode=off"), "redis:// URL: parameter 'mode' is 'off', expected one of normal, full");
  EXPECT_EQ(error_of("redis://h?retry_tiers=5s,5x"),
            "redis:// URL: parameter 'retry_tiers' is '5s,5x', expected a comma-separated list, each item a duration "
            "(500ms, 5s, 2m, or a number of seconds) between 1ms and 8760h");
  EXPECT_NE(error_of("redis://h?retry_tiers=5s,").find("'retry_tiers'"), std::string::npos);
  EXPECT_NE(error_of("redis://h?partition_count=0").find("parameter 'partition_count' is '0'"), std::string::npos);
  for (const char* text : {"x://h?prefetch=65536", "x://h?prefetch=-1", "x://h?max_connections=99999999999999999999",
                           "x://h?partitions=1e1", "x://h?visibility_timeout=0", "x://h?wait_time=-1"}) {
    EXPECT_FALSE(read_options(text)) << text;
  }
}

TEST(UrlOptions, AnUnknownKeyIsReportedBeforeAMalformedOne) {
  EXPECT_NE(error_of("x://h?connect_timeout=abc&zzz=1").find("unknown parameter 'zzz'"), std::string::npos);
}

TEST(UrlOptions, SecretsNeverAppearInErrors) {
  // A value under a secret-looking name is masked, and the URL's password is never quoted.
  std::string password = "hunter2";
  const bq::Url url = url_of("x://user:" + password + "@h?token_ttl=s3cr3t&password_rounds=topsecret");
  std::chrono::milliseconds ttl{};
  std::int64_t rounds = 0;
  bq::UrlOptionReader read(url);
  read.duration("token_ttl", ttl, {});
  read.integer("password_rounds", rounds, 1, 10);
  auto done = read.finish();
  ASSERT_FALSE(done);
  EXPECT_EQ(done.error().message(),
            "x:// URL: parameter 'token_ttl' is '***', expected a duration (500ms, 5s, 2m, or a number of seconds) "
            "between 0s and 8760h");
  EXPECT_EQ(done.error().message().find(password), std::string::npos);
  EXPECT_EQ(error_of("x://user:" + password + "@h?nope=1").find(password), std::string::npos);
}

TEST(UrlOptions, GivenTellsWhetherAKeyCameWithAValue) {
  const bq::Url url = url_of("x://h?a=1&b=&c_old=2");
  std::string a, b, c;
  bq::UrlOptionReader read(url);
  read.text("a", a);
  read.text("b", b);
  read.text("c", c, {"c_old"});
  EXPECT_TRUE(read.given("a"));
  EXPECT_FALSE(read.given("b"));
  EXPECT_TRUE(read.given("c"));
  EXPECT_FALSE(read.given("d"));
  EXPECT_TRUE(read.finish());
}

// ---- TLS -------------------------------------------------------------------------------

TEST(UrlOptionsTls, ReadsTheSharedNames) {
  const Options options =
      read_options("rediss://h?tls_ca=/etc/ca.pem&tls_cert=c.pem&tls_key=k.pem&tls_server_name=cache&tls_verify=false",
                   true)
          .value();
  EXPECT_TRUE(options.tls.enabled);
  EXPECT_EQ(options.tls.ca_file, "/etc/ca.pem");
  EXPECT_EQ(options.tls.cert_file, "c.pem");
  EXPECT_EQ(options.tls.key_file, "k.pem");
  EXPECT_EQ(options.tls.server_name, "cache");
  EXPECT_FALSE(options.tls.verify);
}

TEST(UrlOptionsTls, OlderSpellingsAreAliases) {
  const Options rabbit = read_options("amqps://h?cacert=ca.pem&cert=c.pem&key=k.pem&verify=false", true).value();
  EXPECT_EQ(rabbit.tls.ca_file, "ca.pem");
  EXPECT_EQ(rabbit.tls.cert_file, "c.pem");
  EXPECT_EQ(rabbit.tls.key_file, "k.pem");
  EXPECT_FALSE(rabbit.tls.verify);
  EXPECT_EQ(read_options("sqs://h?ca_file=/etc/ssl/ca.pem", true).value().tls.ca_file, "/etc/ssl/ca.pem");
  EXPECT_EQ(error_of("amqps://h?tls_ca=a&cacert=b", true),
            "amqps:// URL: parameters 'tls_ca' and 'cacert' are one option; give one of them");
}

TEST(UrlOptionsTls, FilesAndNamesNeedTls) {
  EXPECT_EQ(error_of("redis://h?tls_ca=/x"), "redis:// URL: parameter 'tls_ca' needs TLS (rediss://)");
  EXPECT_EQ(error_of("redis://h?cacert=/x"), "redis:// URL: parameter 'cacert' needs TLS (rediss://)");
  EXPECT_NE(error_of("redis://h?tls_server_name=n").find("needs TLS"), std::string::npos);
  EXPECT_NE(error_of("redis://h?tls_cert=c&tls_key=k").find("needs TLS"), std::string::npos);
  // Verification settings mislead nobody on a plain connection.
  EXPECT_TRUE(read_options("redis://h?tls_verify=true"));
  EXPECT_TRUE(read_options("amqp://h?verify=false"));
  EXPECT_EQ(error_of("redis://h?tls_verify=sometimes", true),
            "redis:// URL: parameter 'tls_verify' is 'sometimes', expected true or false (also yes/no, on/off, 1/0)");
}

TEST(UrlOptionsTls, CertificateAndKeyGoTogether) {
  bq::TlsOptions tls;
  EXPECT_TRUE(tls.check());
  tls.cert_file = "c.pem";
  ASSERT_FALSE(tls.check());
  EXPECT_EQ(tls.check().error().message(), "tls_cert and tls_key go together: give both or neither");
  tls.key_file = "k.pem";
  EXPECT_TRUE(tls.check());
  tls.cert_file.clear();
  EXPECT_FALSE(tls.check());
}
