// SPDX-License-Identifier: Apache-2.0
// MakeOptions with the id, the trace and the time fixed, so that a made
// envelope's bytes can be compared with a golden copy.
#pragma once

#include <babelqueue/envelope.hpp>

#include <string>
#include <utility>

namespace babelqueue::test_support {

inline constexpr const char* kFixedTrace = "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b";
inline constexpr const char* kFixedId = "f1e2d3c4-b5a6-4789-90ab-cdef01234567";

inline MakeOptions fixed_make_options(std::string queue = "orders") {
  MakeOptions options;
  options.queue = std::move(queue);
  options.trace_id = kFixedTrace;
  options.id = kFixedId;
  options.created_at = 1749132727000;
  return options;
}

}  // namespace babelqueue::test_support
