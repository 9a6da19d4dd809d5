// SPDX-License-Identifier: Apache-2.0
#include "builtin.hpp"
#include "commands.hpp"
#include "conformance.hpp"

#include <iostream>
#include <memory>

namespace babelqueue::cli {

void add_conformance_command(CLI::App& app, Action& action, const GlobalOptions& global) {
  struct Args {
    std::string suite_dir;
    std::string url;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "conformance",
      "Run a conformance suite directory (manifest.json + fixtures/); one PASS/FAIL/SKIP line per check");
  command->add_option("SUITE_DIR", args->suite_dir, "The suite directory")->required()->check(CLI::ExistingDirectory);
  CLI::Option* url = command->add_option("--url", args->url, "A broker URL for the checks that need a live broker");
  command->callback([&action, &global, args, url] {
    action = [&global, args, url] {
      conformance::Runner runner;
      builtin::add_conformance_sections(runner);
      conformance::Options options;
      // Its own --url, else the global one when given on the command line
      // (never $BABELQUEUE_URL: the live checks run only when asked for).
      if (url->count() > 0) {
        options.url = args->url;
      } else if (global.url_given) {
        options.url = global.url;
      }
      return runner.run(args->suite_dir, options, std::cout) ? kExitOk : kExitFailure;
    };
  });
}

}  // namespace babelqueue::cli
