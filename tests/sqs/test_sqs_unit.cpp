// SPDX-License-Identifier: Apache-2.0
// babelqueue::sqs without a server: the SigV4 signer (AWS's documented
// examples, and botocore on the same inputs), the credentials chain, the
// binding's rules (projection, gate, reconciliation, FIFO ids) and URLs.
#include "../../src/sqs/sigv4_signer.hpp"
#include "../../src/sqs/sqs_projection.hpp"
#include "../transports/temp_dir.hpp"
#include "broker_env.hpp"
#include "conformance_suite.hpp"

#include <babelqueue/binding.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/sqs/transport.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace bq = babelqueue;
using bq::sqs::AwsCredentials;
using bq::sqs::HttpRequest;

namespace {

std::chrono::system_clock::time_point at(const char* amz_date) {
  std::tm tm{};
  strptime(amz_date, "%Y%m%dT%H%M%SZ", &tm);
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string header(const HttpRequest& request, std::string_view name) {
  for (const auto& [key, value] : request.headers) {
    if (key == name) return value;
  }
  return {};
}

AwsCredentials example_credentials() {
  AwsCredentials credentials;
  credentials.access_key_id = "AKIDEXAMPLE";
  credentials.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  return credentials;
}

// ---- AWS's worked examples (Signature Version 4 documentation) ----

TEST(SqsSigner, DerivesTheDocumentedSigningKey) {
  // "Examples of how to derive a signing key": secret, 20150830, us-east-1, iam.
  EXPECT_EQ(bq::sqs::sigv4_signing_key_hex("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1", "iam"),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
}

TEST(SqsSigner, SignsTheDocumentedIamListUsersRequest) {
  // GET https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08 at 20150830T123600Z.
  HttpRequest request;
  request.url = "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08";
  request.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
  ASSERT_TRUE(bq::sqs::sign_v4("GET", request, example_credentials(), "us-east-1", "iam", at("20150830T123600Z")));
  EXPECT_EQ(header(request, "X-Amz-Date"), "20150830T123600Z");
  EXPECT_EQ(header(request, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-date, "
            "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

TEST(SqsSigner, SignsTheTestSuitesGetVanilla) {
  // The SigV4 test suite's get-vanilla: GET / of example.amazonaws.com, service "service".
  HttpRequest request;
  request.url = "https://example.amazonaws.com/";
  ASSERT_TRUE(bq::sqs::sign_v4("GET", request, example_credentials(), "us-east-1", "service", at("20150830T123600Z")));
  EXPECT_EQ(header(request, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(SqsSigner, RefusesAUrlItCannotSign) {
  HttpRequest request;
  request.url = "127.0.0.1:9324/";
  auto signed_ = bq::sqs::sign_v4("POST", request, example_credentials(), "us-east-1", "sqs", at("20150830T123600Z"));
  ASSERT_FALSE(signed_);
  EXPECT_EQ(signed_.error().code(), bq::Errc::invalid_argument);
}

// ---- botocore on the same inputs ----

struct SigningCase {
  std::string method;
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string token;
  std::string region;
  std::string service;
  std::string amz_date;
};

TEST(SqsSigner, AgreesWithBotocore) {
  const std::vector<SigningCase> cases = {
      {"POST",
       "http://127.0.0.1:9324/",
       {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", "AmazonSQS.SendMessage"}},
       R"({"QueueUrl":"http://127.0.0.1:9324/000000000000/orders","MessageBody":"{\"job\":\"urn:x\"}"})",
       "",
       "us-east-1",
       "sqs",
       "20261203T101112Z"},
      {"POST",
       "https://sqs.eu-central-1.amazonaws.com/",
       {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", "AmazonSQS.ReceiveMessage"}},
       R"({"QueueUrl":"https://sqs.eu-central-1.amazonaws.com/123456789012/q","WaitTimeSeconds":20})",
       "FwoGZXIvYXdzEXAMPLE//session+token=",
       "eu-central-1",
       "sqs",
       "20280229T235959Z"},
      {"POST",
       "https://sqs.us-west-2.amazonaws.com:443/",
       {{"Content-Type", "application/x-amz-json-1.0"}, {"X-Amz-Target", "AmazonSQS.DeleteMessageBatch"}},
       "{\"unicode\":\"h\u00e9llo \u4e2d\u6587 \xf0\x9f\x8e\x89\",\"spaces\":\"a  b\"}",
       "",
       "us-west-2",
       "sqs",
       "20270101T000000Z"},
      {"GET",
       "https://example.amazonaws.com/path/x?b=2&a=1&c=with%20space&empty=",
       {{"X-Custom", "  padded   value  "}},
       "",
       "",
       "us-east-1",
       "service",
       "20150830T123600Z"},
  };
  bq::test_support::TempDir dir("bq-sqs-signer");
  const std::string input = dir.file("cases.json");
  bq::Array list;
  std::vector<std::string> ours;
  for (const SigningCase& c : cases) {
    bq::Object headers;
    for (const auto& [name, value] : c.headers) headers.set(name, value);
    list.push_back(bq::Value::object({{"method", c.method},
                                      {"url", c.url},
                                      {"headers", bq::Value(std::move(headers))},
                                      {"body", c.body},
                                      {"access_key", "AKIDEXAMPLE"},
                                      {"secret_key", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"},
                                      {"token", c.token},
                                      {"region", c.region},
                                      {"service", c.service},
                                      {"amz_date", c.amz_date}}));
    HttpRequest request;
    request.url = c.url;
    request.headers = c.headers;
    request.body = c.body;
    AwsCredentials credentials = example_credentials();
    credentials.session_token = c.token;
    ASSERT_TRUE(bq::sqs::sign_v4(c.method, request, credentials, c.region, c.service, at(c.amz_date.c_str())));
    ours.push_back(header(request, "Authorization"));
    if (!c.token.empty()) {
      EXPECT_EQ(header(request, "X-Amz-Security-Token"), c.token);
    }
  }
  {
    std::ofstream out(input);
    out << bq::to_json(bq::Value(std::move(list))).value();
  }
  const std::string output = bq::testing::run_command_output(std::string(BQ_SOURCE_DIR) + "/scripts/python-sdk run " +
                                                             BQ_SOURCE_DIR + "/tests/sqs/botocore_sign.py " + input);
  const auto theirs = bq::parse_json(output.substr(output.find('['))).value();
  ASSERT_EQ(theirs.as_array().size(), ours.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i], theirs.as_array()[i].as_string()) << "case " << i << ": " << cases[i].url;
  }
}

// ---- credentials and region ----

class SqsCredentials : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      ::unsetenv(name);
    }
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", dir_.file("credentials").c_str(), 1);
    ::setenv("AWS_CONFIG_FILE", dir_.file("config").c_str(), 1);
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_.file(name)) << text; }

  static constexpr const char* kVariables[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",           "AWS_PROFILE",
      "AWS_REGION",        "AWS_DEFAULT_REGION",    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"};
  bq::test_support::TempDir dir_{"bq-sqs-credentials"};
  std::map<std::string, std::string> saved_;
};

TEST_F(SqsCredentials, ExplicitOnesWin) {
  ::setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
  bq::sqs::CredentialOptions options;
  options.explicit_credentials = AwsCredentials{"EXPLICIT", "secret", "tok", ""};
  auto found = bq::sqs::resolve_credentials(options);
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->access_key_id, "EXPLICIT");
  EXPECT_EQ(found->session_token, "tok");
}

TEST_F(SqsCredentials, EnvironmentWithSessionToken) {
  ::setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
  ::setenv("AWS_SESSION_TOKEN", "envtoken", 1);
  write("credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
  auto found = bq::sqs::resolve_credentials();
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->access_key_id, "ENVKEY");
  EXPECT_EQ(found->session_token, "envtoken");
  EXPECT_EQ(found->source, "environment");
}

TEST_F(SqsCredentials, SharedFilesAndProfiles) {
  write("credentials",
        "# comment\n[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = d\n\n"
        "[dev]\naws_access_key_id=DEVKEY\naws_secret_access_key=devsecret\naws_session_token = devtoken\n");
  write("config",
        "[default]\nregion = eu-west-1\n[profile dev]\nregion = ap-south-1\n"
        "[profile cfgonly]\naws_access_key_id = CFGKEY\naws_secret_access_key = cfgsecret\n");
  auto by_default = bq::sqs::resolve_credentials();
  ASSERT_TRUE(by_default) << by_default.error().message();
  EXPECT_EQ(by_default->access_key_id, "DEFAULTKEY");
  EXPECT_EQ(bq::sqs::resolve_region("").value(), "eu-west-1");

  ::setenv("AWS_PROFILE", "dev", 1);
  auto dev = bq::sqs::resolve_credentials();
  ASSERT_TRUE(dev) << dev.error().message();
  EXPECT_EQ(dev->access_key_id, "DEVKEY");
  EXPECT_EQ(dev->session_token, "devtoken");
  EXPECT_EQ(bq::sqs::resolve_region("").value(), "ap-south-1");

  bq::sqs::CredentialOptions options;
  options.profile = "cfgonly";
  auto from_config = bq::sqs::resolve_credentials(options);
  ASSERT_TRUE(from_config) << from_config.error().message();
  EXPECT_EQ(from_config->access_key_id, "CFGKEY");

  ::setenv("AWS_REGION", "us-west-2", 1);
  EXPECT_EQ(bq::sqs::resolve_region("").value(), "us-west-2");
  EXPECT_EQ(bq::sqs::resolve_region("sa-east-1").value(), "sa-east-1");
}

TEST_F(SqsCredentials, NoneFoundIsAClearErrorWithoutSecrets) {
  ::setenv("AWS_ACCESS_KEY_ID", "ONLYKEY", 1);
  auto half = bq::sqs::resolve_credentials();
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().code(), bq::Errc::auth);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  auto none = bq::sqs::resolve_credentials();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), bq::Errc::auth);
  EXPECT_NE(none.error().message().find("AWS_ACCESS_KEY_ID"), std::string::npos) << none.error().message();
  EXPECT_NE(none.error().message().find("profile 'default'"), std::string::npos) << none.error().message();
  auto region = bq::sqs::resolve_region("");
  ASSERT_FALSE(region);
  EXPECT_NE(region.error().message().find("AWS_REGION"), std::string::npos);

  write("credentials", "[default]\naws_access_key_id = HALFKEY\n");
  auto incomplete = bq::sqs::resolve_credentials();
  ASSERT_FALSE(incomplete);
  EXPECT_NE(incomplete.error().message().find("only one of"), std::string::npos);

  AwsCredentials secret{"AKIDLONGKEY12345", "do-not-print-me", "token-do-not-print", "environment"};
  const std::string shown = bq::sqs::to_string(secret);
  EXPECT_EQ(shown.find("do-not-print"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("AKIDLONGKEY12345"), std::string::npos) << shown;
}

TEST_F(SqsCredentials, OpeningWithoutCredentialsFailsClearly) {
  bq::sqs::Transport::Options options;
  options.region = "us-east-1";
  auto opened = bq::sqs::Transport::open(options);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code(), bq::Errc::auth);
}

// ---- the binding's rules ----

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(BQ_CONFORMANCE_DIR) + "/fixtures/" + name);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SqsBinding, ProjectsTheContractAttributesThenHeadersWithinTen) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  const std::string body = fixture("order-created.json");
  bq::Headers headers{{"traceparent", "00-abc-01"}, {"bq-job", "collides"}, {"", "x"}, {"empty", ""},
                      {"bad name!", "x"},           {"AWS.reserved", "x"}};
  for (int i = 0; i < 8; ++i) headers["x-h" + std::to_string(i)] = std::to_string(i);
  const auto attributes = bq::sqs_detail::project_attributes(body, headers);
  ASSERT_EQ(attributes.size(), 10U);
  const std::vector<std::string> contract = {"bq-job",         "bq-trace-id",  "bq-message-id", "bq-schema-version",
                                             "bq-source-lang", "bq-created-at"};
  for (std::size_t i = 0; i < contract.size(); ++i) EXPECT_EQ(attributes[i].name, contract[i]);
  EXPECT_EQ(attributes[0].value, "urn:babel:orders:created");
  EXPECT_EQ(attributes[3].data_type, "Number");
  EXPECT_EQ(attributes[5].value, "1749132727000");
  // Headers in name order after the contract, without the invalid ones.
  EXPECT_EQ(attributes[6].name, "traceparent");
  EXPECT_EQ(attributes[7].name, "x-h0");
  EXPECT_EQ(attributes[9].name, "x-h2");
  EXPECT_TRUE(bq::sqs_detail::project_attributes("not json", {}).empty());
}

