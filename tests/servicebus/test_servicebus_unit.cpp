// SPDX-License-Identifier: Apache-2.0
// babelqueue::servicebus without a server: SAS signing against worked
// examples computed by Microsoft's own signer, the connection string as
// Microsoft's Python client reads it, URLs, the projection onto an AMQP
// message and back, and lock tokens.
#include "../../src/amqp10/c_message.hpp"
#include "../../src/servicebus/connection_string.hpp"
#include "../../src/servicebus/sas_token.hpp"
#include "../../src/servicebus/servicebus_connection.hpp"
#include "../../src/servicebus/servicebus_projection.hpp"

#include <babelqueue/binding.hpp>
#include <babelqueue/servicebus/transport.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <proton/annotation_key.hpp>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/timestamp.hpp>
#include <proton/types.hpp>
#include <proton/uuid.hpp>
#include <sstream>

namespace bq = babelqueue;
namespace sb = babelqueue::servicebus;
using namespace std::chrono_literals;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(BQ_CONFORMANCE_DIR) + "/fixtures/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- SAS tokens ----

// Computed once with Microsoft's signer, azure-servicebus 7.15.0:
//   from azure.servicebus._pyamqp.utils import generate_sas_token
//   generate_sas_token(audience, key_name, key, expiry)
TEST(ServiceBusSas, MatchesMicrosoftsSignerOnAWorkedExample) {
  EXPECT_EQ(sb::sign_sas_token("sb://contoso.servicebus.windows.net/orders", "RootManageSharedAccessKey",
                               "c2VjcmV0LWtleS1mb3ItdGVzdHM=", 1767225600),
            "SharedAccessSignature sr=sb%3A%2F%2Fcontoso.servicebus.windows.net%2Forders"
            "&sig=JjbnUJ2fK3v7yN7sV3AvQodaj32wKGcri50yWkLGE3g%3D&se=1767225600&skn=RootManageSharedAccessKey");
}

TEST(ServiceBusSas, MatchesMicrosoftsSignerWithAPortSpacesAndADeadLetterQueue) {
  // The key is used as its UTF-8 text (not base64-decoded); '+' and '/' of
  // the signature and the audience's ':', '/', '$' and space are encoded.
  EXPECT_EQ(sb::sign_sas_token("sb://127.0.0.1:5694/Orders Queue/$DeadLetterQueue", "send-only",
                               "key with spaces & symbols?", 2000000000),
            "SharedAccessSignature sr=sb%3A%2F%2F127.0.0.1%3A5694%2FOrders+Queue%2F%24DeadLetterQueue"
            "&sig=VA3ZlnplqWwDLV%2BS1wg7c8siWYnv%2BNi0k27HhBYHQVo%3D&se=2000000000&skn=send-only");
}

TEST(ServiceBusSas, AnotherKeyOrExpiryChangesTheSignature) {
  const std::string a = sb::sign_sas_token("sb://h/q", "k", "key-1", 100);
  EXPECT_NE(a, sb::sign_sas_token("sb://h/q", "k", "key-2", 100));
  EXPECT_NE(a, sb::sign_sas_token("sb://h/q", "k", "key-1", 101));
  EXPECT_NE(a, sb::sign_sas_token("sb://h/r", "k", "key-1", 100));
}

TEST(ServiceBusSas, QuotePlusIsPythons) {
  EXPECT_EQ(sb::quote_plus("azAZ09_.-~"), "azAZ09_.-~");
  EXPECT_EQ(sb::quote_plus("a b+c/d=e&f"), "a+b%2Bc%2Fd%3De%26f");
  EXPECT_EQ(sb::quote_plus("\xc3\xa9"), "%C3%A9");
}

TEST(ServiceBusSas, ReadsTheExpiryOfAToken) {
  EXPECT_EQ(sb::sas_token_expiry("SharedAccessSignature sr=x&sig=y&se=1767225600&skn=k"), 1767225600);
  EXPECT_EQ(sb::sas_token_expiry("SharedAccessSignature se=12&sr=x"), 12);
  EXPECT_FALSE(sb::sas_token_expiry("SharedAccessSignature sr=x&sig=y"));
  EXPECT_FALSE(sb::sas_token_expiry("SharedAccessSignature se=soon"));
}

