// SPDX-License-Identifier: Apache-2.0
// The proxy libcurl takes from the environment is said, not used silently:
// sqs::proxy_of follows libcurl's choice (http_proxy, https_proxy,
// all_proxy, no_proxy), and a request that cannot get through names the
// proxy, its password hidden.
#include <babelqueue/sqs/http_client.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace bq = babelqueue;

namespace {

// Sets the proxy variables for one test and clears them after.
class ProxyEnvironment : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name :
         {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
      unsetenv(name);
    }
  }
};

}  // namespace

TEST_F(ProxyEnvironment, FollowsLibcurlsChoiceOfVariable) {
  EXPECT_EQ(bq::sqs::proxy_of("https://sqs.eu-west-1.amazonaws.com/"), "");
  setenv("https_proxy", "http://proxy.corp:3128", 1);
  EXPECT_EQ(bq::sqs::proxy_of("https://sqs.eu-west-1.amazonaws.com/"),
            "the proxy http://proxy.corp:3128 (https_proxy)");
  EXPECT_EQ(bq::sqs::proxy_of("http://127.0.0.1:9324/"), "") << "https_proxy is for https:// only";
  setenv("HTTP_PROXY", "http://upper:1", 1);
  EXPECT_EQ(bq::sqs::proxy_of("http://127.0.0.1:9324/"), "") << "libcurl never reads HTTP_PROXY";
  setenv("http_proxy", "http://lower:2", 1);
  EXPECT_EQ(bq::sqs::proxy_of("http://127.0.0.1:9324/"), "the proxy http://lower:2 (http_proxy)");
  unsetenv("https_proxy");
  setenv("ALL_PROXY", "socks5://any:1080", 1);
  EXPECT_EQ(bq::sqs::proxy_of("https://sqs.eu-west-1.amazonaws.com/"), "the proxy socks5://any:1080 (ALL_PROXY)");
}

TEST_F(ProxyEnvironment, NoProxyListsTheHostsThatGoStraight) {
  setenv("https_proxy", "http://proxy.corp:3128", 1);
  setenv("http_proxy", "http://proxy.corp:3128", 1);
  setenv("no_proxy", "localhost, 127.0.0.1,.internal.example", 1);
  EXPECT_EQ(bq::sqs::proxy_of("http://127.0.0.1:9324/"), "");
  EXPECT_EQ(bq::sqs::proxy_of("http://localhost:9324/"), "");
  EXPECT_EQ(bq::sqs::proxy_of("https://sqs.internal.example/"), "");
  EXPECT_EQ(bq::sqs::proxy_of("https://internal.example/"), "");
  EXPECT_EQ(bq::sqs::proxy_of("https://notinternal.example/"), "the proxy http://proxy.corp:3128 (https_proxy)");
  setenv("no_proxy", "*", 1);
  EXPECT_EQ(bq::sqs::proxy_of("https://sqs.eu-west-1.amazonaws.com/"), "");
}

TEST_F(ProxyEnvironment, AFailedRequestNamesTheProxyWithoutItsPassword) {
  setenv("http_proxy", "http://user:s3cretpw@127.0.0.1:1", 1);
  EXPECT_EQ(bq::sqs::proxy_of("http://127.0.0.1:9/"), "the proxy http://user:***@127.0.0.1:1 (http_proxy)");
  auto client = bq::sqs::make_curl_http_client();
  bq::sqs::HttpRequest request;
  request.url = "http://127.0.0.1:9/";
  request.body = "{}";
  auto response = client->post(request);
  ASSERT_FALSE(response);
  EXPECT_NE(response.error().message().find("through the proxy http://user:***@127.0.0.1:1 (http_proxy)"),
            std::string::npos)
      << response.error().message();
  EXPECT_EQ(response.error().message().find("s3cretpw"), std::string::npos) << response.error().message();
}