TEST(SqsBinding, TheSchemaVersionGate) {
  // The kit's gate, as the SQS consumer applies it to the bq-schema-version attribute.
  auto passes = [](std::optional<std::string> value) {
    return !bq::binding::schema_version_gate(value ? std::optional<std::string_view>(*value) : std::nullopt);
  };
  EXPECT_TRUE(passes(std::nullopt));
  EXPECT_TRUE(passes(""));
  EXPECT_TRUE(passes(" \t\n\v\f\r"));
  EXPECT_TRUE(passes("1"));
  for (const char* rejected : {"2", "01", " 1", "1 ", "1.0", "x", "\xc2\xa0", "\xe3\x80\x80",
                               "\xef\xbb\xbf"
                               "1"}) {
    EXPECT_FALSE(passes(std::string(rejected))) << rejected;
  }
}

TEST(SqsBinding, NativeAttemptsFromApproximateReceiveCount) {
  auto native = [](std::optional<std::string> count) {
    return bq::sqs_detail::native_attempts(count ? &*count : nullptr);
  };
  EXPECT_EQ(native("1"), 0);
  EXPECT_EQ(native("3"), 2);
  EXPECT_EQ(native("0"), 0);
  EXPECT_EQ(native("not-a-number"), std::nullopt);
  EXPECT_EQ(native("3x"), std::nullopt);
  EXPECT_EQ(native(""), std::nullopt);
  EXPECT_EQ(native(std::nullopt), std::nullopt);
}