// ---- connection strings ----

TEST(ServiceBusConnectionString, ReadsEveryFieldWithoutRegardToCase) {
  auto cs = sb::ConnectionString::parse(
      " endpoint=sb://contoso.servicebus.windows.net/;sharedaccesskeyname=Root;SHAREDACCESSKEY=abc=def=;"
      "EntityPath=orders;TransportType=Amqp; ");
  ASSERT_TRUE(cs) << cs.error().message();
  EXPECT_EQ(cs->host, "contoso.servicebus.windows.net");
  EXPECT_EQ(cs->authority, "contoso.servicebus.windows.net");
  EXPECT_FALSE(cs->port);
  EXPECT_EQ(cs->key_name, "Root");
  EXPECT_EQ(cs->key, "abc=def=");  // everything after the first '='
  EXPECT_EQ(cs->entity_path, "orders");
  EXPECT_FALSE(cs->use_development_emulator);
}

TEST(ServiceBusConnectionString, ReadsTheEmulatorFormWithAPort) {
  auto cs = sb::ConnectionString::parse(
      "Endpoint=sb://127.0.0.1:5694;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=k;"
      "UseDevelopmentEmulator=true;");
  ASSERT_TRUE(cs) << cs.error().message();
  EXPECT_EQ(cs->host, "127.0.0.1");
  EXPECT_EQ(cs->port, 5694);
  EXPECT_EQ(cs->authority, "127.0.0.1:5694");
  EXPECT_TRUE(cs->use_development_emulator);
}

TEST(ServiceBusConnectionString, ReadsASharedAccessSignature) {
  auto cs = sb::ConnectionString::parse(
      "Endpoint=sb://h/;SharedAccessSignature=SharedAccessSignature sr=sb%3A%2F%2Fh%2F&sig=x%3D&se=9&skn=k");
  ASSERT_TRUE(cs) << cs.error().message();
  EXPECT_EQ(cs->shared_access_signature, "SharedAccessSignature sr=sb%3A%2F%2Fh%2F&sig=x%3D&se=9&skn=k");
}

TEST(ServiceBusConnectionString, ABadOneSaysWhatIsWrongWithoutTheSecret) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "is empty"},
      {"Endpoint=sb://h/;SharedAccessKeyName=n;s3cr3t", "part 3 has no '='"},
      {"SharedAccessKeyName=n;SharedAccessKey=s3cr3t", "has no Endpoint"},
      {"Endpoint=h;SharedAccessKeyName=n;SharedAccessKey=s3cr3t", "without a scheme"},
      {"Endpoint=sb:///;SharedAccessKeyName=n;SharedAccessKey=s3cr3t", "without a host"},
      {"Endpoint=sb://h:99999/;SharedAccessKeyName=n;SharedAccessKey=s3cr3t", "port"},
      {"Endpoint=sb://h/;SharedAccessKey=s3cr3t", "both SharedAccessKeyName and SharedAccessKey"},
      {"Endpoint=sb://h/;SharedAccessKeyName=n", "both SharedAccessKeyName and SharedAccessKey"},
      {"Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=s3cr3t;SharedAccessSignature=s3cr3t", "only one"},
      {"Endpoint=sb://h/", "must have SharedAccessKeyName and SharedAccessKey, or SharedAccessSignature"},
      {"Endpoint=sb://h/;SharedAccessKeyName=n;SharedAccessKey=s3cr3t;UseDevelopmentEmulator=yes", "true or false"},
  };
  for (const auto& [text, why] : cases) {
    auto cs = sb::ConnectionString::parse(text);
    ASSERT_FALSE(cs) << text;
    EXPECT_EQ(cs.error().code(), bq::Errc::invalid_argument) << text;
    EXPECT_NE(cs.error().message().find(why), std::string::npos) << cs.error().message();
    EXPECT_EQ(cs.error().message().find("s3cr3t"), std::string::npos) << cs.error().message();
  }
}

