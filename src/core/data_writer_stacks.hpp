// SPDX-License-Identifier: Apache-2.0
// Internal: what a DataWriter remembers of the containers it has open. The
// envelope builder keeps one per thread, so after the first message writing
// data allocates nothing for it.
#pragma once

#include <cstdint>
#include <vector>

namespace babelqueue::detail {

struct DataWriterStacks {
  // An open container; first_key indexes keys, where an object's keys begin.
  struct Level {
    std::uint32_t first_key = 0;
    bool object = false;
    bool empty = true;  // nothing written in it yet: no ',' before the next
  };
  // A key token of an open object, where it lies in the output: canonical
  // escaping is one-to-one, so equal tokens are equal keys.
  struct Key {
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
  };
  std::vector<Level> levels;
  std::vector<Key> keys;

  void clear() noexcept {
    levels.clear();
    keys.clear();
  }
};

}  // namespace babelqueue::detail
