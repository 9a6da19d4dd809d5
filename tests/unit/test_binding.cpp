// SPDX-License-Identifier: Apache-2.0
// The binding kit (binding.hpp, attempts_rule.hpp): the contract-field scan
// against the decoder on every case of the official suite and the project's
// fixtures, the schema-version gate, count parsing, the name tables, and the
// attempts rules against the manifest's reconciliation tables.
#include "conformance_suite.hpp"

#include <babelqueue/attempts_rule.hpp>
#include <babelqueue/binding.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace bq = babelqueue;
namespace binding = babelqueue::binding;

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bq::Value manifest(const std::filesystem::path& dir) {
  auto parsed = bq::parse_json(read_file(dir / "manifest.json"));
  EXPECT_TRUE(parsed) << dir;
  return parsed ? *parsed : bq::Value();
}

// Every case body of a suite, with the bodies a retry and a dead-letter of
// each decodable one would carry.
std::vector<std::string> case_bodies(const std::filesystem::path& dir) {
  std::vector<std::string> bodies;
  const bq::Value suite = manifest(dir);
  for (const bq::Value& item : suite["cases"].as_array()) {
    bodies.push_back(read_file(dir / std::string(item["file"].as_string())));
    if (auto env = bq::Envelope::decode(bodies.back())) {
      if (auto retried = env->encode_with_attempts(env->attempts() + 1)) bodies.push_back(*retried);
    }
  }
  return bodies;
}

// Where the scan answers for a body the decoder accepts, it answers what the
// decoder reads; read() answers for every body the decoder accepts.
void expect_scan_agrees_with_decode(const std::vector<std::string>& bodies, int& scanned) {
  for (const std::string& body : bodies) {
    auto decoded = bq::Envelope::decode(body);
    auto fast = binding::scan(body);
    if (fast && decoded) {
      ++scanned;
      EXPECT_EQ(*fast, binding::ContractFields::of(*decoded)) << body;
    }
    std::optional<bq::Envelope> storage;
    auto read = binding::read(body, storage);
    if (decoded) {
      EXPECT_TRUE(read) << body;
    }
    if (!fast) {
      EXPECT_EQ(read.has_value(), decoded.has_value()) << body;
    }
    if (read && decoded) {
      EXPECT_EQ(*read, binding::ContractFields::of(*decoded)) << body;
    }
  }
}

TEST(BindingKit, TheScanAgreesWithTheDecoderOnTheOfficialSuite) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  int scanned = 0;
  expect_scan_agrees_with_decode(case_bodies(BQ_CONFORMANCE_DIR), scanned);
  EXPECT_GE(scanned, 3) << "the scan should read the suite's plain bodies itself";
}

TEST(BindingKit, TheScanAgreesWithTheDecoderOnTheProjectFixtures) {
  int scanned = 0;
  expect_scan_agrees_with_decode(case_bodies(BQ_TEST_FIXTURES_DIR), scanned);
  EXPECT_GE(scanned, 10);
}

TEST(BindingKit, TheScanGivesUpOnWhatItDoesNotReadPlainly) {
  for (const char* body : {
           R"({"job":"urn:\u0061","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1}})",
           R"({"urn":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1}})",
           R"({"job":"urn:a","job":"urn:b","trace_id":"t","data":{},"meta":{"schema_version":1}})",
           R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":"1"}})",
           R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1.0}})",
           R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":-1})",
           R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":99999999999999999999})",
           R"({"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1}} trailing)",
           R"({"job":"urn:a","trace_id":"t","data":{},"meta":[]})",
           "",
           "{",
           "[1]",
           "not json",
       }) {
    EXPECT_FALSE(binding::scan(body)) << body;
  }
}

TEST(BindingKit, ReadKeepsTheDecodedEnvelopeTheFieldsPointInto) {
  const std::string body =
      R"({"urn":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","lang":"go","schema_version":1,"created_at":5},"attempts":2})";
  std::optional<bq::Envelope> storage;
  auto fields = binding::read(body, storage);
  ASSERT_TRUE(fields);
  ASSERT_TRUE(storage) << "the alias is decoded, not scanned";
  EXPECT_EQ(fields->job, "urn:a");
  EXPECT_EQ(fields->attempts, 2);
  EXPECT_EQ(fields->created_at, 5);
  EXPECT_FALSE(binding::read("not json", storage));
}