// ---- URLs and the connection ----

sb::Options options_of(const std::string& text) {
  auto url = bq::Url::parse(text);
  EXPECT_TRUE(url) << text;
  auto options = sb::Transport::options_from_url(*url);
  EXPECT_TRUE(options) << (options ? "" : options.error().message());
  return options ? *options : sb::Options{};
}

TEST(ServiceBusUrl, ThePythonSdksSchemesAndTheOptions) {
  for (const char* scheme : {"sb", "servicebus", "azureservicebus"}) {
    const auto o = options_of(std::string(scheme) + "://contoso.servicebus.windows.net");
    EXPECT_EQ(o.namespace_host, "contoso.servicebus.windows.net");
    EXPECT_FALSE(o.port);
  }
  const auto o = options_of(
      "sb://127.0.0.1:5694?lock_duration=5s&prefetch=7&token_lifetime=10m&operation_timeout=3s&connect_timeout=2s"
      "&container_id=me");
  EXPECT_EQ(o.namespace_host, "127.0.0.1");
  EXPECT_EQ(o.port, 5694);
  EXPECT_EQ(o.lock_duration, 5s);
  EXPECT_EQ(o.prefetch, 7U);
  EXPECT_EQ(o.token_lifetime, 600s);
  EXPECT_EQ(o.operation_timeout, 3s);
  EXPECT_EQ(o.connect_timeout, 2s);
  EXPECT_EQ(o.container_id, "me");
  EXPECT_TRUE(options_of("sb://").namespace_host.empty());
}

TEST(ServiceBusUrl, RefusesCredentialsAPathAndUnknownOptions) {
  for (const char* text :
       {"sb://user:pass@h", "sb://h/orders", "sb://h?lock_duraton=5s", "sb://h?prefetch=0", "amqp://h"}) {
    auto url = bq::Url::parse(text);
    ASSERT_TRUE(url) << text;
    auto options = sb::Transport::options_from_url(*url);
    ASSERT_FALSE(options) << text;
    EXPECT_EQ(options.error().code(), bq::Errc::invalid_argument);
    EXPECT_EQ(options.error().message().find("pass"), std::string::npos) << options.error().message();
  }
}

TEST(ServiceBusConnection, TheEmulatorIsPlainAmqpOnItsPortAndAzureIsTlsOn5671) {
  sb::Options o;
  o.connection_string =
      "Endpoint=sb://127.0.0.1:5694;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true";
  auto plain = sb::connection_options(o);
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->host, "127.0.0.1");
  EXPECT_EQ(plain->port, 5694);
  EXPECT_FALSE(plain->tls.enabled);
  EXPECT_TRUE(plain->receiver_settles_second);
  ASSERT_TRUE(plain->claims.token);
  EXPECT_EQ(plain->claims.audience_of("orders/$management"), "sb://127.0.0.1:5694/orders");

  o.connection_string = "Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=k";
  o.namespace_host = "CONTOSO.servicebus.windows.net";
  auto tls = sb::connection_options(o);
  ASSERT_TRUE(tls) << tls.error().message();
  EXPECT_EQ(tls->port, 5671);
  EXPECT_TRUE(tls->tls.enabled);
  EXPECT_TRUE(tls->tls.verify);
  EXPECT_EQ(tls->virtual_host, "contoso.servicebus.windows.net");
  auto token = tls->claims.token("sb://contoso.servicebus.windows.net/orders");
  ASSERT_TRUE(token);
  EXPECT_EQ(token->type, "servicebus.windows.net:sastoken");
  EXPECT_TRUE(
      token->token.starts_with("SharedAccessSignature sr=sb%3A%2F%2Fcontoso.servicebus.windows.net%2Forders&sig="));
}

