#include "commands.hpp"
#include "conformance.hpp"

#include <iostream>
#include <memory>

namespace babelqueue::cli {

void add_conformance_command(CLI::App& app, Action& action) {
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
  command->callback([&action, args, url] {
    action = [args, url] {
      conformance::Runner runner;
      conformance::add_core_sections(runner);
      conformance::Options options;
      if (url->count() > 0) options.url = args->url;
      return runner.run(args->suite_dir, options, std::cout) ? kExitOk : kExitFailure;
    };
  });
}

}  // namespace babelqueue::cli
