// The babelqueue command-line tool: each command group registers its
// subcommands on the CLI11 app. Exit codes are stable for scripts:
// 0 success, 1 failure, 2 usage error.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace babelqueue::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// What a subcommand runs once the command line is parsed; returns the exit code.
using Action = std::function<int()>;

// Registers `codec encode|decode|retry|dead-letter`.
void add_codec_commands(CLI::App& app, Action& action);
// Registers `conformance SUITE_DIR [--url URL]`.
void add_conformance_command(CLI::App& app, Action& action);

// All of standard input. One trailing line break (LF or CRLF) is dropped, so
// `echo '{...}' | babelqueue codec decode` reads exactly the JSON text.
std::string read_stdin();

}  // namespace babelqueue::cli
