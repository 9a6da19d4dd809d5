// SPDX-License-Identifier: Apache-2.0
// Wall-clock time as the wire contract stores it: Unix epoch milliseconds, UTC.
#pragma once

#include <chrono>
#include <cstdint>

namespace babelqueue {

/// Now, in milliseconds since the Unix epoch (UTC): meta.created_at's unit.
inline std::int64_t now_epoch_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace babelqueue
