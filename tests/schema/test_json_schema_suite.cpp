// SPDX-License-Identifier: Apache-2.0
// The official JSON Schema test suite (Debian's json-schema-test-suite),
// draft-07, for every keyword of the family's subset: each case the subset
// answers differently must be one docs/schema.md lists as deliberate (and
// each one listed must still differ), so the documentation and the
// validator cannot drift apart.
#include <babelqueue/json.hpp>
#include <babelqueue/schema/schema.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace bq = babelqueue;

namespace {

const std::filesystem::path kSuite = "/usr/share/json-schema-test-suite/tests/draft7";
const char* const kKeywordFiles[] = {"type",  "required",  "properties", "additionalProperties", "items", "enum",
                                     "const", "minLength", "minimum"};

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The deviations docs/schema.md lists: the lines "- `FILE: GROUP / TEST`"
// between its deviation markers.
std::set<std::string> documented() {
  const std::string doc = read(std::filesystem::path(BQ_SOURCE_DIR) / "docs" / "schema.md");
  const auto begin = doc.find("<!-- deviations:begin -->");
  const auto end = doc.find("<!-- deviations:end -->");
  std::set<std::string> out;
  if (begin == std::string::npos || end == std::string::npos) return out;
  std::size_t at = begin;
  while ((at = doc.find("\n- `", at)) != std::string::npos && at < end) {
    const auto close = doc.find('`', at + 4);
    out.insert(doc.substr(at + 4, close - at - 4));
    at = close;
  }
  return out;
}

}  // namespace

TEST(JsonSchemaTestSuite, TheSubsetDiffersOnlyWhereTheDocsSaySo) {
  if (!std::filesystem::exists(kSuite)) GTEST_SKIP() << "json-schema-test-suite is not installed (scripts/setup)";
  std::set<std::string> differing;
  int cases = 0;
  for (const char* keyword : kKeywordFiles) {
    const auto file = kSuite / (std::string(keyword) + ".json");
    const auto groups = bq::parse_json(read(file));
    ASSERT_TRUE(groups) << file;
    for (const bq::Value& group : groups->as_array()) {
      const std::string group_name = group["description"].as_string();
      const auto schema = bq::schema::Schema::from_value(group["schema"]);
      for (const bq::Value& test : group["tests"].as_array()) {
        ++cases;
        const std::string name = std::string(keyword) + ": " + group_name + " / " + test["description"].as_string();
        const bool expected = test["valid"].as_bool();
        const bool got = schema && schema->valid(test["data"]);
        if (got != expected) differing.insert(name);
      }
    }
  }
  std::cout << cases << " cases, " << differing.size() << " answered differently by the subset\n";
  const std::set<std::string> listed = documented();
  for (const auto& name : differing) {
    EXPECT_TRUE(listed.count(name) > 0) << "not listed in docs/schema.md: - `" << name << "`";
  }
  for (const auto& name : listed) EXPECT_TRUE(differing.count(name) > 0) << "listed but no longer differs: " << name;
}