TEST(SqsBinding, FifoDeduplicationIdsSeparateRetriesFromTheOriginal) {
  auto env = bq::Envelope::make("urn:test:fifo", bq::Value::object({{"n", 1}})).value();
  const std::string id(env.id());
  EXPECT_EQ(bq::sqs_detail::fifo_deduplication_id(env.body()), id);
  EXPECT_EQ(bq::sqs_detail::fifo_deduplication_id(env.encode_with_attempts(1).value()), id + ":1");
  EXPECT_EQ(bq::sqs_detail::fifo_deduplication_id(env.encode_with_attempts(2).value()), id + ":2");
  const auto block = bq::DeadLetter::make(bq::DeadLetterReason::failed, "q", 3, "boom");
  auto dead = bq::Envelope::decode(env.encode_with_attempts(3).value()).value().encode_dead_letter(block).value();
  EXPECT_EQ(bq::sqs_detail::fifo_deduplication_id(dead), id + ":3:dead-letter");
  EXPECT_EQ(bq::sqs_detail::fifo_deduplication_id("raw bytes"), bq::sqs::sha256_hex("raw bytes"));
  EXPECT_EQ(bq::sqs_detail::fifo_safe_id(std::string(200, 'a')).size(), 64U);
  EXPECT_EQ(bq::sqs_detail::fifo_safe_id("with space"), bq::sqs::sha256_hex("with space"));
}

// ---- requests and answers, through a scripted HTTP client ----

// Answers each SQS operation with a scripted body and keeps the requests.
class ScriptedHttpClient final : public bq::sqs::HttpClient {
 public:
  void answer(const std::string& operation, std::string body) { answers_[operation] = std::move(body); }

  bq::Result<bq::sqs::HttpResponse> post(const HttpRequest& request) override {
    std::string target = header(request, "X-Amz-Target");
    target = target.substr(target.find('.') + 1);
    requests.emplace_back(target, request.body);
    bq::sqs::HttpResponse response;
    response.status = 200;
    response.body = answers_.count(target) != 0 ? answers_[target] : "{}";
    return response;
  }
  void abort() override {}

