// SPDX-License-Identifier: Apache-2.0
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

// The options every command shares, resolved once the command line is parsed.
struct GlobalOptions {
  // The broker URL: --url, else $BABELQUEUE_URL, else kDefaultUrl.
  std::string url;
  // True when --url was given on the command line (before or after the command).
  bool url_given = false;
};

inline constexpr const char* kDefaultUrl = "sqlite://babelqueue.db";
inline constexpr const char* kUrlEnvironmentVariable = "BABELQUEUE_URL";

// Registers `codec encode|decode|retry|dead-letter`.
void add_codec_commands(CLI::App& app, Action& action);
// Registers `conformance SUITE_DIR [--url URL]`.
void add_conformance_command(CLI::App& app, Action& action, const GlobalOptions& global);
// Registers `publish`, `send`, `drain`, `peek`, `stats` and `redrive`.
void add_queue_commands(CLI::App& app, Action& action, const GlobalOptions& global);
// Registers `work QUEUE [options] -- CMD [ARGS...]`.
void add_work_command(CLI::App& app, Action& action, const GlobalOptions& global);
// Registers `bench QUEUE [options]`.
void add_bench_command(CLI::App& app, Action& action, const GlobalOptions& global);
// Registers `gdpr protect|unprotect --registry DIR --key-file FILE` (builds
// with babelqueue::gdpr only).
void add_gdpr_command(CLI::App& app, Action& action);
// Registers `outbox relay --store URL` (builds with babelqueue::outbox only).
void add_outbox_command(CLI::App& app, Action& action, const GlobalOptions& global);
// Registers the hidden `completion bash|zsh`, generated from the commands
// registered before it: call it last.
void add_completion_command(CLI::App& app, Action& action);

// All of standard input. One trailing line break (LF or CRLF) is dropped, so
// `echo '{...}' | babelqueue codec decode` reads exactly the JSON text.
std::string read_stdin();

}  // namespace babelqueue::cli
