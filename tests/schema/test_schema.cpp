// SPDX-License-Identifier: Apache-2.0
// babelqueue::schema: the subset's rules and messages, the providers (in
// code and a registry directory), and the middleware on a real Worker:
// invalid data is refused before anything is sent, and never reaches a
// handler (retry, then the dead-letter queue with its bytes kept).
#include <babelqueue/json.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/schema/middleware.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace bq = babelqueue;
namespace schema = babelqueue::schema;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kOrder = R"({"type":"object","required":["order_id"],"additionalProperties":false,
  "properties":{"order_id":{"type":"integer","minimum":1},"note":{"type":"string","minLength":2},
  "currency":{"enum":["USD","EUR"]},"kind":{"const":"retail"},
  "lines":{"type":"array","items":{"type":"object","required":["sku"]}},"x-unknown":{"format":"email"}}})";

std::vector<std::string> problems(std::string_view data_json) {
  const auto s = schema::Schema::parse(kOrder).value();
  std::vector<std::string> out;
  for (const auto& v : s.validate(bq::parse_json(data_json).value())) out.push_back(schema::to_string(v));
  return out;
}

}  // namespace

TEST(Schema, EachViolationNamesItsPointerAndRule) {
  EXPECT_TRUE(problems(R"({"order_id":1})").empty());
  EXPECT_EQ(problems(R"({"order_id":0})"), (std::vector<std::string>{"/order_id: minimum (must be >= 1)"}));
  EXPECT_EQ(problems(R"({})"),
            (std::vector<std::string>{"/order_id: required (missing required property \"order_id\")"}));
  EXPECT_EQ(problems(R"({"order_id":"7"})"), (std::vector<std::string>{"/order_id: type (must be an integer)"}));
  EXPECT_EQ(problems(R"({"order_id":1,"extra":true})"),
            (std::vector<std::string>{"/extra: additionalProperties (additional property \"extra\" is not allowed)"}));
  EXPECT_EQ(problems(R"({"order_id":1,"currency":"GBP"})"),
            (std::vector<std::string>{"/currency: enum (value is not one of the allowed enum values)"}));
  EXPECT_EQ(problems(R"({"order_id":1,"kind":"b2b"})"),
            (std::vector<std::string>{"/kind: const (must equal const \"retail\")"}));
  EXPECT_EQ(problems(R"({"order_id":1,"lines":[{"sku":"a"},{}]})"),
            (std::vector<std::string>{"/lines/1/sku: required (missing required property \"sku\")"}));
  EXPECT_EQ(problems(R"([])"), (std::vector<std::string>{"(data): type (must be an object)"}));
}

TEST(Schema, TheFamilysFinePoints) {
  // An integral float is an integer; enum and const compare numbers by value.
  EXPECT_TRUE(problems(R"({"order_id":1.0})").empty());
  EXPECT_FALSE(problems(R"({"order_id":1.5})").empty());
  auto s = schema::Schema::parse(R"({"enum":[1,"a"]})").value();
  EXPECT_TRUE(s.valid(bq::parse_json("1.0").value()));
  // minLength counts code points: "é☕" is 2 characters (5 bytes), "☕" one.
  EXPECT_TRUE(problems(R"({"order_id":1,"note":"é☕"})").empty());
  EXPECT_EQ(problems(R"({"order_id":1,"note":"☕"})"),
            (std::vector<std::string>{"/note: minLength (must be at least 2 characters)"}));
  // Unknown keywords are ignored; so are the subset's keywords on a node
  // without the matching type.
  EXPECT_TRUE(schema::Schema::parse(R"({"pattern":"^a","maxLength":1,"minimum":5})").value().valid("zzz"));
  // A wrong shape of a subset keyword is a schema error.
  EXPECT_FALSE(schema::Schema::parse(R"({"required":"order_id"})"));
  EXPECT_FALSE(schema::Schema::parse(R"({"minimum":"1"})"));
  EXPECT_FALSE(schema::Schema::parse(R"([])"));
}

