// SPDX-License-Identifier: Apache-2.0
// The official conformance suite, for the tests that read its cases and
// fixtures. Where it is comes from one CMake variable,
// BABELQUEUE_CONFORMANCE_DIR (compiled in as BQ_CONFORMANCE_DIR); a build
// configured without it reports those tests as skipped and names the
// variable, instead of failing on files that are not there.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

namespace babelqueue::testing {

inline constexpr std::string_view kConformanceSuiteMissing =
    "needs the conformance suite: configure with -DBABELQUEUE_CONFORMANCE_DIR=<the suite's directory>";

inline bool have_conformance_suite() { return !std::string_view(BQ_CONFORMANCE_DIR).empty(); }

}  // namespace babelqueue::testing

// First statement of a test that reads the suite: skips the test (GTEST_SKIP
// returns from the test body, so this cannot be a function) without it.
#define BQ_SKIP_WITHOUT_CONFORMANCE_SUITE() \
  if (!::babelqueue::testing::have_conformance_suite()) GTEST_SKIP() << ::babelqueue::testing::kConformanceSuiteMissing