  std::vector<std::pair<std::string, std::string>> requests;  // operation, body

 private:
  std::map<std::string, std::string> answers_;
};

struct Scripted {
  std::shared_ptr<ScriptedHttpClient> http = std::make_shared<ScriptedHttpClient>();
  std::unique_ptr<bq::sqs::Transport> transport;

  explicit Scripted(bool fifo) {
    bq::sqs::Transport::Options options;
    options.region = "us-east-1";
    options.endpoint = "http://127.0.0.1:9";
    options.queue_url_prefix = "http://127.0.0.1:9/000000000000";  // no GetQueueUrl
    options.fifo = fifo;
    options.credentials.explicit_credentials = example_credentials();
    options.http_client = http;
    transport = bq::sqs::Transport::open(options).value();
  }

  bq::Value last_request(const std::string& operation) const {
    for (auto it = http->requests.rbegin(); it != http->requests.rend(); ++it) {
      if (it->first == operation) return bq::parse_json(it->second).value();
    }
    ADD_FAILURE() << "no " << operation << " request";
    return bq::Value::object();
  }
};

TEST(SqsRequests, CapabilitiesPromiseOrderingKeysAndDeduplicationOnlyWithFifo) {
  const auto fifo = Scripted(true).transport->capabilities();
  EXPECT_TRUE(fifo.ordering_key);
  EXPECT_TRUE(fifo.deduplication);
  EXPECT_TRUE(fifo.batch_ack);
  // A transport without fifo=1 serves standard queues too, which have
  // neither message groups nor deduplication ids.
  const auto standard = Scripted(false).transport->capabilities();
  EXPECT_FALSE(standard.ordering_key);
  EXPECT_FALSE(standard.deduplication);
  EXPECT_TRUE(standard.batch_ack);
}

TEST(SqsRequests, AFifoReceiveAsksForTheGroupAndCarriesItAsTheOrderingKey) {
  Scripted sqs(false);
  sqs.http->answer("ReceiveMessage", R"({"Messages":[{"MessageId":"m1","ReceiptHandle":"r1","Body":"{}",)"
                                     R"("Attributes":{"ApproximateReceiveCount":"2","MessageGroupId":"group-A"}}]})");
  auto got = sqs.transport->receive("orders.fifo", 10, std::chrono::milliseconds(0));
  ASSERT_TRUE(got) << got.error().message();
  ASSERT_EQ(got->size(), 1U);
  EXPECT_EQ((*got)[0].ordering_key, "group-A");
  EXPECT_EQ((*got)[0].native_attempts, 1);
  const bq::Value request = sqs.last_request("ReceiveMessage");
  EXPECT_EQ(request["AttributeNames"], bq::Value::array({"ApproximateReceiveCount", "MessageGroupId"}));

  // A standard queue's messages have no group: it is not asked for.
  sqs.http->answer("ReceiveMessage", R"({"Messages":[{"MessageId":"m2","ReceiptHandle":"r2","Body":"{}"}]})");
  auto standard = sqs.transport->receive("orders", 10, std::chrono::milliseconds(0));
  ASSERT_TRUE(standard);
  ASSERT_EQ(standard->size(), 1U);
  EXPECT_EQ((*standard)[0].ordering_key, "");
  EXPECT_EQ(sqs.last_request("ReceiveMessage")["AttributeNames"], bq::Value::array({"ApproximateReceiveCount"}));
}

TEST(SqsRequests, AFifoPublishSendsTheOrderingKeyAsTheGroup) {
  Scripted sqs(true);
  bq::PublishOptions options;
  options.ordering_key = "group-A";
  options.dedup_id = "d-1";
  ASSERT_TRUE(sqs.transport->publish("orders.fifo", "{}", options));
  const bq::Value request = sqs.last_request("SendMessage");
  EXPECT_EQ(request["MessageGroupId"].as_string(), "group-A");
  EXPECT_EQ(request["MessageDeduplicationId"].as_string(), "d-1");
}

TEST(SqsRequests, AckBatchNamesEachDeliverySqsDidNotDelete) {
  Scripted sqs(false);
  std::vector<bq::Delivery> deliveries(4);
  for (std::size_t i = 0; i < deliveries.size(); ++i) {
    deliveries[i].queue = "orders";
    deliveries[i].token.text = "r" + std::to_string(i);
  }
  deliveries[3].token.text.clear();  // never received: nothing to send for it
  sqs.http->answer("DeleteMessageBatch",
                   R"({"Successful":[{"Id":"0"},{"Id":"2"}],"Failed":[{"Id":"1","SenderFault":true,)"
                   R"("Code":"ReceiptHandleIsInvalid","Message":"The receipt handle is not valid."}]})");
  std::vector<bq::AckFailure> failures;
  auto acked = sqs.transport->ack_batch(deliveries, failures);
  ASSERT_FALSE(acked);
  EXPECT_EQ(acked.error().code(), bq::Errc::not_found);
  ASSERT_EQ(failures.size(), 2U);
  EXPECT_EQ(failures[0].index, 1U);
  EXPECT_EQ(failures[0].error.code(), bq::Errc::not_found);
  EXPECT_NE(failures[0].error.message().find("not held by this delivery"), std::string::npos);
  EXPECT_EQ(failures[1].index, 3U);
  EXPECT_EQ(failures[1].error.code(), bq::Errc::invalid_argument);
  // One call for the three with a receipt handle.
  EXPECT_EQ(sqs.last_request("DeleteMessageBatch")["Entries"].as_array().size(), 3U);

  // The one-argument form: the same call, the first failure's code.
  failures.clear();
  auto again = sqs.transport->ack_batch(std::span(deliveries).first(3));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), bq::Errc::not_found);

  // A closed transport settles nothing, and says so for each delivery.
  sqs.transport->close();
  auto closed = sqs.transport->ack_batch(std::span(deliveries).first(2), failures);
  ASSERT_FALSE(closed);
  ASSERT_EQ(failures.size(), 2U);
  EXPECT_EQ(failures[0].error.code(), bq::Errc::closed);
  EXPECT_EQ(failures[1].index, 1U);
}