TEST(ServiceBusConnection, AUrlPortWinsForTheConnectionAndTheEndpointStaysTheNamespace) {
  // A local proxy or port forward on 15694 in front of the endpoint 5694:
  // the TCP connection goes to the URL's port; the AMQP hostname and the
  // tokens' audience are still the connection string's endpoint.
  sb::Options o = options_of("sb://127.0.0.1:15694");
  o.connection_string =
      "Endpoint=sb://127.0.0.1:5694;SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true";
  auto plain = sb::connection_options(o);
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->host, "127.0.0.1");
  EXPECT_EQ(plain->port, 15694);
  EXPECT_EQ(plain->virtual_host, "127.0.0.1");
  EXPECT_EQ(plain->claims.audience_of("orders"), "sb://127.0.0.1:5694/orders");

  // On Azure: TLS to the URL's port, the certificate still checked against the namespace.
  o = options_of("sb://contoso.servicebus.windows.net:15671");
  o.connection_string = "Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=k";
  auto tls = sb::connection_options(o);
  ASSERT_TRUE(tls) << tls.error().message();
  EXPECT_EQ(tls->port, 15671);
  EXPECT_TRUE(tls->tls.enabled);
  EXPECT_EQ(tls->virtual_host, "contoso.servicebus.windows.net");
  EXPECT_EQ(tls->claims.audience_of("orders"), "sb://contoso.servicebus.windows.net/orders");

  // The namespace itself must still agree.
  o = options_of("sb://other.servicebus.windows.net:15671");
  o.connection_string = "Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=k";
  auto other = sb::connection_options(o);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code(), bq::Errc::invalid_argument);
}

TEST(ServiceBusConnection, AudiencesNameTheEntity) {
  EXPECT_EQ(sb::audience_of("h:1", "orders"), "sb://h:1/orders");
  EXPECT_EQ(sb::audience_of("h", "orders/$DeadLetterQueue"), "sb://h/orders");
  EXPECT_EQ(sb::audience_of("h", "orders/$deadletterqueue/$management"), "sb://h/orders");
}

TEST(ServiceBusConnection, MissingOrMismatchedCredentialsAreClearErrors) {
  ::unsetenv(sb::kConnectionStringVariable);
  sb::Options none;
  none.namespace_host = "contoso.servicebus.windows.net";
  auto missing = sb::connection_options(none);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(missing.error().message().find("AZURE_SERVICEBUS_CONNECTION_STRING"), std::string::npos);

  ::setenv(sb::kConnectionStringVariable,
           "Endpoint=sb://other.servicebus.windows.net/;SharedAccessKeyName=n;SharedAccessKey=s3cr3t", 1);
  auto other = sb::connection_options(none);
  ::unsetenv(sb::kConnectionStringVariable);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(other.error().message().find("other.servicebus.windows.net"), std::string::npos);
  EXPECT_EQ(other.error().message().find("s3cr3t"), std::string::npos);
}

TEST(ServiceBusConnection, AnExpiredSharedAccessSignatureIsAnAuthErrorAtOnce) {
  sb::Options o;
  const std::string token = sb::sign_sas_token("sb://h/", "n", "s3cr3t", 1000000000);  // 2001
  o.connection_string = "Endpoint=sb://h/;SharedAccessSignature=" + token;
  auto expired = sb::connection_options(o);
  ASSERT_FALSE(expired);
  EXPECT_EQ(expired.error().code(), bq::Errc::auth);
  EXPECT_NE(expired.error().message().find("expired at 2001-09-09T01:46:40Z"), std::string::npos)
      << expired.error().message();
  EXPECT_EQ(expired.error().message().find("sig="), std::string::npos);
}

