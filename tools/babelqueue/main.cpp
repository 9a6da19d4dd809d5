// babelqueue: publish, consume and inspect BabelQueue messages from a shell.
#include "commands.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/version.hpp>

#include <iostream>

int main(int argc, char** argv) {
  using namespace babelqueue::cli;
  CLI::App app{"babelqueue: the BabelQueue command-line tool"};
  app.set_version_flag("--version", babelqueue::kVersion);
  app.require_subcommand(1);
  Action action;
  add_codec_commands(app, action);
  add_conformance_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0; every other parse problem is a usage error.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
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
