// SPDX-License-Identifier: Apache-2.0
// Field encryption (docs/gdpr.md): the AES-GCM cipher in the family's
// format and its key ring, protect/unprotect over nested, array and
// container marks with every unmarked byte kept, and the middleware on a
// real Worker: a wrong key and a changed byte end in the retry/dead-letter
// path with the bytes as they arrived.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/gdpr/aes_gcm_cipher.hpp>
#include <babelqueue/gdpr/middleware.hpp>
#include <babelqueue/gdpr/protect.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/schema/middleware.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace bq = babelqueue;
namespace gdpr = babelqueue::gdpr;
namespace schema = babelqueue::schema;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kUrn = "urn:shop:customers:registered";

// Marks of every kind: a leaf, a nested leaf, an array fan-out, a marked
// container, a category name, and a mark on a field that is often absent.
constexpr std::string_view kSchema = R"({"type":"object","required":["customer_id"],"properties":{
  "customer_id":{"type":"integer","minimum":1},
  "email":{"type":"string","minLength":3,"x-gdpr-sensitive":"contact"},
  "profile":{"type":"object","properties":{"full_name":{"type":"string","x-gdpr-sensitive":true},
                                           "tier":{"type":"string"}}},
  "addresses":{"type":"array","items":{"type":"object","properties":{"line":{"type":"string","x-gdpr-sensitive":true},
                                                                     "country":{"type":"string"}}}},
  "card":{"type":"object","x-gdpr-sensitive":"payment"},
  "phone":{"type":"string","x-gdpr-sensitive":true},
  "note":{"type":"string","x-gdpr-sensitive":false}}})";

std::string key_of(char c) { return std::string(32, c); }

std::shared_ptr<gdpr::AesGcmCipher> cipher_with(std::vector<std::string> keys) {
  return gdpr::AesGcmCipher::create(std::move(keys)).value();
}

bq::Value customer() {
  return bq::Value::object(
      {{"customer_id", 7},
       {"email", "alice@example.com"},
       {"profile", bq::Value::object({{"full_name", "Alice Ünal ☕"}, {"tier", "gold"}})},
       {"addresses", bq::Value::array({bq::Value::object({{"line", "Main St 1"}, {"country", "DE"}}),
                                       bq::Value::object({{"line", "Side Rd 2"}, {"country", "TR"}})})},
       {"card", bq::Value::object({{"pan", "4111111111111111"}, {"exp", bq::Value::array({12, 2030})}})},
       {"amount", 1234.5},
       {"note", "not personal"}});
}

schema::Schema the_schema() { return schema::Schema::parse(kSchema).value(); }

}  // namespace

TEST(Base64, IsStandardPaddedBothWays) {
  EXPECT_EQ(gdpr::base64_encode(""), "");
  EXPECT_EQ(gdpr::base64_encode("f"), "Zg==");
  EXPECT_EQ(gdpr::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(gdpr::base64_encode("foo"), "Zm9v");
  EXPECT_EQ(gdpr::base64_encode("\xfb\xff"), "+/8=");
  EXPECT_EQ(gdpr::base64_decode("Zm8=").value(), "fo");
  EXPECT_EQ(gdpr::base64_decode("+/8=").value(), "\xfb\xff");
  for (std::string_view bad : {"Zm8", "Zm8=\n", "Z=8=", "Zm==Zm8=", "-_8=", "Zm 8"}) {
    EXPECT_FALSE(gdpr::base64_decode(bad)) << bad;
  }
}

TEST(AesGcmCipher, WritesNonceCiphertextTagAsBase64AndOpensIt) {
  auto cipher = cipher_with({key_of('k')});
  const std::string plaintext = R"("alice@example.com")";
  auto a = cipher->encrypt(plaintext).value();
  auto b = cipher->encrypt(plaintext).value();
  EXPECT_NE(a, b);  // a fresh nonce each time
  EXPECT_EQ(gdpr::base64_decode(a).value().size(), 12 + plaintext.size() + 16);
  EXPECT_EQ(cipher->decrypt(a).value(), plaintext);
  EXPECT_EQ(cipher->decrypt(b).value(), plaintext);
  EXPECT_EQ(cipher->decrypt(cipher->encrypt("").value()).value(), "");
}

TEST(AesGcmCipher, AcceptsOnlyAesKeySizes) {
  for (std::size_t size : {16U, 24U, 32U}) EXPECT_TRUE(gdpr::AesGcmCipher::create({std::string(size, 'x')}));
  for (std::size_t size : {0U, 15U, 31U, 33U, 64U}) {
    auto refused = gdpr::AesGcmCipher::create({std::string(size, 'x')});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  }
  EXPECT_FALSE(gdpr::AesGcmCipher::create({}));
}

TEST(AesGcmCipher, AWrongKeyOrAChangedByteIsAnErrorNeverOtherBytes) {
  auto cipher = cipher_with({key_of('k')});
  auto other = cipher_with({key_of('o')});
  const auto sealed = cipher->encrypt("42").value();
  auto wrong = other->decrypt(sealed);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), bq::Errc::auth);
  auto raw = gdpr::base64_decode(sealed).value();
  for (std::size_t at : {std::size_t{0}, std::size_t{12}, raw.size() - 1}) {  // nonce, ciphertext, tag
    auto flipped = raw;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x01);
    auto refused = cipher->decrypt(gdpr::base64_encode(flipped));
    ASSERT_FALSE(refused) << at;
    EXPECT_EQ(refused.error().code(), bq::Errc::auth);
  }
  EXPECT_EQ(cipher->decrypt("not base64!").error().code(), bq::Errc::invalid_argument);
  EXPECT_EQ(cipher->decrypt(gdpr::base64_encode(std::string(27, 'x'))).error().code(), bq::Errc::invalid_argument);
}

