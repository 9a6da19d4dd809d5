// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/log_sink.hpp>

#include <cstdio>
#include <string>

namespace babelqueue {

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "info";
}

LogSink stderr_log_sink(LogLevel min_level) {
  return [min_level](LogLevel level, std::string_view message) {
    if (level < min_level) return;
    // One fprintf per line keeps lines from several threads whole.
    std::fprintf(stderr, "babelqueue %s: %.*s\n", std::string(to_string(level)).c_str(),
                 static_cast<int>(message.size()), message.data());
  };
}

}  // namespace babelqueue
