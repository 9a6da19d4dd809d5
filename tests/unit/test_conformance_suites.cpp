// SPDX-License-Identifier: Apache-2.0
// Runs the official conformance suite and the project's own fixture suite
// through the same runner the CLI uses.
#include "conformance.hpp"
#include "conformance_suite.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

namespace {

void run_suite(const std::filesystem::path& dir) {
  ASSERT_TRUE(std::filesystem::exists(dir / "manifest.json")) << "suite not found: " << dir;
  babelqueue::conformance::Runner runner;
  babelqueue::conformance::add_core_sections(runner);
  std::ostringstream out;
  const bool ok = runner.run(dir, {}, out);
  EXPECT_TRUE(ok) << out.str();
  EXPECT_EQ(out.str().find("FAIL"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("PASS cases/"), std::string::npos) << out.str();
}

TEST(Conformance, OfficialSuite) {
  BQ_SKIP_WITHOUT_CONFORMANCE_SUITE();
  run_suite(BQ_CONFORMANCE_DIR);
}
TEST(Conformance, OwnFixtures) { run_suite(BQ_TEST_FIXTURES_DIR); }

}  // namespace
