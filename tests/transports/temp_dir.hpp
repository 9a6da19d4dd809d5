// SPDX-License-Identifier: Apache-2.0
// TempDir: a fresh directory under $TMPDIR (or /tmp), removed with everything
// in it when the object goes away. For tests that need real files.
//
// Thread-safety: a plain value; path() may be read from any thread.
#pragma once

#include <babelqueue/error.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace babelqueue::test_support {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "bq-test") {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) throw Error(Errc::io, "mkdtemp failed for " + pattern);
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // A path inside the directory.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace babelqueue::test_support