TEST(SchemaProvider, ADirectoryIsReadLazilyAndKept) {
  const auto dir = std::filesystem::temp_directory_path() / ("bq-schema-" + bq::uuid_v4());
  std::filesystem::create_directories(dir / "orders");
  std::ofstream(dir / "registry.json") << R"({"schemas":[
    {"urn":"urn:shop:orders:created","schema":"orders/created.json","owner":"shop","status":"active"},
    {"urn":"urn:shop:orders:missing","schema":"orders/missing.json"},
    {"urn":"","schema":"ignored.json"}]})";
  std::ofstream(dir / "orders" / "created.json") << kOrder;
  auto provider = schema::DirectoryProvider::open(dir).value();
  EXPECT_EQ(provider->schema_for("urn:shop:other").value(), nullptr);  // absent: never validated
  auto missing = provider->schema_for("urn:shop:orders:missing");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("missing.json"), std::string::npos);
  auto first = provider->schema_for("urn:shop:orders:created").value();
  ASSERT_NE(first, nullptr);
  std::filesystem::remove(dir / "orders" / "created.json");  // kept after the first read
  EXPECT_EQ(provider->schema_for("urn:shop:orders:created").value(), first);
  EXPECT_FALSE(schema::DirectoryProvider::open(dir / "nowhere"));
  std::filesystem::remove_all(dir);
}

namespace {

std::shared_ptr<schema::MapProvider> orders() {
  auto provider = std::make_shared<schema::MapProvider>();
  EXPECT_TRUE(provider->add("urn:shop:orders:created", kOrder));
  return provider;
}

bq::WorkerOptions quiet() {
  bq::WorkerOptions o;
  o.default_queue = "orders";
  o.poll_timeout = 20ms;
  o.dead_letter = true;
  o.max_attempts = 2;
  o.log = {};
  return o;
}

}  // namespace

TEST(SchemaMiddleware, InvalidDataIsNotPublished) {
  bq::memory::Transport transport;
  bq::Worker worker(transport, quiet());
  worker.use(std::make_shared<schema::Middleware>(orders()));
  auto refused = worker.publish("urn:shop:orders:created", bq::Value::object({{"order_id", 0}}));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  EXPECT_EQ(refused.error().message(),
            "data of \"urn:shop:orders:created\" does not match its schema: /order_id: minimum (must be >= 1)");
  EXPECT_EQ(transport.stats("orders").value().ready, 0);
  EXPECT_TRUE(worker.publish("urn:shop:orders:created", bq::Value::object({{"order_id", 3}})));
  EXPECT_TRUE(worker.publish("urn:shop:unchecked", bq::Value::object({{"anything", true}})));
  EXPECT_EQ(transport.stats("orders").value().ready, 2);
}

TEST(SchemaMiddleware, InvalidDataNeverReachesTheHandlerAndIsDeadLetteredWithItsBytes) {
  bq::memory::Transport transport;
  bq::Worker worker(transport, quiet());
  worker.use(std::make_shared<schema::Middleware>(orders()));
  int runs = 0;
  worker.handle("urn:shop:orders:created", [&](const bq::Message&) { ++runs; });
  // A producer without the check (another SDK, an old version) sent it.
  const auto env = bq::Envelope::make("urn:shop:orders:created", bq::Value::object({{"order_id", 0}, {"é", "☕"}}),
                                      bq::MakeOptions{.queue = "orders"})
                       .value();
  ASSERT_TRUE(transport.publish("orders", env.body()));
  // Invalid data fails the same way every time: dead-lettered at once, no
  // retry.
  ASSERT_EQ(worker.drain().value(), 1U);
  EXPECT_EQ(runs, 0);
  auto dlq = transport.receive("orders.dlq", 10, 100ms).value();
  ASSERT_EQ(dlq.size(), 1U);
  auto dead = bq::Envelope::decode(dlq[0].body).value();
  EXPECT_EQ(dead.data_json(), env.data_json());
  EXPECT_EQ(dead.id(), env.id());
  EXPECT_NE(dead.dead_letter()->error.value_or("").find("/order_id: minimum"), std::string::npos);
}
