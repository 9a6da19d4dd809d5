// SPDX-License-Identifier: Apache-2.0
// Internal: one simdjson On-Demand parser per thread, reused across calls so
// that parsing allocates nothing once the parser has grown to the largest
// document seen.
#pragma once

#include <simdjson.h>

#include <cstddef>

namespace babelqueue::detail {

// The calling thread's parser, able to iterate documents up to max_depth.
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
