// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/uuid.hpp>

#include <pthread.h>
#include <sys/random.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace babelqueue {

namespace {

// Random bytes are taken from the kernel a block at a time, per thread: one
// getrandom call per 16 UUIDs instead of one per UUID. The call costs about
// 200 ns, so a message's two UUIDs (meta.id and trace_id) cost more than
// writing the whole envelope when each made its own call.
constexpr std::size_t kPoolBytes = 256;  // getrandom never returns short for <= 256 bytes

// Bumped in a forked child: a block the parent had already taken is left
// behind there, so parent and child never hand out the same bytes (they
// would otherwise make the same ids).
std::atomic<std::uint64_t> fork_generation{0};

void after_fork_in_child() noexcept { fork_generation.fetch_add(1, std::memory_order_relaxed); }

struct RandomPool {
  std::uint8_t bytes[kPoolBytes];
  std::size_t used = kPoolBytes;  // empty until the first take
  std::uint64_t generation = 0;
};

thread_local RandomPool pool;

void fill_from_kernel(std::uint8_t* out, std::size_t size) {
  std::size_t filled = 0;
  while (filled < size) {
    // An interrupted call must simply be retried.
    const ssize_t n = ::getrandom(out + filled, size - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(Errc::internal, "getrandom failed: no kernel entropy source");
    }
    filled += static_cast<std::size_t>(n);
  }
}

// 16 random bytes no other call, thread or process has been given.
void take_random(std::uint8_t (&out)[16]) {
  static const int registered = pthread_atfork(nullptr, nullptr, after_fork_in_child);
  (void)registered;
  const std::uint64_t generation = fork_generation.load(std::memory_order_relaxed);
  if (pool.used + sizeof out > kPoolBytes || pool.generation != generation) {
    fill_from_kernel(pool.bytes, kPoolBytes);
    pool.used = 0;
    pool.generation = generation;
  }
  std::memcpy(out, pool.bytes + pool.used, sizeof out);
  std::memset(pool.bytes + pool.used, 0, sizeof out);  // handed out: not kept where memory could show it
  pool.used += sizeof out;
}

}  // namespace

void uuid_v4(char (&out)[36]) {
  std::uint8_t bytes[16];
  take_random(bytes);
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
