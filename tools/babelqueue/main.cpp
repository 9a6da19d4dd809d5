// SPDX-License-Identifier: Apache-2.0
// babelqueue: publish, consume and inspect BabelQueue messages from a shell.
#include "builtin.hpp"
#include "commands.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/version.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  using namespace babelqueue::cli;
  CLI::App app{"babelqueue: the BabelQueue command-line tool"};
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
  for (CLI::App* command : app.get_subcommands({})) {
    if (command->get_name() == "codec" || command->get_name() == "conformance") continue;
    command->footer(std::string("Global option (before or after the command): --url URL, the broker (default: $") +
                    kUrlEnvironmentVariable + ", else " + kDefaultUrl +
                    ").\nExit status: 0 ok, 1 failure, 2 usage error.");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0; every other parse problem is a usage error.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
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