// ---- what the transport logs ----

// Keeps every line a transport logs.
struct LogLines {
  std::mutex mutex;
  std::vector<std::pair<bq::LogLevel, std::string>> lines;

  bq::LogSink sink() {
    return [this](bq::LogLevel level, std::string_view message) {
      const std::lock_guard lock(mutex);
      lines.emplace_back(level, std::string(message));
    };
  }
  std::size_t count(bq::LogLevel level, std::string_view part) {
    const std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const auto& line) {
      return line.first == level && line.second.find(part) != std::string::npos;
    }));
  }
  std::string all() {
    const std::lock_guard lock(mutex);
    std::string text;
    for (const auto& line : lines) text += std::string(bq::to_string(line.first)) + ": " + line.second + "\n";
    return text;
  }
};

// Gives no answer while down is set (as a dead endpoint); answers GetQueueUrl
// with a queue URL and everything else with {}. With hold set, a post waits
// until abort().
class FlakyHttpClient final : public bq::sqs::HttpClient {
 public:
  std::atomic<bool> down{false};
  std::atomic<bool> hold{false};
  std::atomic<int> holding{0};

  bq::Result<bq::sqs::HttpResponse> post(const HttpRequest& request) override {
    if (hold.load()) {
      ++holding;
      std::unique_lock lock(mutex_);
      aborted_signal_.wait(lock, [&] { return aborted_; });
      return bq::unexpected(bq::Errc::closed, "aborted");
    }
    if (down.load()) {
      return bq::unexpected(bq::Errc::connection, "cannot reach the SQS endpoint (127.0.0.1:9): Connection refused");
    }
    bq::sqs::HttpResponse response;
    response.status = 200;
    response.body = header(request, "X-Amz-Target") == "AmazonSQS.GetQueueUrl"
                        ? R"({"QueueUrl":"http://127.0.0.1:9/000000000000/orders"})"
                        : "{}";
    return response;
  }
  void abort() override {
    const std::lock_guard lock(mutex_);
    aborted_ = true;
    aborted_signal_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable aborted_signal_;
  bool aborted_ = false;
};

bq::sqs::Transport::Options logged_options(const std::shared_ptr<FlakyHttpClient>& http, LogLines& log) {
  bq::sqs::Transport::Options options;
  options.region = "us-east-1";
  options.endpoint = "http://127.0.0.1:9";
  options.credentials.explicit_credentials = example_credentials();
  options.credentials.explicit_credentials->session_token = "SESSION-TOKEN-EXAMPLE";
  options.http_client = http;
  options.log = log.sink();
  return options;
}

TEST(SqsLog, SaysWhatItResolvedAndWhenTheEndpointStopsAndStartsAnswering) {
  LogLines log;
  auto http = std::make_shared<FlakyHttpClient>();
  auto transport = bq::sqs::Transport::open(logged_options(http, log)).value();
  EXPECT_EQ(log.count(bq::LogLevel::info,
                      "sqs: region us-east-1, endpoint http://127.0.0.1:9, credentials from "
                      "options"),
            1U)
      << log.all();

  ASSERT_TRUE(transport->publish("orders", "{}"));
  ASSERT_TRUE(transport->publish("orders", "{}"));  // the URL is cached: said once
  EXPECT_EQ(log.count(bq::LogLevel::info, "sqs: queue 'orders' is at http://127.0.0.1:9/000000000000/orders"), 1U)
      << log.all();

  http->down = true;
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(transport->publish("orders", "{}"));
  EXPECT_EQ(log.count(bq::LogLevel::warning, "sqs: no answer from http://127.0.0.1:9 to SendMessage"), 1U) << log.all();
  EXPECT_EQ(log.count(bq::LogLevel::debug, "sqs: still no answer"), 2U) << log.all();
  http->down = false;
  ASSERT_TRUE(transport->publish("orders", "{}"));
  ASSERT_TRUE(transport->publish("orders", "{}"));
  EXPECT_EQ(log.count(bq::LogLevel::info, "sqs: http://127.0.0.1:9 answers again"), 1U) << log.all();

  const std::string lines = log.all();
  for (const char* secret : {"AKIDEXAMPLE", "wJalrXUtnFEMI", "SESSION-TOKEN-EXAMPLE", "Signature="}) {
    EXPECT_EQ(lines.find(secret), std::string::npos) << secret << " in\n" << lines;
  }
}

TEST(SqsLog, SaysWhenCloseGivesUpOnCallsInFlight) {
  LogLines log;
  auto http = std::make_shared<FlakyHttpClient>();
  auto options = logged_options(http, log);
  options.queue_url_prefix = "http://127.0.0.1:9/000000000000";
  auto transport = bq::sqs::Transport::open(options).value();
  http->hold = true;
  std::thread publisher([&] { EXPECT_FALSE(transport->publish("orders", "{}")); });
  while (http->holding.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  transport->close(std::chrono::milliseconds(50));
  publisher.join();
  EXPECT_EQ(log.count(bq::LogLevel::warning, "sqs: close gave up after 50ms on 1 call(s) still in flight"), 1U)
      << log.all();
}

// ---- the libcurl client's TLS options, against a local https server ----

// openssl s_server on 127.0.0.1 with a certificate for 127.0.0.1 signed by a
// CA of its own, asking every client for a certificate signed by that CA.
// It never answers a POST, so a post that got through TLS and the client
// certificate check runs into its timeout; any other outcome is a refusal.
class TlsEndpoint {
 public:
  TlsEndpoint() {
    port_ = free_port();
    const std::string d = dir_.path().string();
    const std::string sign = " -CA ca.crt -CAkey ca.key -days 1";
    pid_ = std::stoi(bq::testing::run_command_output(
        "exec 2>/dev/null; cd '" + d + "' && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca " +
        "-keyout ca.key -out ca.crt && openssl req -newkey rsa:2048 -nodes -subj /CN=sqs -keyout server.key " +
        "-out server.csr && printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext && openssl x509 -req -in " +
        "server.csr" + sign + " -set_serial 1 -extfile server.ext -out server.crt && openssl req -newkey " +
        "rsa:2048 -nodes -subj /CN=client -keyout client.key -out client.csr && openssl x509 -req -in client.csr" +
        sign +
        " -set_serial 2 -out client.crt && { openssl s_server -quiet -www -accept 127.0.0.1:" + std::to_string(port_) +
        " -cert server.crt -key server.key -CAfile ca.crt -Verify 1 " + "</dev/null >/dev/null 2>&1 & echo $!; }"));
    for (int i = 0; i < 100 && !accepting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~TlsEndpoint() { ::kill(pid_, SIGTERM); }
  TlsEndpoint(const TlsEndpoint&) = delete;
  TlsEndpoint& operator=(const TlsEndpoint&) = delete;

  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/"; }
  std::string file(const std::string& name) const { return dir_.file(name); }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return address;
  }
  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = loopback(0);
    socklen_t length = sizeof(address);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
  }
  bool accepting() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in address = loopback(port_);
    const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    return ok;
  }

  bq::test_support::TempDir dir_{"bq-sqs-tls"};
  int port_ = 0;
  int pid_ = 0;
};

TEST(SqsCurlClient, UsesTheCaFileTheClientCertificateAndVerify) {
  const TlsEndpoint server;
  auto post = [&](const bq::sqs::CurlOptions& options) {
    auto client = bq::sqs::make_curl_http_client(options);
    HttpRequest request;
    request.url = server.url();
    request.body = "{}";
    request.timeout = std::chrono::milliseconds(1500);
    return client->post(request);
  };
  bq::sqs::CurlOptions trusted;
  trusted.ca_file = server.file("ca.crt");
  trusted.cert_file = server.file("client.crt");
  trusted.key_file = server.file("client.key");
  auto through = post(trusted);
  ASSERT_FALSE(through);
  // Through TLS, the request was sent and the server never answers: the
  // outcome is unknown (the server may have acted on it), not a timeout.
  EXPECT_EQ(through.error().code(), bq::Errc::outcome_unknown) << "got through TLS: " << through.error().message();

  // The system's CAs do not know the server's CA.
  bq::sqs::CurlOptions untrusted = trusted;
  untrusted.ca_file.clear();
  auto refused = post(untrusted);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::connection);
  EXPECT_NE(refused.error().message().find("TLS"), std::string::npos) << refused.error().message();
  // Unless verification is off.
  untrusted.verify = false;
  auto unverified = post(untrusted);
  ASSERT_FALSE(unverified);
  EXPECT_EQ(unverified.error().code(), bq::Errc::outcome_unknown) << unverified.error().message();

