// SPDX-License-Identifier: Apache-2.0
// Internal: one simdjson parser of each kind per thread, reused across calls
// so that parsing allocates nothing once the parser has grown to the largest
// document seen.
//
// The DOM parser runs the kernel simdjson picks for the CPU at run time
// (json_implementation()); the On-Demand parser runs the kernel this
// translation unit is compiled for, which is always the portable one: the
// library is built without instruction-set flags (docs/adr/0036).
#pragma once

#include <simdjson.h>

#include <cstddef>

namespace babelqueue::detail {

// The simdjson implementation the DOM parsers of this process use: the best
// the CPU supports, or the one BABELQUEUE_JSON_KERNEL names (read once, on
// the first call).
const simdjson::implementation& json_implementation() noexcept;

// The calling thread's DOM parser.
inline simdjson::dom::parser& thread_dom_parser() {
  static const bool chosen = (json_implementation(), true);
  (void)chosen;
  thread_local simdjson::dom::parser parser;
  return parser;
}

// The calling thread's On-Demand parser, able to iterate documents up to max_depth.
inline simdjson::ondemand::parser& thread_parser(std::size_t max_depth) {
  thread_local simdjson::ondemand::parser parser;
  // simdjson tracks depth too; keep its limit above ours so that ours, with
  // its clearer reason, is the one that fires.
  if (parser.max_depth() < max_depth + 2) {
    // On failure (out of memory) the parser keeps its old limit and simdjson
    // reports too_deep for documents beyond it, which is still a clean error.
    if (parser.allocate(parser.capacity() > 0 ? parser.capacity() : 4096, max_depth + 2) != simdjson::SUCCESS) {
      return parser;
    }
  }
  return parser;
}

}  // namespace babelqueue::detail
