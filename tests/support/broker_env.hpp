// SPDX-License-Identifier: Apache-2.0
// Where the real brokers of the test run are: scripts/broker knows their
// URLs, ports and TLS files (`url NAME`, `info NAME` key=value lines). The
// CTest fixture broker_NAME (tests/brokers) has started them.
#pragma once

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace babelqueue::testing {

inline std::string broker_script() { return std::string(BQ_SOURCE_DIR) + "/scripts/broker"; }

// Runs a shell command and returns its standard output; throws when it fails.
inline std::string run_command_output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::string out;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0) out.append(buffer.data(), n);
  const int status = ::pclose(pipe.release());
  if (status != 0) throw std::runtime_error("command failed (" + std::to_string(status) + "): " + command);
  return out;
}

// The broker's URL, e.g. broker_url("redis") == "redis://127.0.0.1:6390/0".
inline std::string broker_url(const std::string& name) {
  std::string out = run_command_output(broker_script() + " url " + name);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const auto newline = out.rfind('\n');
  return newline == std::string::npos ? out : out.substr(newline + 1);
}

// The broker's `info` lines as a map (URLs, TLS URL, CA and certificate
// paths, ports, directories).
inline std::map<std::string, std::string> broker_info(const std::string& name) {
  const std::string out = run_command_output(broker_script() + " info " + name);
  std::map<std::string, std::string> info;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(start, end - start);
    const auto eq = line.find('=');
    if (eq != std::string::npos) info[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  return info;
}

}  // namespace babelqueue::testing