  // Without a client certificate the server hangs up.
  bq::sqs::CurlOptions anonymous;
  anonymous.ca_file = trusted.ca_file;
  auto hung_up = post(anonymous);
  ASSERT_FALSE(hung_up);
  EXPECT_EQ(hung_up.error().code(), bq::Errc::connection) << hung_up.error().message();
}

// ---- URLs ----

TEST(SqsUrl, ReadsEveryOption) {
  auto url = bq::Url::parse(
      "sqs://eu-west-1?endpoint=http://127.0.0.1:9324&prefix=http://127.0.0.1:9324/000000000000&fifo=1&group_id=g"
      "&wait_time=5&visibility_timeout=7&content_dedup=1&create=1&dead_letter_queue_url=http://h/1/dlq&profile=dev"
      "&request_timeout=9&ca_file=/etc/ssl/ca.pem");
  ASSERT_TRUE(url);
  auto options = bq::sqs::Transport::options_from_url(*url);
  ASSERT_TRUE(options) << options.error().message();
  EXPECT_EQ(options->region, "eu-west-1");
  EXPECT_EQ(options->endpoint, "http://127.0.0.1:9324");
  EXPECT_EQ(options->queue_url_prefix, "http://127.0.0.1:9324/000000000000");
  EXPECT_TRUE(options->fifo);
  EXPECT_EQ(options->group_id, "g");
  EXPECT_EQ(options->max_wait, std::chrono::seconds(5));
  EXPECT_EQ(options->visibility_timeout, std::chrono::seconds(7));
  EXPECT_TRUE(options->content_dedup);
  EXPECT_TRUE(options->create_queues);
  EXPECT_EQ(options->dead_letter_queue_url, "http://h/1/dlq");
  EXPECT_EQ(options->credentials.profile, "dev");
  EXPECT_EQ(options->request_timeout, std::chrono::seconds(9));
  EXPECT_EQ(options->curl.ca_file, "/etc/ssl/ca.pem");
}

