// SPDX-License-Identifier: Apache-2.0
// babelqueue: publish, consume and inspect BabelQueue messages from a shell.
#include "builtin.hpp"
#include "commands.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/version.hpp>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

namespace {

// The visible commands, "publish, send, ...", in the order of the help.
std::string command_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands({})) {
    if (command->get_group().empty()) continue;  // hidden
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  return names;
}

// The first word that stands where a command name belongs — not an option
// nor the value of --url — when it names no command (of the app, or of a
// command with commands of its own, like codec). CLI11 would report it as
// "A subcommand is required" or as an unexpected argument.
struct UnknownCommand {
  std::string word;
  CLI::App* owner;  // the command whose commands it is not one of
};
std::optional<UnknownCommand> unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string_view word(argv[i]);
    if (word == "--") return std::nullopt;
    if (word == "--url") {
      ++i;  // its value
      continue;
    }
    if (word.starts_with("-")) continue;
    CLI::App* found = nullptr;
    for (CLI::App* command : current->get_subcommands({})) {
      if (command->check_name(std::string(word))) found = command;
    }
    if (found == nullptr) return UnknownCommand{std::string(word), current};
    if (found->get_subcommands({}).empty()) return std::nullopt;  // the rest are its arguments
    current = found;
  }
  return std::nullopt;
}

// The innermost command given on the command line (the app itself if none).
CLI::App* innermost_command(CLI::App& app) {
  CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().front();
  return current;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace babelqueue::cli;
  CLI::App app{"babelqueue: the BabelQueue command-line tool", "babelqueue"};
  app.set_version_flag("--version", babelqueue::kVersion);
  app.require_subcommand(1);
  // --url is the app's option; subcommands inherit fallthrough, so it is
  // accepted before and after the command name alike.
  app.fallthrough();
  GlobalOptions global;
  babelqueue::builtin::register_transports();
  // The help names the schemes this build opens (the transports it was built with).
  std::string schemes;
  for (const std::string& scheme : babelqueue::registered_schemes()) {
    schemes += (schemes.empty() ? "" : ", ") + scheme + "://";
  }
  CLI::Option* url = app.add_option("--url", global.url,
                                    std::string("The broker URL (default: $") + kUrlEnvironmentVariable + ", else " +
                                        kDefaultUrl + "); schemes: " + schemes)
                         ->type_name("URL");
  Action action;
  add_codec_commands(app, action);
  add_conformance_command(app, action, global);
  add_queue_commands(app, action, global);
  add_work_command(app, action, global);
  add_bench_command(app, action, global);
#if defined(BQ_CLI_GDPR)
  add_gdpr_command(app, action);
#endif
#if defined(BQ_CLI_OUTBOX)
  add_outbox_command(app, action, global);
#endif
  add_completion_command(app, action);
  for (CLI::App* command : app.get_subcommands({})) {
    const std::string& name = command->get_name();
    if (name == "codec" || name == "conformance" || name == "completion" || name == "gdpr") continue;
    command->footer(std::string("Global option (before or after the command): --url URL, the broker (default: $") +
                    kUrlEnvironmentVariable + ", else " + kDefaultUrl +
                    ").\nExit status: 0 ok, 1 failure, 2 usage error.");
  }
  if (auto unknown = unknown_command(app, argc, argv)) {
    const std::string prefix = unknown->owner == &app ? "" : unknown->owner->get_name() + " ";
    std::cerr << "babelqueue: unknown command '" << prefix << unknown->word
              << "' (the commands: " << command_names(*unknown->owner) << ")\nRun with --help for more information.\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // No command where one is needed: the usage, which lists them, rather
    // than CLI11's bare "A subcommand is required".
    if (CLI::App* command = innermost_command(app); dynamic_cast<const CLI::RequiredError*>(&e) != nullptr &&
                                                    !command->get_subcommands({}).empty() &&
                                                    command->get_subcommands().empty()) {
      std::cerr << command->help();
      return kExitUsage;
    }
    // Every other parse problem is a usage error.
    std::cerr << "babelqueue: " << e.what() << "\nRun with --help for more information.\n";
    return kExitUsage;
  }
  global.url_given = url->count() > 0;
  if (!global.url_given) {
    const char* from_environment = std::getenv(kUrlEnvironmentVariable);
    global.url = from_environment != nullptr && *from_environment != '\0' ? from_environment : kDefaultUrl;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const babelqueue::Error& e) {
    std::cerr << "babelqueue: " << e.what() << '\n';
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "babelqueue: unexpected error: " << e.what() << '\n';
    return kExitFailure;
  }
}
