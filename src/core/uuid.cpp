// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/uuid.hpp>

#include <sys/random.h>

#include <cerrno>
#include <cstdint>

namespace babelqueue {

void uuid_v4(char (&out)[36]) {
  std::uint8_t bytes[16];
  std::size_t filled = 0;
  while (filled < sizeof bytes) {
    // getrandom never returns short for <= 256 bytes once the pool is ready,
    // but an interrupted call must simply be retried.
    const ssize_t n = ::getrandom(bytes + filled, sizeof bytes - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(Errc::internal, "getrandom failed: no kernel entropy source");
    }
    filled += static_cast<std::size_t>(n);
  }
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0FU) | 0x40U);  // version 4
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3FU) | 0x80U);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t pos = 0;
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[pos++] = '-';
    out[pos++] = kHex[bytes[i] >> 4U];
    out[pos++] = kHex[bytes[i] & 0x0FU];
  }
}

std::string uuid_v4() {
  char text[36];
  uuid_v4(text);
  return std::string(text, sizeof text);
}

}  // namespace babelqueue