TEST(BindingKit, SchemaVersionGate) {
  using binding::schema_version_gate;
  EXPECT_FALSE(schema_version_gate(std::nullopt));
  EXPECT_FALSE(schema_version_gate(std::optional<std::string_view>("")));
  EXPECT_FALSE(schema_version_gate(std::optional<std::string_view>(" \t\r\n\v\f")));
  EXPECT_FALSE(schema_version_gate(std::optional<std::string_view>("1")));
  for (const char* bad : {"2", "01", " 1", "1 ", "1.0", "\xc2\xa0",
                          "\xef\xbb\xbf"
                          "1"}) {
    EXPECT_EQ(schema_version_gate(std::optional<std::string_view>(bad)), bq::Rejection::schema_version_gate) << bad;
  }
  EXPECT_FALSE(schema_version_gate(std::int64_t{1}));
  for (std::int64_t bad : {std::int64_t{0}, std::int64_t{2}, std::int64_t{-1}, INT64_MAX, INT64_MIN}) {
    EXPECT_EQ(schema_version_gate(bad), bq::Rejection::schema_version_gate) << bad;
  }
}

TEST(BindingKit, CountsAreNonNegativeDecimalsThatFit) {
  EXPECT_EQ(binding::parse_count("0"), 0);
  EXPECT_EQ(binding::parse_count("42"), 42);
  EXPECT_EQ(binding::parse_count("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1.0", "abc", "9223372036854775808", "not-a-number"}) {
    EXPECT_FALSE(binding::parse_count(bad)) << bad;
  }
}

TEST(BindingKit, NameTablesOwnTheirNamesOnly) {
  EXPECT_TRUE(binding::kKafkaHeaders.owns("bq-attempts"));
  EXPECT_TRUE(binding::kSqsAttributes.owns("bq-created-at"));
  EXPECT_FALSE(binding::kSqsAttributes.owns("bq-attempts"));
  EXPECT_TRUE(binding::kArtemisProperties.owns("bq_app_id"));
  EXPECT_FALSE(binding::kArtemisProperties.owns("bq-schema-version"));
  EXPECT_TRUE(binding::kRabbitmqHeaders.owns("x-attempts"));
  EXPECT_FALSE(binding::kRabbitmqHeaders.owns(""));
  EXPECT_FALSE(binding::kServiceBusProperties.owns("traceparent"));
}

// The manifest's reconciliation tables, each through the rule its binding uses.
struct ReconciliationTable {
  const char* binding;
  const char* native_key;
  bq::AttemptsRule rule;
};

TEST(BindingKit, AttemptsRulesMatchTheManifestTables) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  const bq::Value suite = manifest(BQ_CONFORMANCE_DIR);
  const ReconciliationTable tables[] = {
      {"sqs", "approximate_receive_count", bq::kOneBasedDeliveryCount},
      {"asb", "delivery_count", bq::kOneBasedDeliveryCount},
      {"pulsar", "redelivery_count", bq::kZeroBasedDeliveryCount},
      {"artemis", "delivery_count", bq::kZeroBasedDeliveryCount},
      {"kafka", "header_attempts", bq::kAuthoritativeAttemptsHeader},
  };
  int checked = 0;
  for (const ReconciliationTable& table : tables) {
    for (const bq::Value& row : suite[table.binding]["attempts_reconciliation"]["cases"].as_array()) {
      const bq::Value& native = row[table.native_key];
      std::optional<std::int64_t> count;
      if (native.is_string()) count = binding::parse_count(native.as_string());
      if (native.is_number()) count = native.as_int64();
      const auto attempts = table.rule.reconcile(row["body_attempts"].as_int64(), table.rule.native_attempts(count));
      EXPECT_EQ(attempts, row["expected_attempts"].as_int64()) << table.binding << " " << row["name"].as_string();
      ++checked;
    }
  }
  EXPECT_GE(checked, 25);
}

TEST(BindingKit, AttemptsRulesStayInRangeAtTheLimits) {
  EXPECT_EQ(bq::kOneBasedDeliveryCount.native_attempts(INT64_MIN), 0);
  EXPECT_EQ(bq::kOneBasedDeliveryCount.native_attempts(INT64_MAX), INT64_MAX - 1);
  EXPECT_EQ(bq::kZeroBasedDeliveryCount.native_attempts(INT64_MAX), INT64_MAX);
  EXPECT_EQ(bq::kZeroBasedDeliveryCount.native_attempts(-5), 0);
  EXPECT_EQ(bq::kZeroBasedDeliveryCount.reconcile(INT64_MAX, 3), INT64_MAX);
  EXPECT_EQ(bq::kAuthoritativeAttemptsHeader.reconcile(INT64_MAX, 3), 3);
  EXPECT_EQ(bq::kAuthoritativeAttemptsHeader.reconcile(4, std::nullopt), 4);
}

}  // namespace
