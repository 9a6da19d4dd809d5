// SPDX-License-Identifier: Apache-2.0
// worker: consumes orders with a Worker, the SDK's runtime.
//
//   worker [URL] [--queue NAME] [--idle-exit SECONDS] [--max-attempts N] [--concurrency N]
//
// URL defaults to sqlite://babelqueue-demo.db (see producer.cpp). What it
// shows:
//   - a typed handler: OrderCreated arrives as a struct, not as JSON;
//   - a handler that throws fails the message: it is republished with
//     attempts+1 and handled again, up to --max-attempts deliveries in all,
//     then moved to the dead-letter queue ORDERS.dlq with the error;
//   - poison (a body that is not an envelope) never reaches a handler and is
//     dead-lettered at once, byte for byte;
//   - hooks that report each of those events;
//   - a clean stop on SIGINT/SIGTERM, or by itself once the queue stayed
//     empty for --idle-exit seconds (0: only on a signal);
//   - the worker's metrics as a final summary.
#include "order_created.hpp"

#include <babelqueue/message.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/stop_on_signals.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/worker.hpp>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

struct Args {
  std::string url = "sqlite://babelqueue-demo.db";
  std::string queue = "orders";
  double idle_exit_seconds = 3;
  std::int64_t max_attempts = 3;
  std::size_t concurrency = 1;
};

bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--queue" && has_value) {
      args.queue = argv[++i];
    } else if (arg == "--idle-exit" && has_value) {
      args.idle_exit_seconds = std::atof(argv[++i]);
    } else if (arg == "--max-attempts" && has_value) {
      args.max_attempts = std::atoll(argv[++i]);
    } else if (arg == "--concurrency" && has_value) {
      args.concurrency = static_cast<std::size_t>(std::atoll(argv[++i]));
    } else if (!arg.starts_with("-")) {
      args.url = arg;
    } else {
      return false;
    }
  }
  return args.max_attempts >= 1 && args.concurrency >= 1 && args.idle_exit_seconds >= 0;
}

// Handlers and hooks run on the worker's threads: one lock keeps lines whole,
// and the flush keeps them in order when stdout is a pipe.
std::mutex print_mutex;
[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  std::lock_guard lock(print_mutex);
  std::va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::fflush(stdout);
}

std::string preview(std::string_view bytes) {
  return bytes.size() <= 40 ? std::string(bytes) : std::string(bytes.substr(0, 37)) + "...";
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: worker [URL] [--queue NAME] [--idle-exit SECONDS] [--max-attempts N>=1] "
                 "[--concurrency N>=1]\n");
    return 2;
  }

  bq::sqlite::register_transport();
  const auto parsed = bq::Url::parse(args.url);
  const std::string shown = parsed ? parsed->redacted() : args.url;  // no passwords in the output
  auto transport = bq::open_transport(args.url);
  if (!transport) {
    std::fprintf(stderr, "worker: cannot open %s: %s\n", shown.c_str(), transport.error().message().c_str());
    return 1;
  }

  bq::WorkerOptions options;
  options.default_queue = args.queue;
  options.max_attempts = args.max_attempts;
  options.dead_letter = true;  // off by default in the family: failures are then dropped after the last attempt
  options.concurrency = args.concurrency;
  options.poll_timeout = 500ms;
  options.hooks.on_error = [](const bq::ErrorEvent& e) {
    say("worker: message %.*s failed on attempt %lld: %.*s -> %s\n", static_cast<int>(e.envelope->id().size()),
        e.envelope->id().data(), static_cast<long long>(e.envelope->attempts() + 1), static_cast<int>(e.error.size()),
        e.error.data(), e.will_retry ? "republished for a retry" : "no attempts left");
  };
  options.hooks.on_dead_letter = [](const bq::DeadLetterEvent& e) {
    say("worker: dead-lettered to %.*s (reason %s, after %lld attempt(s))\n",
        static_cast<int>(e.dead_letter_queue.size()), e.dead_letter_queue.data(), e.block->reason.c_str(),
        static_cast<long long>(e.block->attempts));
  };
  options.hooks.on_poison = [](const bq::PoisonEvent& e) {
    say("worker: poison on %.*s (%.*s): \"%s\" never reaches a handler; %s\n", static_cast<int>(e.queue.size()),
        e.queue.data(), static_cast<int>(bq::to_string(e.reason).size()), bq::to_string(e.reason).data(),
        preview(e.body).c_str(), e.dead_lettered ? "its bytes are kept in the dead-letter queue" : "dropped");
  };

  // The worker owns the transport and closes it when it is destroyed.
  bq::Worker worker(std::move(*transport), options);

  worker.handle<shop::OrderCreated>([](const shop::OrderCreated& order, const bq::Message& message) {
    // attempts() counts the earlier failed deliveries of this message: 0 on
    // the first one. Throwing any exception fails the message; its what()
    // and type name are recorded if it ends in the dead-letter queue.
    if (!message.header(shop::kFailOnceHeader).empty() && message.attempts() == 0) {
      throw std::runtime_error("payment gateway timeout (simulated)");
    }
    say("worker: order %lld: charged %s to %s (attempt %lld)\n", static_cast<long long>(order.order_id),
        order.amount().c_str(), order.customer.c_str(), static_cast<long long>(message.attempts() + 1));
  });

  bq::RunLimits limits;
  if (args.idle_exit_seconds > 0) {
    limits.idle_exit = std::chrono::milliseconds(static_cast<std::int64_t>(args.idle_exit_seconds * 1000));
  }
  say("worker: consuming %s on %s (max %lld attempts, dead-lettering to %s)\n", args.queue.c_str(), shown.c_str(),
      static_cast<long long>(args.max_attempts), worker.transport().dead_letter_queue(args.queue).c_str());

  bq::Result<bq::RunSummary> run = [&] {
    // Worker::stop() takes a lock, so it must not be called from a signal
    // handler: StopOnSignals installs handlers that only wake a thread of
    // its own, which calls stop() as ordinary code.
    bq::StopOnSignals stopper(worker);  // SIGINT, SIGTERM
    auto result = worker.run({args.queue}, limits);
    if (stopper.received() != 0) say("worker: stopped by signal %d\n", stopper.received());
    return result;
  }();
  if (!run) {
    // Only errors retrying cannot fix end a run (refused credentials, ...).
    std::fprintf(stderr, "worker: %s\n", run.error().message().c_str());
    return 1;
  }

  const bq::WorkerMetricsSnapshot m = worker.metrics().snapshot();
  say("worker: %s after %zu deliveries\n", run->reason == bq::RunSummary::Reason::idle ? "idle" : "stopped",
      run->processed);
  say("summary: received %llu, succeeded %llu, failed %llu, retried %llu, dead-lettered %llu (poison %llu), "
      "dropped %llu\n",
      static_cast<unsigned long long>(m.received), static_cast<unsigned long long>(m.succeeded),
      static_cast<unsigned long long>(m.failed), static_cast<unsigned long long>(m.retried),
      static_cast<unsigned long long>(m.dead_lettered), static_cast<unsigned long long>(m.poison),
      static_cast<unsigned long long>(m.dropped));
  return 0;
}