TEST(AesGcmCipher, AKeyRingEncryptsWithTheFirstAndOpensWithAny) {
  auto old_key = cipher_with({key_of('a')});
  auto rotated = cipher_with({key_of('b'), key_of('a')});
  const auto before = old_key->encrypt("\"old\"").value();
  const auto after = rotated->encrypt("\"new\"").value();
  EXPECT_EQ(rotated->decrypt(before).value(), "\"old\"");
  EXPECT_EQ(rotated->decrypt(after).value(), "\"new\"");
  EXPECT_FALSE(old_key->decrypt(after));  // the new key encrypts
  EXPECT_EQ(cipher_with({key_of('b')})->decrypt(after).value(), "\"new\"");
}

TEST(AesGcmCipher, ReadsOneBase64KeyALineAndNeverQuotesOne) {
  const std::string first = gdpr::base64_encode(key_of('b'));
  const std::string second = gdpr::base64_encode(std::string(16, 'a'));
  auto ring = gdpr::AesGcmCipher::from_key_lines("# rotated on Monday\n" + first + "\r\n\n  " + second + "\n").value();
  EXPECT_EQ(ring->key_count(), 2U);
  EXPECT_EQ(cipher_with({key_of('b')})->decrypt(ring->encrypt("1").value()).value(), "1");

  const std::string short_key = gdpr::base64_encode(std::string(20, 's'));
  auto refused = gdpr::AesGcmCipher::from_key_lines(first + "\n" + short_key + "\n");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("key line 2"), std::string::npos);
  EXPECT_EQ(refused.error().message().find(short_key), std::string::npos);
  EXPECT_FALSE(gdpr::AesGcmCipher::from_key_lines("\n# nothing\n"));

  const auto file = std::filesystem::temp_directory_path() / ("bq-gdpr-keys-" + bq::uuid_v4());
  std::ofstream(file) << first << "\n";
  EXPECT_EQ(gdpr::AesGcmCipher::from_key_file(file).value()->key_count(), 1U);
  std::filesystem::remove(file);
  EXPECT_EQ(gdpr::AesGcmCipher::from_key_file(file).error().code(), bq::Errc::not_found);
}

TEST(Protect, SensitivePathsAreListedTheFamilysWay) {
  std::vector<std::string> paths;
  std::vector<std::string> categories;
  for (const auto& p : the_schema().sensitive_paths()) {
    paths.push_back(p.path);
    categories.push_back(p.category);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"addresses[].line", "card", "email", "phone", "profile.full_name"}));
  EXPECT_EQ(categories, (std::vector<std::string>{"", "payment", "contact", "", ""}));
}

