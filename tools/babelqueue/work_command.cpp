// SPDX-License-Identifier: Apache-2.0
// work: a Worker that hands each message to a command — any program becomes a
// BabelQueue consumer.
#include "child_process.hpp"
#include "commands.hpp"
#include "option_checks.hpp"
#include "support.hpp"

#include <babelqueue/json.hpp>
#include <babelqueue/worker.hpp>

#if defined(BQ_CLI_IDEMPOTENCY)
#include <babelqueue/idempotency/middleware.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#endif
#if defined(BQ_CLI_OTEL)
#include "tracing.hpp"
#endif
#if defined(BQ_CLI_METRICS)
#include <babelqueue/metrics/middleware.hpp>
#include <babelqueue/metrics/server.hpp>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <mutex>

extern char** environ;  // NOLINT: POSIX

namespace babelqueue::cli {

namespace {

struct WorkArgs {
  std::string queue;
  std::vector<std::string> command;
  std::vector<std::string> urns;
  std::int64_t max_attempts = 3;
  bool dead_letter = false;
  std::string dlq;
  std::string unknown_urn = "fail";
  std::size_t concurrency = 1;
  std::size_t prefetch = 0;
  std::size_t prefetch_bytes = WorkerOptions{}.prefetch_bytes;
  std::size_t max_messages = 0;
  double idle_exit = 0;
  double unreachable_exit = 0;
  std::int64_t backoff_initial_ms = 1000;
  std::int64_t backoff_max_ms = 300000;
  double backoff_multiplier = 2.0;
  double shutdown_deadline = 30;
  double kill_grace = 10;
  // --idempotency: the store's URL (empty = off), the claim and its lease.
  std::string idempotency;
  bool no_claim = false;
  bool pass_credentials = false;
  double claim_lease = 30;
  // --metrics: where /metrics is served (empty = not served).
  std::string metrics;
  // Whether the optional ones were given.
  bool idle_exit_given = false;
  bool unreachable_exit_given = false;
  bool backoff_given = false;
};

// The variables the command gets on top of the worker's own environment.
constexpr const char* kMessageVariables[] = {"BQ_URN",   "BQ_TRACE_ID", "BQ_MESSAGE_ID", "BQ_ATTEMPTS",
                                             "BQ_QUEUE", "BQ_HEADERS",  "TRACEPARENT",   "TRACESTATE"};

// The SDK's own credentials: the broker URL (its password) and the AWS keys
// the SQS transport reads. Not handed to commands unless asked
// (--pass-credentials): a command is given the message, not the broker.
constexpr const char* kCredentialVariables[] = {"BABELQUEUE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                                "AWS_SESSION_TOKEN"};

bool names(std::string_view entry, std::string_view name) {
  return entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=';
}

std::vector<std::string> inherited_environment(bool pass_credentials) {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const auto any_of = [&](const auto& list) {
      return std::any_of(std::begin(list), std::end(list), [&](const char* name) { return names(text, name); });
    };
    if (any_of(kMessageVariables)) continue;
    if (!pass_credentials && any_of(kCredentialVariables)) continue;
    out.emplace_back(text);
  }
  return out;
}

// Exit statuses of a command with a meaning of their own (sysexits.h).
constexpr int kExitDataError = 65;         // EX_DATAERR
constexpr int kExitTemporaryFailure = 75;  // EX_TEMPFAIL

// "command exited with status 3: <the last lines of its standard error>".
std::string describe_failure(const ChildOutcome& outcome) {
  std::string text = outcome.exited ? "command exited with status " + std::to_string(outcome.exit_status)
                                    : "command was killed by " + signal_name(outcome.term_signal);
  std::string_view tail = outcome.stderr_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.remove_suffix(1);
  // The last five lines, at most 1000 bytes.
  std::size_t start = tail.size();
  for (int lines = 0; lines < 5 && start > 0; ++lines) {
    const std::size_t newline = tail.rfind('\n', start - 1);
    start = newline == std::string_view::npos ? 0 : newline;
  }
  tail = tail.substr(start);
  while (!tail.empty() && tail.front() == '\n') tail.remove_prefix(1);
  if (tail.size() > 1000) tail = tail.substr(tail.size() - 1000);
  if (!tail.empty()) text += ": " + std::string(tail);
  return sanitize_utf8(text);
}

std::string summary_line(const std::string& queue, const WorkerMetricsSnapshot& m, std::size_t processed,
                         std::string_view why) {
  return "babelqueue: work " + queue + " " + std::string(why) + ": processed " + std::to_string(processed) +
         ", succeeded " + std::to_string(m.succeeded) + ", failed " + std::to_string(m.failed) + ", retried " +
         std::to_string(m.retried) + ", dead-lettered " + std::to_string(m.dead_lettered) + ", poison " +
         std::to_string(m.poison) + ", dropped " + std::to_string(m.dropped);
}

// The out-of-band headers as a JSON object ({} when there are none).
std::string headers_json(const Headers& headers) {
  auto text = to_json(headers_object(headers));
  return text ? *text : std::string("{}");
}

LogSink console_log_sink() {
  return [](LogLevel level, std::string_view message) {
    if (level < LogLevel::warning) return;
    Console::instance().line("babelqueue " + std::string(to_string(level)) + ": " + std::string(message));
  };
}

int run_work(const GlobalOptions& global, const WorkArgs& args) {
  if (!executable_exists(args.command.front())) {
    fail("work: cannot find the command '" + args.command.front() + "' (not an executable file, nor in PATH)");
    return kExitUsage;
  }
  // A command that exits without reading its input must not kill the worker
  // (EPIPE instead); commands get the default action back (child_process.cpp).
  std::signal(SIGPIPE, SIG_IGN);
  // An ignored SIGCHLD (inherited from whoever started us) would reap the
  // commands behind our back and hide their exit status.
  std::signal(SIGCHLD, SIG_DFL);

  // Before any other thread exists, so that every thread inherits the
  // blocked signals and only the watcher sees them.
  std::mutex worker_mutex;
  Worker* running = nullptr;
  // A stop: the commands running then may finish until the shutdown
  // deadline; then their process groups get SIGTERM, and SIGKILL after the
  // grace. A command ended that way has its message handed back unchanged.
  std::atomic<bool> commands_stopped{false};
  std::chrono::steady_clock::time_point stop_began;
  int stop_stage = 0;  // 1: finishing, 2: SIGTERM sent, 3: SIGKILL sent (the watcher thread only)
  const auto deadline = seconds(args.shutdown_deadline);
  const auto grace = seconds(args.kill_grace);
  auto escalate = [&](int to_stage, std::string_view why) {
    if (stop_stage >= to_stage) return;
    stop_stage = to_stage;
    commands_stopped = true;
    Console::instance().line("babelqueue: " + std::string(why) + ": " + (to_stage == 2 ? "SIGTERM to" : "SIGKILL to") +
                             " the running commands");
    signal_running_children(to_stage == 2 ? SIGTERM : SIGKILL);
  };
  SignalWatcher signals([&](int signal, int count) {
    if (count == 1 && signal != 0) {
      stop_began = std::chrono::steady_clock::now();
      stop_stage = 1;
      Console::instance().line("babelqueue: " + signal_name(signal) +
                               ": finishing the messages in flight (again to terminate their commands)");
    } else if (signal != 0) {
      escalate(count == 2 ? 2 : 3, signal_name(signal));
    } else {
      const auto since = std::chrono::steady_clock::now() - stop_began;
      if (since >= deadline) escalate(2, "shutdown deadline");
      if (since >= deadline + grace) escalate(3, "kill grace over");
    }
    std::lock_guard lock(worker_mutex);
    if (running != nullptr) running->stop();
  });

  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  const std::string queue = queue_name(*transport, args.queue);

  WorkerOptions options;
  options.default_queue = queue;
  options.max_attempts = args.max_attempts;
  options.unknown_urn = *unknown_urn_strategy_from_string(args.unknown_urn);
  options.dead_letter = args.dead_letter || !args.dlq.empty();
  // Empty: the transport's name for QUEUE's dead-letter queue.
  options.dead_letter_queue = args.dlq.empty() ? std::string() : queue_name(*transport, args.dlq);
  options.concurrency = args.concurrency;
  options.prefetch = args.prefetch;
  options.prefetch_bytes = args.prefetch_bytes;
  // The worker's own deadline comes after the commands' SIGKILL: a message
  // is never released while its command may still run.
  options.shutdown_deadline = deadline + grace + std::chrono::seconds(2);
  if (args.backoff_given) {
    BackoffPolicy backoff;
    backoff.initial = std::chrono::milliseconds(args.backoff_initial_ms);
    backoff.max = std::chrono::milliseconds(args.backoff_max_ms);
    backoff.multiplier = args.backoff_multiplier;
    options.retry_backoff = backoff;
  }
  RunLimits limits;
  limits.max_messages = args.max_messages;
  if (args.idle_exit_given) {
    limits.idle_exit = seconds(args.idle_exit);
    // Look often enough for the idle time to be kept to within a fraction.
    options.poll_timeout = std::clamp(*limits.idle_exit / 2, std::chrono::milliseconds(50), options.poll_timeout);
  }
  if (args.unreachable_exit_given) limits.unreachable_exit = seconds(args.unreachable_exit);
  options.log = console_log_sink();
#if defined(BQ_CLI_OTEL)
  // First, so that its span covers the rest (docs/adr/0018).
  Tracing tracing;
  if (tracing.enabled()) options.middleware.push_back(tracing.middleware());
#endif
#if defined(BQ_CLI_METRICS)
  std::unique_ptr<metrics::MetricsServer> metrics_server;
  if (!args.metrics.empty()) {
    auto counting = std::make_shared<metrics::Middleware>();
    try {
      metrics_server = std::make_unique<metrics::MetricsServer>(args.metrics, counting->registry());
    } catch (const Error& e) {
      return fail("work: " + std::string(e.what()));
    }
    const std::string host = args.metrics.substr(0, args.metrics.rfind(':'));
    Console::instance().line("babelqueue: metrics on http://" + host + ":" + std::to_string(metrics_server->port()) +
                             "/metrics");
    options.middleware.push_back(std::move(counting));
  }
#endif
#if defined(BQ_CLI_IDEMPOTENCY)
  if (!args.idempotency.empty()) {
    auto store = idempotency::open_store(args.idempotency);
    if (!store) {
      fail("work: cannot open the idempotency store " + redact_url(args.idempotency) + ": " + store.error().message());
      return kExitFailure;
    }
    idempotency::Options guard;
    guard.claim = !args.no_claim;
    guard.claim_lease = std::max(std::chrono::milliseconds(3), seconds(args.claim_lease));
    guard.log = console_log_sink();
    options.middleware.push_back(std::make_shared<idempotency::Middleware>(std::move(*store), guard));
  }
#endif

  Worker worker(std::move(transport), std::move(options));
  const std::vector<std::string> base_environment = inherited_environment(args.pass_credentials);
  auto handler = [&](const Message& message) -> Result<void> {
    ChildSpec spec;
    spec.argv = args.command;
    spec.environment = base_environment;
    spec.environment.push_back("BQ_URN=" + std::string(message.urn()));
    spec.environment.push_back("BQ_TRACE_ID=" + std::string(message.trace_id()));
    spec.environment.push_back("BQ_MESSAGE_ID=" + std::string(message.id()));
    spec.environment.push_back("BQ_ATTEMPTS=" + std::to_string(message.attempts()));
    spec.environment.push_back("BQ_QUEUE=" + std::string(message.queue()));
    spec.environment.push_back("BQ_HEADERS=" + headers_json(message.headers()));
#if defined(BQ_CLI_OTEL)
    // The consumer span, for a command that traces too (the W3C names for
    // trace context in the environment).
    if (const auto span = otel::current_span_context()) {
      spec.environment.push_back("TRACEPARENT=" + otel::format_traceparent(*span));
      if (!span->trace_state.empty()) spec.environment.push_back("TRACESTATE=" + span->trace_state);
    }
#endif
    spec.input = message.envelope().body();
    auto outcome = run_child(spec);
    if (!outcome) return unexpected(outcome.error());
    if (outcome->succeeded()) return {};
    // Ended by the worker's stop, not by its own failure: handed back as it
    // came (attempts unchanged), for the next worker.
    if (commands_stopped.load()) throw ReleaseDelivery({}, describe_failure(*outcome) + " (the worker is stopping)");
    // The sysexits convention: EX_DATAERR (65) says the message itself is
    // bad (dead-letter it now), EX_TEMPFAIL (75) asks for a retry after the
    // backoff; any other failure is a plain failure (retried up to
    // --max-attempts).
    if (outcome->exited && outcome->exit_status == kExitDataError) {
      throw OutcomeException(HandlerOutcome::dead_letter(describe_failure(*outcome)));
    }
    if (outcome->exited && outcome->exit_status == kExitTemporaryFailure) {
      throw OutcomeException(HandlerOutcome::retry({}, describe_failure(*outcome)));
    }
    return unexpected(Errc::io, describe_failure(*outcome));
  };
  if (args.urns.empty()) {
    worker.handle_any(handler);
  } else {
    for (const std::string& urn : args.urns) worker.handle(urn, handler);
  }

  Progress progress(StdoutUse::while_running, [&] {
    const WorkerMetricsSnapshot m = worker.metrics().snapshot();
    return "work " + queue + ": " + std::to_string(m.received) + " received, " + std::to_string(m.succeeded) +
           " succeeded, " + std::to_string(m.failed) + " failed, " + std::to_string(m.retried) + " retried, " +
           std::to_string(m.dead_lettered) + " dead-lettered";
  });
  {
    std::lock_guard lock(worker_mutex);
    running = &worker;
  }
  auto summary = worker.run({queue}, limits);
  {
    std::lock_guard lock(worker_mutex);
    running = nullptr;
  }
  const WorkerMetricsSnapshot metrics = worker.metrics().snapshot();
  if (!summary) {
    Console::instance().line(summary_line(queue, metrics, metrics.received, "failed"));
    return fail("work " + queue + ": the worker stopped: " + summary.error().message());
  }
  const std::string_view why = summary->reason == RunSummary::Reason::idle           ? "stopped (idle)"
                               : summary->reason == RunSummary::Reason::max_messages ? "stopped (max messages)"
                                                                                     : "stopped";
  Console::instance().line(summary_line(queue, metrics, summary->processed, why));
  return kExitOk;
}

}  // namespace

void add_work_command(CLI::App& app, Action& action, const GlobalOptions& global) {
  auto args = std::make_shared<WorkArgs>();
  CLI::App* work = app.add_subcommand(
      "work", "Consume QUEUE, running CMD once per message (the body on its stdin; exit 0 = success)");
  work->add_option("QUEUE", args->queue, "The queue to consume")->required();
  work->add_option("CMD", args->command, "The command and its arguments, after --")->required();
  work->add_option("--urn", args->urns,
                   "Route only this URN to CMD (repeatable); others follow --unknown-urn. Default: every URN")
      ->allow_extra_args(false)
      ->type_name("URN");
  work->add_option("--max-attempts", args->max_attempts, "Deliveries of a failing message before it is given up")
      ->check(whole_number(1))
      ->capture_default_str()
      ->type_name("N");
  work->add_flag("--dead-letter", args->dead_letter, "Send given-up and poison messages to the dead-letter queue");
  work->add_option("--dlq", args->dlq,
                   "The dead-letter queue (implies --dead-letter; default: the transport's name for QUEUE's, QUEUE.dlq "
                   "or on SQS QUEUE-dlq)")
      ->type_name("NAME");
  work->add_option("--unknown-urn", args->unknown_urn, "What happens to a URN not routed by --urn")
      ->check(CLI::IsMember({"fail", "delete", "release", "dead_letter"}))
      ->capture_default_str();
  work->add_option("--concurrency", args->concurrency, "Commands run at once")
      ->check(whole_number(1))
      ->capture_default_str()
      ->type_name("N");
  work->add_option("--prefetch", args->prefetch,
                   "Messages received ahead of the commands (0 = automatic: max(concurrency, 16), more where the "
                   "transport asks for it; docs/runtime.md)")
      ->check(whole_number(0, 1000000))
      ->capture_default_str()
      ->type_name("N");
  work->add_option("--prefetch-bytes", args->prefetch_bytes,
                   "Bytes of message bodies received ahead of the commands (0 = no byte bound)")
      ->check(whole_number(0))
      ->capture_default_str()
      ->type_name("BYTES");
  work->add_option("--max-messages", args->max_messages, "Stop after receiving N messages (0 = no limit)")
      ->check(whole_number(0))
      ->type_name("N");
  CLI::Option* idle =
      work->add_option("--idle-exit", args->idle_exit,
                       "Stop once nothing arrived for this long and none is in flight (exit 1 with the error when "
                       "the receives of that time failed)")
          ->check(seconds_value())
          ->type_name("SECONDS");
  CLI::Option* unreachable =
      work->add_option(
              "--unreachable-exit", args->unreachable_exit,
              "Exit 1 with the last error once no receive has succeeded for this long (default: retry for ever)")
          ->check(seconds_value())
          ->type_name("SECONDS");
  CLI::Option* initial =
      work->add_option("--backoff-initial", args->backoff_initial_ms, "Delay retries: the first retry's delay")
          ->check(whole_number(0))
          ->type_name("MS");
  CLI::Option* max = work->add_option("--backoff-max", args->backoff_max_ms, "Delay retries: the longest delay")
                         ->check(whole_number(0))
                         ->type_name("MS");
  CLI::Option* multiplier =
      work->add_option("--backoff-multiplier", args->backoff_multiplier, "Delay retries: growth per retry")
          ->check(number_between(1.0, 1000.0))
          ->type_name("X");
#if defined(BQ_CLI_METRICS)
  work->add_option("--metrics", args->metrics,
                   "Serve Prometheus metrics on http://ADDRESS/metrics while working (e.g. 127.0.0.1:9464; port 0 "
                   "takes a free one, printed at start)")
      ->type_name("ADDRESS");
#endif
  work->add_option("--shutdown-deadline", args->shutdown_deadline,
                   "On SIGTERM/SIGINT, how long running commands may finish before they get SIGTERM and their "
                   "messages are handed back")
      ->check(seconds_value())
      ->capture_default_str()
      ->type_name("SECONDS");
  work->add_option("--kill-grace", args->kill_grace,
                   "After --shutdown-deadline's SIGTERM, how long a command may take to exit before SIGKILL")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->type_name("SECONDS");
  work->add_flag("--pass-credentials", args->pass_credentials,
                 "Hand CMD the SDK's credentials too (BABELQUEUE_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                 "AWS_SESSION_TOKEN), which it does not get by default");
#if defined(BQ_CLI_IDEMPOTENCY)
  work->add_option("--idempotency", args->idempotency,
                   "Run each meta.id once: remember handled ids in this store (memory://, sqlite://FILE, redis://...) "
                   "and ack their redeliveries without running CMD")
      ->type_name("STORE_URL");
  work->add_option("--claim-lease", args->claim_lease,
                   "With --idempotency: how long an id's in-flight claim lasts unless renewed (a crashed worker's "
                   "messages wait this long)")
      ->check(seconds_value(true))
      ->capture_default_str()
      ->type_name("SECONDS");
  work->add_flag("--no-claim", args->no_claim,
                 "With --idempotency: no in-flight claim, only the family's post-success seen-set");
#endif
  work->callback([&action, &global, args, idle, unreachable, initial, max, multiplier] {
    args->idle_exit_given = idle->count() > 0;
    args->unreachable_exit_given = unreachable->count() > 0;
    args->backoff_given = initial->count() + max->count() + multiplier->count() > 0;
    action = [&global, args] { return run_work(global, *args); };
  });
}

}  // namespace babelqueue::cli