TEST(SqsUrl, RefusesUnknownAndOutOfRangeParameters) {
  for (const char* text :
       {"sqs://us-east-1?wait_tme=3", "sqs://us-east-1?wait_time=21", "sqs://us-east-1?fifo=maybe",
        "sqs://us-east-1?visibility_timeout=-1", "sqs://us-east-1?visibility_timeout=1.5", "sqs://us-east-1/path"}) {
    auto url = bq::Url::parse(text);
    ASSERT_TRUE(url) << text;
    auto options = bq::sqs::Transport::options_from_url(*url);
    ASSERT_FALSE(options) << text;
    EXPECT_EQ(options.error().code(), bq::Errc::invalid_argument) << text;
  }
}

// Every field options_from_url sets, as one text, so a whole Options compares at once.
std::string url_fields(const bq::sqs::Transport::Options& o) {
  std::ostringstream out;
  out << "region=" << o.region << " endpoint=" << o.endpoint << " prefix=" << o.queue_url_prefix << " fifo=" << o.fifo
      << " group_id=" << o.group_id << " content_dedup=" << o.content_dedup << " max_wait=" << o.max_wait.count()
      << "s visibility_timeout=" << o.visibility_timeout.count() << "s create=" << o.create_queues
      << " dlq=" << o.dead_letter_queue_url << " profile=" << o.credentials.profile
      << " request_timeout=" << o.request_timeout.count() << "ms ca_file=" << o.curl.ca_file
      << " cert_file=" << o.curl.cert_file << " key_file=" << o.curl.key_file << " verify=" << o.curl.verify;
  return out.str();
}

std::string url_fields_of(const std::string& text) {
  auto url = bq::Url::parse(text);
  if (!url) return "unparsable URL: " + url.error().message();
  auto options = bq::sqs::Transport::options_from_url(*url);
  if (!options) return "refused: " + options.error().message();
  return url_fields(*options);
}

std::string url_error_of(const std::string& text) {
  auto url = bq::Url::parse(text);
  if (!url) return "unparsable URL: " + url.error().message();
  auto options = bq::sqs::Transport::options_from_url(*url);
  if (options) return "accepted";
  EXPECT_EQ(options.error().code(), bq::Errc::invalid_argument) << text;
  return options.error().message();
}

// The URLs the tests, the scripts and docs/transports/sqs.md use read the
// same Options as before the shared URL reader.
TEST(SqsUrl, TheUrlsInUseReadTheSameOptions) {
  using Options = bq::sqs::Transport::Options;
  const std::string local = "sqs://us-east-1?endpoint=http://127.0.0.1:9324";
  auto expect = [](auto change) {
    Options options;
    options.region = "us-east-1";
    options.endpoint = "http://127.0.0.1:9324";
    change(options);
    return url_fields(options);
  };
  const std::pair<std::string, std::string> cases[] = {
      {"sqs://eu-central-1", url_fields([] {
         Options options;
         options.region = "eu-central-1";
         return options;
       }())},
      {"sqs://us-east-1", url_fields([] {
         Options options;
         options.region = "us-east-1";
         return options;
       }())},
      {local, expect([](Options&) {})},
      {local + "&create=1", expect([](Options& o) { o.create_queues = true; })},
      {local + "&create=1&visibility_timeout=2", expect([](Options& o) {
         o.create_queues = true;
         o.visibility_timeout = std::chrono::seconds(2);
       })},
      {local + "&create=1&visibility_timeout=30&fifo=1&content_dedup=1&group_id=g1", expect([](Options& o) {
         o.create_queues = true;
         o.fifo = true;
         o.content_dedup = true;
         o.group_id = "g1";
       })},
      {local + "&visibility_timeout=3", expect([](Options& o) { o.visibility_timeout = std::chrono::seconds(3); })},
      {local + "&create=1&visibility_timeout=2&dead_letter_queue_url=http://127.0.0.1:9324/000000000000/dlq",
       expect([](Options& o) {
         o.create_queues = true;
         o.visibility_timeout = std::chrono::seconds(2);
         o.dead_letter_queue_url = "http://127.0.0.1:9324/000000000000/dlq";
       })},
      {"sqs://us-east-1?endpoint=http://127.0.0.1:9&request_timeout=2", url_fields([] {
         Options options;
         options.region = "us-east-1";
         options.endpoint = "http://127.0.0.1:9";
         options.request_timeout = std::chrono::seconds(2);
         return options;
       }())},
      // The Python SDK's bare numbers of seconds, at the bounds.
      {local + "&wait_time=20&visibility_timeout=43200&request_timeout=3600", expect([](Options& o) {
         o.max_wait = std::chrono::seconds(20);
         o.visibility_timeout = std::chrono::hours(12);
         o.request_timeout = std::chrono::hours(1);
       })},
      {local + "&wait_time=0&visibility_timeout=0&request_timeout=1", expect([](Options& o) {
         o.max_wait = std::chrono::seconds(0);
         o.visibility_timeout = std::chrono::seconds(0);
         o.request_timeout = std::chrono::seconds(1);
       })},
      {"sqs://?endpoint=http://127.0.0.1:9324", url_fields([] {
         Options options;
         options.endpoint = "http://127.0.0.1:9324";
         return options;
       }())},
      // ca_file works with an http endpoint too (libcurl uses it for https only).
      {local + "&ca_file=/etc/ssl/ca.pem", expect([](Options& o) { o.curl.ca_file = "/etc/ssl/ca.pem"; })},
  };
  for (const auto& [url, fields] : cases) EXPECT_EQ(url_fields_of(url), fields) << url;
}

