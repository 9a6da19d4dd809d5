// SPDX-License-Identifier: Apache-2.0
// Random UUIDs (babelqueue/uuid.hpp) after fork(): a child must not repeat its
// parent's ids. (Uniqueness across threads: test_envelope.cpp.)
#include <babelqueue/uuid.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <set>
#include <string>

namespace bq = babelqueue;

namespace {

bool is_v4(const std::string& id) {
  if (id.size() != 36) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  const char variant = id[19];
  return id[14] == '4' && (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

}  // namespace

TEST(Uuid, IsALowercaseVersion4UuidWithTheRfcVariantAcrossManyBlocks) {
  for (int i = 0; i < 1000; ++i) {
    const std::string id = bq::uuid_v4();
    EXPECT_TRUE(is_v4(id)) << id;
  }
}

// The parent takes an id first, so random bytes it has not handed out yet
// wait in its memory when it forks; the child gets a copy of that memory.
TEST(Uuid, AForkedChildDoesNotRepeatItsParentsIds) {
  (void)bq::uuid_v4();
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  constexpr int kIds = 4;
  if (child == 0) {
    ::close(pipe_fds[0]);
    std::string ids;
    for (int i = 0; i < kIds; ++i) ids += bq::uuid_v4();
    const bool written = ::write(pipe_fds[1], ids.data(), ids.size()) == static_cast<ssize_t>(ids.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::set<std::string> parent;
  for (int i = 0; i < kIds; ++i) parent.insert(bq::uuid_v4());
  std::string from_child;
  char buffer[256];
  for (ssize_t n = 0; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    from_child.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(from_child.size(), static_cast<std::size_t>(36 * kIds));
  for (int i = 0; i < kIds; ++i) {
    const std::string id = from_child.substr(static_cast<std::size_t>(36 * i), 36);
    EXPECT_TRUE(is_v4(id)) << id;
    EXPECT_EQ(parent.count(id), 0U) << "the child repeated its parent's id " << id;
  }
}