TEST(ServiceBusConnection, ABearerTokenProviderStandsInForAKey) {
  sb::Options o;
  o.namespace_host = "contoso.servicebus.windows.net";
  std::string asked;
  o.token_provider = [&](const std::string& audience) -> bq::Result<sb::AccessToken> {
    asked = audience;
    return sb::AccessToken{"eyJ-a-jwt", std::chrono::system_clock::now() + 1h};
  };
  auto c = sb::connection_options(o);
  ASSERT_TRUE(c) << c.error().message();
  auto token = c->claims.token(c->claims.audience_of("orders"));
  ASSERT_TRUE(token);
  EXPECT_EQ(asked, "sb://contoso.servicebus.windows.net/orders");
  EXPECT_EQ(token->token, "eyJ-a-jwt");
  EXPECT_EQ(token->type, "jwt");
}

// ---- the projection ----

TEST(ServiceBusProjection, TheBindingsFieldsWithNativeTypesAndADataBody) {
  const std::string body = fixture("order-created.json");
  bq::PublishOptions options;
  options.headers = {{"traceparent", "00-abc-def-01"}, {"bq-schema-version", "9"}};
  proton::message m = sb::make_message(body, options);
  std::vector<char> bytes;
  m.encode(bytes);
  proton::message wire;
  wire.decode(bytes);
  ASSERT_EQ(wire.body().type(), proton::BINARY);
  EXPECT_TRUE(wire.inferred());
  const auto data = proton::get<proton::binary>(wire.body());
  EXPECT_EQ(std::string(data.begin(), data.end()), body);
  EXPECT_EQ(wire.subject(), "urn:babel:orders:created");
  EXPECT_EQ(proton::to_string(wire.correlation_id()), "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b");
  EXPECT_EQ(proton::to_string(wire.id()), "f1e2d3c4-b5a6-4789-90ab-cdef01234567");
  EXPECT_EQ(wire.content_type(), "application/json");
  std::map<std::string, proton::scalar> props;
  proton::get(wire.properties().value(), props);
  EXPECT_EQ(props.at("bq-schema-version").type(), proton::INT);
  EXPECT_EQ(proton::get<std::int32_t>(props.at("bq-schema-version")), 1);
  EXPECT_EQ(props.at("bq-created-at").type(), proton::LONG);
  EXPECT_EQ(proton::get<std::int64_t>(props.at("bq-created-at")), 1749132727000);
  EXPECT_EQ(proton::get<std::string>(props.at("bq-source-lang")), "php");
  EXPECT_EQ(proton::get<std::string>(props.at("traceparent")), "00-abc-def-01");
  EXPECT_TRUE(wire.message_annotations().empty());
}

TEST(ServiceBusProjection, TheEncodersBytesAreThoseOfTheSameProtonMessage) {
  // The encoder writes straight into C data; a proton::message with the
  // same fields, built through its C++ interface, encodes to the same bytes.
  const std::string body = fixture("order-created.json");
  bq::PublishOptions options;
  options.headers = {{"traceparent", "00-abc-def-01"}, {"a-first", "1"}, {"bq-source-lang", "overridden"}};
  proton::message expected;
  expected.inferred(true);
  expected.body(proton::binary(body));
  expected.content_type("application/json");
  expected.subject("urn:babel:orders:created");
  expected.correlation_id(std::string("7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b"));
  expected.id(std::string("f1e2d3c4-b5a6-4789-90ab-cdef01234567"));
  std::map<std::string, proton::scalar> props{{"a-first", std::string("1")},
                                              {"traceparent", std::string("00-abc-def-01")},
                                              {"bq-schema-version", std::int32_t{1}},
                                              {"bq-source-lang", std::string("php")},
                                              {"bq-created-at", std::int64_t{1749132727000}}};
  expected.properties() = props;
  EXPECT_EQ(sb::make_message(body, options).encode(), expected.encode());
  // Several messages back to back, each whole.
  sb::MessageEncoder encoder;
  babelqueue::amqp10::EncodedMessages out;
  ASSERT_TRUE(encoder.append(body, options, out));
  ASSERT_TRUE(encoder.append("not json", {}, out));
  ASSERT_EQ(out.size(), 2U);
  const auto first = expected.encode();
  EXPECT_EQ(std::string(out[0]), std::string(first.begin(), first.end()));
  proton::message second;
  second.decode(std::vector<char>(out[1].begin(), out[1].end()));
  const auto data = proton::get<proton::binary>(second.body());
  EXPECT_EQ(std::string(data.begin(), data.end()), "not json");
  EXPECT_TRUE(second.properties().empty());
}

