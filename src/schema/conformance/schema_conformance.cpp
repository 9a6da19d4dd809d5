// SPDX-License-Identifier: Apache-2.0
#include "schema_conformance.hpp"

#include <babelqueue/schema/schema.hpp>

namespace babelqueue::schema {

void add_conformance_section(conformance::Runner& runner) {
  runner.add_section("payload_schema", [](const conformance::Suite&, const Value& block, const conformance::Options&,
                                          conformance::Reporter& reporter) {
    auto compiled = Schema::from_value(block["schema"]);
    if (!compiled) {
      reporter.fail("payload_schema.schema", compiled.error().message());
      return;
    }
    for (const Value& test : block["cases"].as_array()) {
      const std::string name = "payload_schema." + test["name"].as_string();
      const bool expected = test["valid"].as_bool();
      const auto violations = compiled->validate(test["data"]);
      if (violations.empty() == expected) {
        reporter.pass(name);
      } else if (expected) {
        reporter.fail(name, "expected valid, got " + to_string(violations.front()));
      } else {
        reporter.fail(name, "expected invalid, found no violation");
      }
    }
  });
}

}  // namespace babelqueue::schema