TEST(Protect, OnlyMarkedValuesChangeAndEveryOtherByteIsKept) {
  auto cipher = cipher_with({key_of('k')});
  const auto schema = the_schema();
  // A body another SDK wrote: spaces, escapes, a number no double holds.
  const std::string body =
      R"({"job":"urn:shop:customers:registered","trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b",)"
      R"("data":{"customer_id":7, "email":"alice@example.com","amount":1.10,"big":123456789012345678901234567890,)"
      R"("profile":{"tier":"gold","full_name":"Alice \u00dcnal"},)"
      R"("addresses":[{"line":"Main St 1","country":"DE"},{"country":"TR"},{"line":"Side Rd 2"}],)"
      R"("card":{"pan":"4111","exp":[12,2030]},"note":"kept"},)"
      R"("meta":{"id":"m-1","queue":"customers","lang":"python","schema_version":1,"created_at":1749132727000},)"
      R"("attempts":0,"x-extra":{"kept":true}})";
  const auto env = bq::Envelope::decode(body).value();
  auto sealed = gdpr::protect(env, schema, *cipher).value();
  const auto data = sealed.data().as_object();
  for (std::string_view key : {"email", "card"}) EXPECT_TRUE(data.find(key)->is_string()) << key;
  EXPECT_TRUE(data.find("profile")->find("full_name")->is_string());
  EXPECT_EQ(data.find("profile")->find("tier")->as_string(), "gold");
  EXPECT_TRUE(data.find("addresses")->as_array()[0].find("line")->is_string());
  EXPECT_FALSE(data.find("addresses")->as_array()[1].find("line"));  // absent: skipped
  EXPECT_NE(sealed.data_json().find(R"("amount":1.10,"big":123456789012345678901234567890)"), std::string::npos);
  EXPECT_EQ(sealed.data_json().find("alice@example.com"), std::string::npos);
  EXPECT_EQ(sealed.data_json().find("Main St"), std::string::npos);
  EXPECT_EQ(sealed.data_json().find("4111"), std::string::npos);
  // The frame: everything before and after data, byte for byte.
  const auto head = body.substr(0, body.find(R"("data":)"));
  const auto tail = body.substr(body.find(R"(,"meta":)"));
  EXPECT_EQ(sealed.body().substr(0, head.size()), head);
  EXPECT_EQ(sealed.body().substr(sealed.body().size() - tail.size()), tail);
  EXPECT_EQ(sealed.trace_id(), env.trace_id());
  EXPECT_EQ(sealed.schema_version(), 1);

  // The plaintexts: a scalar's bytes as written, a container's compact JSON with sorted keys.
  EXPECT_EQ(cipher->decrypt(data.find("email")->as_string()).value(), R"("alice@example.com")");
  EXPECT_EQ(cipher->decrypt(data.find("profile")->find("full_name")->as_string()).value(), R"("Alice \u00dcnal")");
  EXPECT_EQ(cipher->decrypt(data.find("card")->as_string()).value(), R"({"exp":[12,2030],"pan":"4111"})");

  auto clear = gdpr::unprotect(sealed, schema, *cipher).value();
  EXPECT_EQ(clear.data(), env.data());
  EXPECT_NE(clear.data_json().find(R"("amount":1.10,"big":123456789012345678901234567890)"), std::string::npos);
  EXPECT_EQ(clear.body().substr(0, head.size()), head);
  EXPECT_EQ(clear.body().substr(clear.body().size() - tail.size()), tail);
}

TEST(Protect, ValuesInPlaceAndNothingChangedOnError) {
  auto cipher = cipher_with({key_of('k')});
  const auto schema = the_schema();
  bq::Value data = customer();
  ASSERT_TRUE(gdpr::protect(data, schema, *cipher));
  EXPECT_TRUE(data.find("email")->is_string());
  EXPECT_NE(data.find("email")->as_string(), "alice@example.com");
  const bq::Value sealed = data;
  bq::Value copy = sealed;
  auto refused = gdpr::unprotect(copy, schema, *cipher_with({key_of('o')}));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::auth);
  EXPECT_NE(refused.error().message().find("data.addresses[].line"), std::string::npos);
  EXPECT_EQ(copy, sealed);
  ASSERT_TRUE(gdpr::unprotect(data, schema, *cipher));
  EXPECT_EQ(data, customer());
  // Cleartext that is not a string is left alone; a cleartext string is not
  // a ciphertext and is refused (as the siblings do).
  bq::Value clear = bq::Value::object({{"customer_id", 7}, {"card", bq::Value::object({{"pan", "1"}})}});
  EXPECT_TRUE(gdpr::unprotect(clear, schema, *cipher));
  bq::Value plain = bq::Value::object({{"email", "bob@example.com"}});
  EXPECT_FALSE(gdpr::unprotect(plain, schema, *cipher));
}

