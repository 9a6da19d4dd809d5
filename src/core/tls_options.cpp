// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/tls_options.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace babelqueue {
namespace {

// The most of a PEM file read to look for its first block.
constexpr std::size_t kPemProbe = 1 << 20;

// Whether the file named by option can be used as a PEM file, with the
// reason when not: a TLS library only says "asio.ssl error" or "a SSL error
// occurred" about a file it cannot open or read.
Result<void> readable_pem(std::string_view option, const std::string& path) {
  auto refused = [&](const std::string& why) -> Result<void> {
    return unexpected(Errc::invalid_argument, std::string(option) + " '" + path + "' " + why);
  };
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return refused("cannot be read: " + std::string(std::strerror(errno)));
  if (S_ISDIR(info.st_mode)) return refused("is a directory, not a PEM file");
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return refused("cannot be read: " + std::string(std::strerror(errno)));
  std::string head(kPemProbe, '\0');
  head.resize(std::fread(head.data(), 1, head.size(), file.get()));
  if (std::ferror(file.get()) != 0) return refused("cannot be read: " + std::string(std::strerror(errno)));
  if (head.empty()) return refused("is empty, not a PEM file");
  if (head.find("-----BEGIN ") == std::string::npos) return refused("holds no PEM block (-----BEGIN ...-----)");
  return {};
}

}  // namespace

Result<void> TlsOptions::check() const {
  if (cert_file.empty() != key_file.empty()) {
    return unexpected(Errc::invalid_argument, "tls_cert and tls_key go together: give both or neither");
  }
  return {};
}

Result<void> TlsOptions::check_files() const {
  const std::pair<std::string_view, const std::string*> files[] = {
      {"tls_ca", &ca_file}, {"tls_cert", &cert_file}, {"tls_key", &key_file}};
  for (const auto& [option, path] : files) {
    if (path->empty()) continue;
    if (auto usable = readable_pem(option, *path); !usable) return usable;
  }
  return {};
}

}  // namespace babelqueue
