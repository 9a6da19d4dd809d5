// SPDX-License-Identifier: Apache-2.0
// redrive: looks into a dead-letter queue, then moves the fixable messages
// back to where they failed.
//
//   redrive [URL] [--dlq NAME] [--urn URN] [--bypass] [--dry-run]
//
// URL defaults to sqlite://babelqueue-demo.db and the dead-letter queue to
// orders.dlq. The usual sequence after a bug was fixed:
//   1. a dry run lists every message with its reason and target, and changes
//      nothing (every message is put back);
//   2. the real run republishes only the selected messages (here: those whose
//      URN is --urn, OrderCreated by default) with attempts reset to 0 and the
//      dead_letter block removed, and removes each from the dead-letter queue
//      only after its republish succeeded. Poison stays where it is: it cannot
//      be decoded, so there is nothing to select or fix.
// With --bypass the replayed messages carry the bq-replay-bypass header, so
// handlers can skip side effects that already happened (Message::is_replay).
// --dry-run stops after step 1.
#include "order_created.hpp"

#include <babelqueue/redrive.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url.hpp>

#include <cstdio>
#include <string>
#include <string_view>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

struct Args {
  std::string url = "sqlite://babelqueue-demo.db";
  std::string dlq = "orders.dlq";
  std::string urn = std::string(shop::OrderCreated::urn);
  bool bypass = false;
  bool dry_run_only = false;
};

bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--dlq" && has_value) {
      args.dlq = argv[++i];
    } else if (arg == "--urn" && has_value) {
      args.urn = argv[++i];
    } else if (arg == "--bypass") {
      args.bypass = true;
    } else if (arg == "--dry-run") {
      args.dry_run_only = true;
    } else if (!arg.starts_with("-")) {
      args.url = arg;
    } else {
      return false;
    }
  }
  return true;
}

void print(const char* title, const bq::RedriveResult& result) {
  std::printf("%s: %zu redriven, %zu left in the dead-letter queue\n", title, result.redriven, result.skipped);
  for (const bq::RedriveItem& item : result.items) {
    std::string line = "  " + (item.message_id.empty() ? std::string("(no meta.id)") : item.message_id);
    line += "  " + (item.urn.empty() ? std::string("-") : item.urn);
    if (!item.reason.empty()) line += "  reason " + item.reason;
    if (item.redriven) {
      line += "  -> " + item.to + (item.bypassed ? " (replay bypass)" : "");
    } else {
      line += "  stays: " + item.note + (item.to.empty() ? "" : " (target " + item.to + ")");
    }
    std::printf("%s\n", line.c_str());
  }
  if (result.error) {
    // A publish failed midway: that message and every later one were put
    // back, so running the same command again continues where this stopped.
    std::printf("  stopped early: %s\n", result.error->message().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr, "usage: redrive [URL] [--dlq NAME] [--urn URN] [--bypass] [--dry-run]\n");
    return 2;
  }
  bq::sqlite::register_transport();
  const auto parsed = bq::Url::parse(args.url);
  const std::string shown = parsed ? parsed->redacted() : args.url;  // no passwords in the output
  auto transport = bq::open_transport(args.url);
  if (!transport) {
    std::fprintf(stderr, "redrive: cannot open %s: %s\n", shown.c_str(), transport.error().message().c_str());
    return 1;
  }

  // 1. Look first: a dry run takes every message, reports it, puts it back.
  bq::RedriveOptions look;
  look.dry_run = true;
  look.wait = 200ms;  // how long to wait for the first message of an empty queue
  auto planned = bq::redrive(**transport, args.dlq, look);
  if (!planned) {
    std::fprintf(stderr, "redrive: cannot read %s: %s\n", args.dlq.c_str(), planned.error().message().c_str());
    return 1;
  }
  print(("dry run of " + args.dlq + " on " + shown).c_str(), *planned);
  if (args.dry_run_only) return 0;

  // 2. Redrive what the fix covers: only messages of one URN.
  bq::RedriveOptions real;
  real.wait = 200ms;
  real.bypass = args.bypass;
  real.select = [&](const bq::Envelope& envelope) { return envelope.urn() == args.urn; };
  // The four-argument form fills progress even when the run stops midway,
  // so what was done before the failure can still be reported.
  bq::RedriveResult progress;
  auto done = bq::redrive(**transport, args.dlq, real, progress);
  if (!done && progress.items.empty()) {
    std::fprintf(stderr, "redrive: cannot read %s: %s\n", args.dlq.c_str(), done.error().message().c_str());
    return 1;
  }
  print(("redrive of " + args.urn).c_str(), progress);
  return done ? 0 : 1;
}
