// SPDX-License-Identifier: Apache-2.0
// A TLS file that cannot be used is named with the reason, by every
// transport that speaks TLS, before its TLS library reports only "asio.ssl
// error" or "a SSL error occurred".
#include "builtin.hpp"
#include "temp_dir.hpp"

#include <babelqueue/tls_options.hpp>
#include <babelqueue/transport_registry.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace bq = babelqueue;

namespace {

std::string refusal(const bq::TlsOptions& tls) {
  auto checked = tls.check_files();
  return checked ? std::string() : checked.error().message();
}

}  // namespace

TEST(TlsFiles, EachUnusableFileIsNamedWithTheReason) {
  bq::test_support::TempDir dir;
  const std::string missing = (dir.path() / "missing.pem").string();
  const std::string empty = (dir.path() / "empty.pem").string();
  const std::string text = (dir.path() / "text.pem").string();
  const std::string pem = (dir.path() / "ca.pem").string();
  std::ofstream(empty).flush();
  std::ofstream(text) << "not a certificate\n";
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

  bq::TlsOptions tls;
  tls.enabled = true;
  tls.ca_file = missing;
  EXPECT_EQ(refusal(tls), "tls_ca '" + missing + "' cannot be read: No such file or directory");
  tls.ca_file = dir.path().string();
  EXPECT_EQ(refusal(tls), "tls_ca '" + dir.path().string() + "' is a directory, not a PEM file");
  tls.ca_file = empty;
  EXPECT_EQ(refusal(tls), "tls_ca '" + empty + "' is empty, not a PEM file");
  tls.ca_file = text;
  EXPECT_EQ(refusal(tls), "tls_ca '" + text + "' holds no PEM block (-----BEGIN ...-----)");
  tls.ca_file = pem;
  EXPECT_EQ(refusal(tls), "");
  tls.cert_file = pem;
  tls.key_file = missing;
  EXPECT_TRUE(tls.check()) << "reading a URL's options does not open files";
  EXPECT_EQ(refusal(tls), "tls_key '" + missing + "' cannot be read: No such file or directory");
}

TEST(TlsFiles, EveryTlsTransportSaysWhichFileAndWhy) {
  bq::builtin::register_transports();
  const std::string missing = "/nonexistent-bq-dir/ca.pem";
  const std::string said = "tls_ca '" + missing + "' cannot be read: No such file or directory";
  const std::map<std::string, std::string> urls = {
      {"rediss", "rediss://127.0.0.1:1/0?tls_ca=" + missing},
      {"amqps", "amqps://127.0.0.1:1/?tls_ca=" + missing},
      {"artemis+ssl", "artemis+ssl://127.0.0.1:1?tls_ca=" + missing},
      {"pulsar+ssl", "pulsar+ssl://127.0.0.1:1?tls_ca=" + missing},
      {"kafka", "kafka://127.0.0.1:1?tls=1&tls_ca=" + missing},
      {"sqs", "sqs://us-east-1?endpoint=https://127.0.0.1:1&tls_ca=" + missing},
  };
  int tried = 0;
  for (const std::string& scheme : bq::registered_schemes()) {
    const auto url = urls.find(scheme);
    if (url == urls.end()) continue;
    ++tried;
    auto opened = bq::open_transport(url->second);
    ASSERT_FALSE(opened) << url->second;
    EXPECT_NE(opened.error().message().find(said), std::string::npos) << opened.error().message();
  }
  EXPECT_GT(tried, 0);
}