TEST(SqsUrl, ReadsTheSharedDurationAndTlsSyntax) {
  using Options = bq::sqs::Transport::Options;
  auto expect = [](auto change) {
    Options options;
    options.region = "us-east-1";
    change(options);
    return url_fields(options);
  };
  EXPECT_EQ(url_fields_of("sqs://us-east-1?wait_time=20s&visibility_timeout=2m&request_timeout=90s"),
            expect([](Options& o) {
              o.max_wait = std::chrono::seconds(20);
              o.visibility_timeout = std::chrono::minutes(2);
              o.request_timeout = std::chrono::seconds(90);
            }));
  EXPECT_EQ(url_fields_of("sqs://us-east-1?wait_time=2000ms&visibility_timeout=1h"), expect([](Options& o) {
              o.max_wait = std::chrono::seconds(2);
              o.visibility_timeout = std::chrono::hours(1);
            }));
  EXPECT_EQ(url_fields_of("sqs://us-east-1?endpoint=https://sqs.internal:8443&tls_ca=/ca.pem&tls_cert=/c.pem"
                          "&tls_key=/k.pem&tls_verify=false"),
            expect([](Options& o) {
              o.endpoint = "https://sqs.internal:8443";
              o.curl.ca_file = "/ca.pem";
              o.curl.cert_file = "/c.pem";
              o.curl.key_file = "/k.pem";
              o.curl.verify = false;
            }));
  EXPECT_EQ(url_fields_of("sqs://us-east-1?cert=/c.pem&key=/k.pem&verify=no"), expect([](Options& o) {
              o.curl.cert_file = "/c.pem";
              o.curl.key_file = "/k.pem";
              o.curl.verify = false;
            }));
  // An empty value keeps the default, as Python's parse_qs reads it (the
  // reader before the shared one refused an empty flag).
  EXPECT_EQ(url_fields_of("sqs://us-east-1?wait_time=&fifo=&ca_file="), expect([](Options&) {}));
}

TEST(SqsUrl, ErrorsUseTheSharedTextsWithoutSecrets) {
  const std::string unknown = url_error_of("sqs://AKID:SECRET@us-east-1?bogus=1");
  EXPECT_EQ(unknown,
            "sqs:// URL: unknown parameter 'bogus' (known: endpoint, prefix, fifo, group_id, wait_time, "
            "visibility_timeout, content_dedup, create, dead_letter_queue_url, profile, request_timeout, "
            "max_message_size, tls_ca, tls_cert, tls_key, tls_server_name, tls_verify)");
  EXPECT_EQ(unknown.find("SECRET"), std::string::npos);
  // Credentials do not belong in the URL; the error does not repeat them.
  const std::string with_user = url_error_of("sqs://AKID:SECRET@us-east-1?wait_time=5");
  EXPECT_NE(with_user.find("sqs://[region][?options]"), std::string::npos) << with_user;
  EXPECT_EQ(with_user.find("SECRET"), std::string::npos) << with_user;

  EXPECT_EQ(url_error_of("sqs://us-east-1?wait_time=21"),
            "sqs:// URL: parameter 'wait_time' is '21', expected a duration in whole seconds (5s, 2m, or a number of "
            "seconds) between 0s and 20s");
  EXPECT_EQ(url_error_of("sqs://us-east-1?visibility_timeout=1.5"),
            "sqs:// URL: parameter 'visibility_timeout' is '1.5', expected a duration in whole seconds (5s, 2m, or a "
            "number of seconds) between 0s and 12h");
  EXPECT_EQ(url_error_of("sqs://us-east-1?request_timeout=1500ms"),
            "sqs:// URL: parameter 'request_timeout' is '1500ms', expected a duration in whole seconds (5s, 2m, or a "
            "number of seconds) between 1s and 1h");
  EXPECT_EQ(url_error_of("sqs://us-east-1?request_timeout=0"),
            "sqs:// URL: parameter 'request_timeout' is '0', expected a duration in whole seconds (5s, 2m, or a "
            "number of seconds) between 1s and 1h");
  EXPECT_EQ(url_error_of("sqs://us-east-1?fifo=maybe"),
            "sqs:// URL: parameter 'fifo' is 'maybe', expected true or false (also yes/no, on/off, 1/0)");
  // An unknown parameter is reported before a malformed one.
  EXPECT_NE(url_error_of("sqs://us-east-1?fifo=maybe&wait_tme=3").find("unknown parameter 'wait_tme'"),
            std::string::npos);
  EXPECT_EQ(url_error_of("sqs://us-east-1?ca_file=/a.pem&tls_ca=/b.pem"),
            "sqs:// URL: parameters 'tls_ca' and 'ca_file' are one option; give one of them");
  EXPECT_EQ(url_error_of("sqs://us-east-1?tls_cert=/c.pem"), "tls_cert and tls_key go together: give both or neither");
  EXPECT_NE(url_error_of("sqs://us-east-1?tls_server_name=sqs.internal").find("'tls_server_name' is not available"),
            std::string::npos);
}

}  // namespace