TEST(Protect, ASchemaWithoutMarksChangesNothing) {
  auto cipher = cipher_with({key_of('k')});
  const auto plain = schema::Schema::parse(R"({"type":"object","x-gdpr-sensitive":true})").value();
  const auto env = bq::Envelope::make(kUrn, customer()).value();
  EXPECT_EQ(gdpr::protect(env, plain, *cipher).value().body(), env.body());
}

namespace {

std::shared_ptr<schema::MapProvider> customers() {
  auto provider = std::make_shared<schema::MapProvider>();
  EXPECT_TRUE(provider->add(std::string(kUrn), kSchema));
  return provider;
}

bq::WorkerOptions quiet() {
  bq::WorkerOptions o;
  o.default_queue = "customers";
  o.poll_timeout = 20ms;
  o.dead_letter = true;
  o.max_attempts = 2;
  o.log = {};
  return o;
}

}  // namespace

TEST(GdprMiddleware, PublishesCiphertextAndTheHandlerSeesCleartextThatTheSchemaChecks) {
  bq::memory::Transport transport;
  bq::Worker worker(transport, quiet());
  auto provider = customers();
  auto cipher = cipher_with({key_of('k')});
  worker.use(std::make_shared<gdpr::Middleware>(provider, cipher));
  worker.use(std::make_shared<schema::Middleware>(provider));  // minLength of email: checked on cleartext
  ASSERT_TRUE(worker.publish(kUrn, customer()));
  auto sent = transport.receive("customers", 1, 100ms).value();
  ASSERT_EQ(sent.size(), 1U);
  EXPECT_EQ(sent[0].body.find("alice@example.com"), std::string::npos);
  ASSERT_TRUE(transport.release(sent[0]));

  bq::Value seen;
  worker.handle(std::string(kUrn), [&](const bq::Message& m) { seen = m.envelope().data(); });
  ASSERT_EQ(worker.drain().value(), 1U);
  EXPECT_EQ(seen, customer());
  // Cleartext that breaks the schema is refused before it is encrypted.
  auto refused = worker.publish(kUrn, bq::Value::object({{"customer_id", 0}}));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
}

TEST(GdprMiddleware, AWrongKeyAndAChangedByteAreRetriedThenDeadLetteredWithTheirBytes) {
  auto writer = cipher_with({key_of('k')});
  const auto schema = the_schema();
  const auto sealed =
      gdpr::protect(bq::Envelope::make(kUrn, customer(), {.queue = "customers"}).value(), schema, *writer).value();
  // The same message with one byte of the email's ciphertext changed.
  std::string tampered(sealed.body());
  const auto email = sealed.data().find("email")->as_string();
  auto raw = gdpr::base64_decode(email).value();
  raw[20] = static_cast<char>(raw[20] ^ 0x01);
  tampered.replace(tampered.find(email), email.size(), gdpr::base64_encode(raw));

  struct Case {
    std::string name;
    std::string body;
    std::shared_ptr<gdpr::AesGcmCipher> reader;
    std::string first_failure;  // paths are opened in order: the first that fails is named
  };
  for (const Case& c :
       {Case{"wrong key", std::string(sealed.body()), cipher_with({key_of('o')}), "data.addresses[].line"},
        Case{"changed byte", tampered, writer, "data.email"}}) {
    bq::memory::Transport transport;
    bq::Worker worker(transport, quiet());
    worker.use(std::make_shared<gdpr::Middleware>(customers(), c.reader));
    int runs = 0;
    worker.handle(std::string(kUrn), [&](const bq::Message&) { ++runs; });
    ASSERT_TRUE(transport.publish("customers", c.body));
    EXPECT_EQ(worker.drain().value(), 2U) << c.name;  // the delivery and its retry
    EXPECT_EQ(runs, 0) << c.name;
    auto dlq = transport.receive("customers.dlq", 10, 100ms).value();
    ASSERT_EQ(dlq.size(), 1U) << c.name;
    auto dead = bq::Envelope::decode(dlq[0].body).value();
    const auto arrived = bq::Envelope::decode(c.body).value();
    EXPECT_EQ(dead.data_json(), arrived.data_json()) << c.name;  // still encrypted, byte for byte
    EXPECT_EQ(dead.id(), arrived.id());
    EXPECT_NE(dead.dead_letter()->error.value_or("").find("cannot decrypt " + c.first_failure), std::string::npos)
        << dead.dead_letter()->error.value_or("");
  }
}