TEST(ServiceBusProjection, ADelayIsTheScheduledEnqueueTime) {
  bq::PublishOptions options;
  options.delay = 90s;
  const auto before = std::chrono::system_clock::now();
  proton::message m = sb::make_message(fixture("order-created.json"), options);
  const proton::value at = m.message_annotations().get(proton::symbol("x-opt-scheduled-enqueue-time"));
  ASSERT_EQ(at.type(), proton::TIMESTAMP);
  const auto ms = proton::get<proton::timestamp>(at).milliseconds();
  const auto expected =
      std::chrono::duration_cast<std::chrono::milliseconds>((before + 90s).time_since_epoch()).count();
  EXPECT_GE(ms, expected);
  EXPECT_LT(ms, expected + 2000);
}

proton::message received_with(const proton::scalar& schema_version) {
  proton::message m;
  m.inferred(true);
  m.body(proton::binary(std::string("{}")));
  m.properties().put("bq-schema-version", schema_version);
  return m;
}

TEST(ServiceBusProjection, TheGateReadsIntLongAndString) {
  const std::pair<proton::scalar, bool> cases[] = {
      {proton::scalar(std::int32_t{1}), true},   {proton::scalar(std::int64_t{1}), true},
      {proton::scalar(std::string("1")), true},  {proton::scalar(std::string(" ")), true},
      {proton::scalar(std::int32_t{2}), false},  {proton::scalar(std::int64_t{2}), false},
      {proton::scalar(std::string("2")), false}, {proton::scalar(1.0), false},
      {proton::scalar(std::int32_t{0}), false},
  };
  for (const auto& [value, accepted] : cases) {
    const bq::Delivery d = sb::to_delivery("q", 1, received_with(value), proton::binary());
    EXPECT_EQ(!d.gate_rejection, accepted) << proton::to_string(value);
    if (d.gate_rejection) {
      EXPECT_EQ(*d.gate_rejection, bq::Rejection::schema_version_gate);
    }
  }
}

TEST(ServiceBusProjection, AttemptsAreDeliveryCountMinusOneAndTheLockTokenIsRead) {
  proton::message m = received_with(proton::scalar(std::int32_t{1}));
  m.properties().put("traceparent", std::string("00-x"));
  m.properties().put("bq-created-at", std::int64_t{5});
  m.delivery_count(2);  // the service's header: DeliveryCount - 1
  const proton::uuid lock = proton::uuid::copy("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10");
  std::map<proton::annotation_key, proton::value> annotations;
  annotations[proton::symbol("x-opt-lock-token")] = lock;
  annotations[proton::symbol("x-opt-locked-until")] = proton::timestamp(1767225600000);
  m.message_annotations() = annotations;
  const bq::Delivery d = sb::to_delivery("q", 7, m, proton::binary());
  EXPECT_EQ(d.native_attempts, 2);  // DeliveryCount 3
  EXPECT_EQ(bq::AttemptsRule{d.attempts_merge}.reconcile(0, d.native_attempts), 2);
  EXPECT_EQ(bq::AttemptsRule{d.attempts_merge}.reconcile(5, d.native_attempts), 5);
  EXPECT_EQ(d.token.id, 7U);
  EXPECT_EQ(d.token.text, "01020304-0506-0708-090a-0b0c0d0e0f10");
  EXPECT_EQ(d.headers, (bq::Headers{{"traceparent", "00-x"}}));
  EXPECT_EQ(d.body, "{}");
  const sb::Lock l = sb::lock_of(m, proton::binary());
  ASSERT_TRUE(l.locked_until);
  EXPECT_EQ(l.locked_until->time_since_epoch(), std::chrono::milliseconds(1767225600000));
  EXPECT_EQ(sb::native_attempts_of_delivery_count(1), 0);
  EXPECT_EQ(sb::native_attempts_of_delivery_count(0), 0);
}

