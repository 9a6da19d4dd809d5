// SPDX-License-Identifier: Apache-2.0
// Internal: what a DataWriter remembers of the containers it has open. The
// envelope builder keeps one per thread, so after the first message writing
// data allocates nothing for it.
#pragma once

#include <babelqueue/data_writer.hpp>

#include <cstdint>
#include <vector>

namespace babelqueue::detail {

struct DataWriterStacks {
  // The container around an open one: where its keys begin, the bits of
  // its keys, and what may come in it once the inner one is closed.
  struct Level {
    std::uint32_t first_key = 0;
    std::uint64_t key_bits = 0;
    DataWriter::State state = DataWriter::State::done;
  };
  // A key token of an open object, where it lies in the output: canonical
  // escaping is one-to-one, so equal tokens are equal keys.
  struct Key {
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
  };
  std::vector<Level> levels;  // one per open container: its size is the depth
  std::vector<Key> keys;

  void clear() noexcept {
    levels.clear();
    keys.clear();
  }
};

}  // namespace babelqueue::detail
