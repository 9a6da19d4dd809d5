// SPDX-License-Identifier: Apache-2.0
// No error shows a credential. Every URL reader of this build — Url::parse,
// the option reader, each transport's options_from_url and open_transport,
// the idempotency stores' URLs — gets URLs with a password (or a secret
// parameter, or an endpoint with user information) that are wrong in every
// way a user gets them wrong, and none of their errors may hold the secret,
// neither as written nor percent-decoded.
#include "builtin.hpp"

#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/url_options.hpp>

#if defined(BQ_TEST_IDEMPOTENCY)
#include <babelqueue/idempotency/store_registry.hpp>
#endif

#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

// The secret, and what a leak of it would contain whichever way it is cut:
// every piece of it is at least this marker long.
constexpr std::string_view kMarker = "hunter";

// URLs with the secret in them, for a scheme. "%75" is 'u': the decoded
// password holds the marker too. Hosts are 127.0.0.1 port 1 (nothing
// listens there) so a URL that parses fails fast at connecting.
std::vector<std::string> hostile_urls(const std::string& scheme) {
  const std::string s = scheme + "://";
  return {
      // The password where it belongs: the connection fails.
      s + "user:hunter2hunter@127.0.0.1:1", s + "user:hunter2hunter@127.0.0.1:1/0",
      // The password where it belongs, and an option that is wrong.
      s + "user:hunter2hunter@127.0.0.1:1/?no_such_option=1",
      s + "user:hunter2hunter@127.0.0.1:1/?visibility_timeout=soon",
      s + "user:h%75nter2hunter@127.0.0.1:1/?no_such_option=1",
      // Characters that end the authority early: the password splits.
      s + "user:hunter2/hunter@127.0.0.1:1", s + "user:hunter2?hunter@127.0.0.1:1",
      s + "user:hunter2#hunter@127.0.0.1:1", s + "user:hunter2:hunter@127.0.0.1:1",
      s + "user:hunter2 hunter@127.0.0.1:1", s + "user:hunter2hunter@127.0.0.1:99999",
      s + "user:hunter2hunter@127.0.0.1:port", s + "user:hunter2hunter@[::1", s + "user:hunter2%zzhunter@127.0.0.1:1",
      s + "us%zzer:hunter2hunter@127.0.0.1:1", s + "user:hunter2hunter@127.0.0.1:1/bad%zzpath",
      s + "user:hunter2hunter@127.0.0.1:1/?%zz=1", s + ":hunter2hunter@127.0.0.1:1", s + "user:hunter2hunter@",
      s + "user:hunter2hunter@127.0.0.1:1,127.0.0.1:2",
      // Secret parameters, valid or not, among options that are wrong.
      s + "127.0.0.1:1/?password=hunter2hunter&no_such_option=1",
      s + "127.0.0.1:1/?token=hunter2hunter&no_such_option=1",
      s + "127.0.0.1:1/?sas_key=hunter2hunter&no_such_option=1",
      s + "127.0.0.1:1/?secret_access_key=hunter2hunter&no_such_option=1", s + "127.0.0.1:1/?password=hunter2%zzhunter",
      s + "127.0.0.1:1/?token=hunter2hunter",
      // An endpoint (or any URL-valued option) with user information.
      s + "127.0.0.1:1/?endpoint=http://user:hunter2hunter@127.0.0.1:1&no_such_option=1",
      s + "127.0.0.1:1/?endpoint=http://user:hunter2hunter@127.0.0.1:1",
      s + "127.0.0.1:1/?endpoint=ftp://user:hunter2hunter@127.0.0.1:1",
      s + "127.0.0.1:1/?endpoint=http://user:hunter2hunter@127.0.0.1:port",
      s + "127.0.0.1:1/?endpoint=http%3A%2F%2Fuser%3Ahunter2hunter%40127.0.0.1%3A1",
      s + "us-east-1?endpoint=http://user:hunter2hunter@127.0.0.1:1&create=1",
      s + "us-east-1?endpoint=http://user:hunter2hunter@127.0.0.1:1&visibility_timeout=x",
      s + "127.0.0.1:1/?tls_ca=/nonexistent/hunter-ca.pem",  // a file name is no secret: only the others count
  };
}

bool leaks(std::string_view url, std::string_view message) {
  if (url.find("hunter-ca") != std::string_view::npos) return false;
  return message.find(kMarker) != std::string_view::npos;
}

class UrlSecrets : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(UrlSecrets, NoErrorOfAnyUrlReaderShowsTheSecret) {
  bq::builtin::register_transports();
  // Credentials for SQS, so its URLs get as far as the endpoint.
  setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "not-the-marker", 1);
  int opened = 0;
  for (const std::string& url : hostile_urls(GetParam())) {
    SCOPED_TRACE(url);
    const auto start = std::chrono::steady_clock::now();
    if (auto parsed = bq::Url::parse(url); !parsed) {
      EXPECT_FALSE(leaks(url, parsed.error().message())) << parsed.error().message();
    } else {
      EXPECT_FALSE(leaks(url, parsed->redacted())) << parsed->redacted();
      bq::UrlOptionReader read(*parsed);
      std::string ignored;
      read.text("endpoint", ignored);
      std::chrono::milliseconds timeout{};
      read.duration("visibility_timeout", timeout, {});
      if (auto done = read.finish(); !done) {
        EXPECT_FALSE(leaks(url, done.error().message())) << done.error().message();
      }
    }
    auto transport = bq::open_transport(url);
    if (!transport) {
      EXPECT_FALSE(leaks(url, transport.error().message())) << transport.error().message();
    } else if (opened++ == 0) {
      // Opened lazily: the first calls meet the unreachable broker (once per
      // scheme: a Kafka client waits out its timeouts).
      auto received = (*transport)->receive("q", 1, 10ms);
      if (!received) {
        EXPECT_FALSE(leaks(url, received.error().message())) << received.error().message();
      }
      auto published = (*transport)->publish("q", "{}");
      if (!published) {
        EXPECT_FALSE(leaks(url, published.error().message())) << published.error().message();
      }
    }
    if (transport) (*transport)->close(100ms);
#if defined(BQ_TEST_IDEMPOTENCY)
    if (auto store = bq::idempotency::open_store(url); !store) {
      EXPECT_FALSE(leaks(url, store.error().message())) << store.error().message();
    }
#endif
    EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  }
  RecordProperty("opened", opened);
}

INSTANTIATE_TEST_SUITE_P(EveryScheme, UrlSecrets, ::testing::ValuesIn([] {
                           bq::builtin::register_transports();
                           return bq::registered_schemes();
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& scheme) {
                           std::string name = scheme.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });
