// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: any bytes as a Pulsar broker's side of a connection,
// through the frame reader (fed in pieces whose sizes the input chooses) and
// the batch unpacker, as the client's I/O thread runs them. A malformed frame
// must end in an error (the client drops the connection and reconnects),
// never a crash, a hang or an allocation the frame did not announce.
//
// Invariants checked:
//   F1  next() never returns a frame larger than the reader's limit allows
//   F2  after an error the caller stops (as the client does); before it,
//       every frame's payload fits in the bytes fed
//   F3  split_entry() of any decoded MESSAGE either fails or returns at most
//       num_messages_in_batch messages whose payloads fit in the limit
#include "pulsar_frame.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace pd = babelqueue::pulsar_detail;

namespace {

constexpr std::size_t kMaxFrame = 1 << 20;
constexpr std::size_t kMaxMessage = 1 << 20;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "pulsar_frame_fuzz: invariant %s broken\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte chooses the piece size: 1..256 bytes per feed.
  const std::size_t piece = static_cast<std::size_t>(data[0]) + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  pd::FrameReader reader(kMaxFrame);
  std::size_t fed = 0;
  while (fed < bytes.size()) {
    const std::size_t n = std::min(piece, bytes.size() - fed);
    reader.feed(bytes.substr(fed, n));
    fed += n;
    for (;;) {
      auto next = reader.next();
      if (!next) return 0;  // F2: the connection would be dropped here
      if (!*next) break;
      const pd::Frame& frame = **next;
      if (frame.payload.size() > kMaxFrame) broken("F1");
      if (frame.payload.size() > fed) broken("F2");
      if (frame.metadata) {
        auto split = pd::split_entry(*frame.metadata, frame.payload, kMaxMessage);
        if (split) {
          const auto announced = frame.metadata->num_messages_in_batch.value_or(1);
          if (split->size() > static_cast<std::size_t>(announced < 1 ? 1 : announced)) broken("F3 (count)");
          for (const auto& m : *split) {
            if (m.payload.size() > kMaxMessage) broken("F3 (size)");
          }
        }
      }
    }
  }
  return 0;
}