TEST(ServiceBusProjection, AReusedReadIsFilledAnewWithNothingLeftOfTheLastMessage) {
  proton::message first = received_with(proton::scalar(std::int32_t{2}));  // rejected by the gate
  first.properties().put("tenant", std::string("acme"));
  first.body(std::string(100000, 'a'));
  std::map<proton::annotation_key, proton::value> annotations;
  annotations[proton::symbol("x-opt-lock-token")] =
      proton::uuid::copy("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10");
  first.message_annotations() = annotations;
  auto read = sb::read_delivery("orders", bq::amqp10::c_message_of(first).get(), nullptr, 5s);
  ASSERT_NE(read, nullptr);
  const bq::Delivery& was = static_cast<const sb::DeliveryRead&>(*read).delivery;
  ASSERT_TRUE(was.gate_rejection);
  ASSERT_TRUE(was.lease_deadline);
  EXPECT_EQ(was.headers.size(), 1U);

  proton::message second = received_with(proton::scalar(std::int32_t{1}));
  second.message_annotations() = annotations;
  const bq::amqp10::Read* const object = read.get();
  read = sb::read_delivery("invoices", bq::amqp10::c_message_of(second).get(), std::move(read),
                           std::chrono::milliseconds(0));
  ASSERT_EQ(read.get(), object);  // the same object, filled again
  const bq::Delivery& d = static_cast<const sb::DeliveryRead&>(*read).delivery;
  EXPECT_EQ(d.queue, "invoices");
  EXPECT_EQ(d.body, "{}");
  EXPECT_LT(d.body.capacity(), std::size_t{64} * 1024);  // the large body's storage was given up
  EXPECT_TRUE(d.headers.empty());
  EXPECT_FALSE(d.gate_rejection);
  EXPECT_FALSE(d.lease_deadline);
  EXPECT_EQ(d.token.id, 0U);
  EXPECT_EQ(d.token.text, "01020304-0506-0708-090a-0b0c0d0e0f10");
}

TEST(ServiceBusProjection, TheDeliveryTagIsTheLockTokenInDotNetByteOrder) {
  // Guid 01020304-0506-0708-090a-0b0c0d0e0f10 as .NET's ToByteArray() writes it.
  const std::string le = "\x04\x03\x02\x01\x06\x05\x08\x07\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10";
  EXPECT_EQ(sb::lock_token_from_tag(proton::binary(le)), "01020304-0506-0708-090a-0b0c0d0e0f10");
  EXPECT_EQ(sb::lock_token_from_tag(proton::binary(std::string("short"))), "");
  // Without the annotation the tag is the token.
  const bq::Delivery d = sb::to_delivery("q", 1, received_with(proton::scalar(std::int32_t{1})), proton::binary(le));
  EXPECT_EQ(d.token.text, "01020304-0506-0708-090a-0b0c0d0e0f10");
}

TEST(ServiceBusProjection, TheLeaseIsTheLockDurationUnlessTheServiceSaysItIsShorter) {
  const auto steady = std::chrono::steady_clock::now();
  const auto system = std::chrono::system_clock::now();
  sb::Lock lock;
  EXPECT_EQ(sb::lease_deadline_of(lock, 5s, steady, system), steady + 5s);
  lock.locked_until = system + 3s;  // the queue's lock is shorter than the option says
  EXPECT_EQ(sb::lease_deadline_of(lock, 5s, steady, system), steady + 3s);
  lock.locked_until = system + 10s;  // a service clock ahead of ours
  EXPECT_EQ(sb::lease_deadline_of(lock, 5s, steady, system), steady + 5s);
  lock.locked_until = system + 4500ms;  // whole milliseconds, clocks a little apart: they agree
  EXPECT_EQ(sb::lease_deadline_of(lock, 5s, steady, system), steady + 5s);
}

}  // namespace
