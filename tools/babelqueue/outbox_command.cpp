// SPDX-License-Identifier: Apache-2.0
// `babelqueue outbox relay --store URL [--drain]`: publishes the pending rows
// of a transactional outbox to the broker of --url (docs/outbox.md,
// docs/cli.md). Runs until SIGINT/SIGTERM, or with --drain until nothing is
// pending; prints one summary line (JSON with --json).
#include "commands.hpp"
#include "option_checks.hpp"
#include "support.hpp"

#include <babelqueue/outbox/relay.hpp>
#include <babelqueue/outbox/sqlite_store.hpp>
#include <babelqueue/url.hpp>
#if defined(BQ_CLI_POSTGRES_OUTBOX)
#include <babelqueue/postgres/outbox_store.hpp>
#endif

#include <atomic>
#include <iostream>
#include <memory>

namespace babelqueue::cli {

namespace {

struct RelayArgs {
  std::string store;
  bool drain = false;
  bool json = false;
  std::size_t batch = 100;
  double idle_wait = 0.5;
  double lease = 30;
};

// The store a URL names: sqlite:///abs/file.db or sqlite://rel/file.db, or
// postgresql://user:password@host:port/db (with babelqueue::postgres);
// ?table=NAME (default babelqueue_outbox).
Result<std::unique_ptr<outbox::Store>> open_store(const std::string& text) {
  auto url = Url::parse(text);
  if (!url) return unexpected(url.error());
  const std::string table = url->param("table", outbox::kDefaultTable);
  if (url->scheme == "sqlite") {
    if (url->host.empty() && url->path.empty()) {
      return unexpected(Errc::invalid_argument,
                        "a sqlite:// store names a file: sqlite:///abs/app.db, sqlite://app.db");
    }
    // sqlite:///abs/app.db (no host) or sqlite://rel/app.db (host = first segment).
    const std::string path =
        url->host.empty() ? "/" + url->path : (url->path.empty() ? url->host : url->host + "/" + url->path);
    auto store = outbox::SqliteStore::open(path, table);
    if (!store) return unexpected(store.error());
    return std::unique_ptr<outbox::Store>(std::move(*store));
  }
#if defined(BQ_CLI_POSTGRES_OUTBOX)
  if (url->scheme == "postgresql" || url->scheme == "postgres") {
    auto options = postgres::OutboxStore::options_from_url(*url);
    if (!options) return unexpected(options.error());
    auto store = postgres::OutboxStore::open(std::move(*options));
    if (!store) return unexpected(store.error());
    return std::unique_ptr<outbox::Store>(std::move(*store));
  }
  constexpr const char* kSchemes = "sqlite, postgresql";
#else
  constexpr const char* kSchemes = "sqlite";
#endif
  return unexpected(Errc::unsupported,
                    "no outbox store for the scheme '" + url->scheme + "' (this build has: " + kSchemes + ")");
}

int run_relay(const GlobalOptions& global, const RelayArgs& args) {
  auto store = open_store(args.store);
  if (!store) return fail("outbox relay: --store " + redact_url(args.store) + ": " + store.error().message());
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  outbox::RelayOptions options;
  options.batch_size = args.batch;
  options.idle_wait = seconds(args.idle_wait);
  options.lease = seconds(args.lease);
  outbox::Relay relay(*transport, **store, options);

  std::atomic<bool> stop{false};
  std::atomic<std::size_t> published{0};
  std::atomic<std::size_t> failed{0};
  SignalWatcher signals([&](int signal, int count) {
    if (signal != 0 && count == 1) {
      Console::instance().line("babelqueue: " + signal_name(signal) + ": finishing the batch in flight");
    }
    stop = true;
  });
  Progress progress(StdoutUse::at_the_end, [&] {
    return "outbox relay: " + std::to_string(published.load()) + " published, " + std::to_string(failed.load()) +
           " failed";
  });
  int status = kExitOk;
  auto on_pass = [&](const outbox::RelayResult& pass, const ErrorInfo* error) {
    published += pass.published;
    failed += pass.failed;
    if (error != nullptr) Console::instance().line("babelqueue: outbox relay: " + error->message());
  };
  if (args.drain) {
    // Passes until nothing is pending and due, or a signal.
    while (!stop.load()) {
      auto pass = relay.flush();
      if (!pass) {
        Console::instance().line("babelqueue: outbox relay: " + pass.error().message());
        status = kExitFailure;
        break;
      }
      on_pass(*pass, nullptr);
      if (pass->published == 0) break;
    }
  } else {
    (void)relay.run(stop, on_pass);
  }
  progress.finish();
  transport->close();
  if (args.json) {
    print_json_line(Value::object({{"published", static_cast<std::uint64_t>(published.load())},
                                   {"failed", static_cast<std::uint64_t>(failed.load())}}));
  } else {
    std::cout << "outbox relay: " << published.load() << " published, " << failed.load() << " failed\n";
  }
  return status;
}

}  // namespace

void add_outbox_command(CLI::App& app, Action& action, const GlobalOptions& global) {
  CLI::App* outbox = app.add_subcommand("outbox", "Relay a transactional outbox to the broker");
  outbox->require_subcommand(1);
  auto args = std::make_shared<RelayArgs>();
  CLI::App* relay = outbox->add_subcommand(
      "relay", "Publish the outbox's pending rows to the broker of --url, verbatim (until stopped, or --drain)");
  relay
      ->add_option("--store", args->store,
                   "The outbox: sqlite:///path/app.db or postgresql://user:password@host/db, [?table=NAME]")
      ->required()
      ->type_name("URL");
  relay->add_flag("--drain", args->drain, "Stop once nothing is pending (rows waiting for a retry stay)");
  relay->add_option("--batch", args->batch, "Rows claimed per pass")->capture_default_str()->check(whole_number(1));
  relay->add_option("--idle-wait", args->idle_wait, "Seconds to wait for new rows after an empty pass")
      ->capture_default_str()
      ->check(seconds_value(true));
  relay
      ->add_option("--lease", args->lease,
                   "Seconds claimed rows stay this relay's; a relay that dies leaves them to others after it")
      ->capture_default_str()
      ->check(seconds_value(true));
  relay->add_flag("--json", args->json, "Print the summary as one JSON line");
  relay->callback([&action, &global, args] { action = [&global, args] { return run_relay(global, *args); }; });
}

}  // namespace babelqueue::cli
