// SPDX-License-Identifier: Apache-2.0
// Internal: the storage of a DataWriter's stacks of open containers and of
// their keys. The envelope builder keeps one per thread, so after the first
// message writing data allocates nothing for it.
#pragma once

#include <babelqueue/data_writer.hpp>

#include <vector>

namespace babelqueue::detail {

// The writer works through pointers into these vectors and grows them
// itself: their sizes are their capacities, never cut, so what one message
// grew the next one finds (the levels' no more than DataWriter::kMaxDepth).
struct DataWriterStacks {
  std::vector<DataWriter::Level> levels;
  std::vector<DataWriter::KeyToken> keys;
};

}  // namespace babelqueue::detail
