// SPDX-License-Identifier: Apache-2.0
// publish, send, drain, stats and redrive: moving messages in and out of a
// broker from a shell.
#include "commands.hpp"
#include "support.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/redrive.hpp>
#include <babelqueue/transport.hpp>

#if defined(BQ_CLI_OTEL)
#include "tracing.hpp"

#include <babelqueue/binding.hpp>
#endif

#include <atomic>
#include <iostream>
#include <memory>

namespace babelqueue::cli {

namespace {

constexpr std::size_t kPublishChunk = 500;

// Publishes messages in batches of kPublishChunk; stops at the first failure.
Result<void> publish_chunked(Transport& transport, const std::vector<OutgoingMessage>& messages) {
  for (std::size_t first = 0; first < messages.size(); first += kPublishChunk) {
    const std::size_t count = std::min(kPublishChunk, messages.size() - first);
    if (auto r = transport.publish_batch(std::span<const OutgoingMessage>(messages.data() + first, count)); !r) {
      return unexpected(ErrorInfo(
          r.error().code(), "publishing failed after " + std::to_string(first) + " messages: " + r.error().message()));
    }
  }
  return {};
}

// ---- publish ------------------------------------------------------------------------

struct PublishArgs {
  std::string queue;
  std::string urn;
  std::string data_json;
  std::string trace_id;
  std::vector<std::string> headers;
  std::int64_t delay_ms = 0;
  std::size_t count = 1;
};

int run_publish(const GlobalOptions& global, const PublishArgs& args) {
  auto data = parse_json(args.data_json);
  if (!data) return fail("DATA_JSON is not JSON: " + data.error().message());
  MakeOptions make;
  make.queue = args.queue;
  make.trace_id = args.trace_id;
  // One envelope is built before the broker is touched, so bad input
  // (a blank URN, data that is not an object) publishes nothing.
  if (auto probe = Envelope::make(args.urn, *data, make); !probe) return fail(probe.error().message());
  PublishOptions options;
  options.headers = parse_headers(args.headers);
  options.delay = std::chrono::milliseconds(args.delay_ms);
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  std::atomic<std::size_t> published{0};
  Progress progress([&] {
    return "publish " + args.queue + ": " + std::to_string(published.load()) + "/" + std::to_string(args.count);
  });
#if defined(BQ_CLI_OTEL)
  // Traced: one message at a time through the tracing middleware, so that
  // each span covers its own send and its traceparent goes with it.
  Tracing tracing;
  if (tracing.enabled()) {
    const PublishStep send = MiddlewareChain({tracing.middleware()}).compose_publish([&](PublishRequest& request) {
      const auto fields = binding::ContractFields::of(request.envelope);
      request.options.contract = &fields;
      auto sent = transport->publish(request.queue, request.envelope.body(), request.options);
      request.options.contract = nullptr;
      return sent;
    });
    for (std::size_t i = 0; i < args.count; ++i) {
      auto env = Envelope::make(args.urn, *data, make);
      if (!env) return fail(env.error().message());
      PublishRequest request{args.queue, std::move(*env), &*data, options};
      if (auto r = send(request); !r) {
        transport->close();
        return fail("publishing failed after " + std::to_string(i) + " messages: " + r.error().message());
      }
      std::cout << request.envelope.id() << '\n';
      ++published;
    }
    std::cout.flush();
    transport->close();
    return kExitOk;
  }
#endif
  // Made and published a batch at a time, so --count needs little memory.
  std::vector<OutgoingMessage> batch;
  std::vector<std::string> ids;
  for (std::size_t first = 0; first < args.count; first += kPublishChunk) {
    batch.clear();
    ids.clear();
    const std::size_t count = std::min(kPublishChunk, args.count - first);
    for (std::size_t i = 0; i < count; ++i) {
      auto env = Envelope::make(args.urn, *data, make);
      if (!env) return fail(env.error().message());
      ids.emplace_back(env->id());
      batch.push_back(OutgoingMessage{args.queue, std::string(env->body()), options});
    }
    if (auto r = transport->publish_batch(batch); !r) {
      transport->close();
      return fail("publishing failed after " + std::to_string(first) + " messages: " + r.error().message());
    }
    for (const std::string& id : ids) std::cout << id << '\n';
    std::cout.flush();
    published += count;
  }
  transport->close();
  return kExitOk;
}

// ---- send ---------------------------------------------------------------------------

struct SendArgs {
  std::string queue;
  std::vector<std::string> headers;
  bool lines = false;
};

int run_send(const GlobalOptions& global, const SendArgs& args) {
  PublishOptions options;
  options.headers = parse_headers(args.headers);
  std::vector<OutgoingMessage> messages;
  if (args.lines) {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) messages.push_back(OutgoingMessage{args.queue, std::move(line), options});
    }
  } else {
    messages.push_back(OutgoingMessage{args.queue, read_stdin(), options});
  }
  if (messages.empty()) return kExitOk;
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  auto r = publish_chunked(*transport, messages);
  transport->close();
  if (!r) return fail(r.error().message());
  return kExitOk;
}

// ---- drain --------------------------------------------------------------------------

struct DrainArgs {
  std::string queue;
  std::size_t max = 0;
  double wait_seconds = 1.0;
};

int run_drain(const GlobalOptions& global, const DrainArgs& args) {
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  std::atomic<std::size_t> taken{0};
  Progress progress([&] { return "drain " + args.queue + ": " + std::to_string(taken.load()) + " messages"; });
  const auto wait = seconds(args.wait_seconds);
  int status = kExitOk;
  while (args.max == 0 || taken.load() < args.max) {
    const std::size_t want = args.max == 0 ? 64 : std::min<std::size_t>(64, args.max - taken.load());
    auto batch = transport->receive(args.queue, want, wait);
    if (!batch) {
      status = fail("receive from " + args.queue + " failed: " + batch.error().message());
      break;
    }
    if (batch->empty()) break;
    for (const Delivery& d : *batch) {
      // Printed before the ack: a message is never lost, at worst printed twice.
      std::cout << d.body << '\n';
      std::cout.flush();
      if (auto r = transport->ack(d); !r) fail("ack on " + args.queue + " failed: " + r.error().message());
      ++taken;
    }
  }
  transport->close();
  return status;
}

// ---- stats --------------------------------------------------------------------------

int run_stats(const GlobalOptions& global, const std::string& queue) {
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  auto stats = transport->stats(queue);
  transport->close();
  if (!stats) {
    if (stats.error().code() == Errc::unsupported) {
      return fail("this transport cannot count messages (" + stats.error().message() + ")");
    }
    return fail("stats of " + queue + " failed: " + stats.error().message());
  }
  const auto count = [](std::int64_t n) { return n < 0 ? Value() : Value(n); };
  Object out;
  out.set("queue", queue);
  out.set("ready", count(stats->ready));
  out.set("reserved", count(stats->reserved));
  out.set("delayed", count(stats->delayed));
  auto line = to_json(Value(std::move(out)));
  if (!line) return fail(line.error().message());
  std::cout << *line << '\n';
  return kExitOk;
}

// ---- redrive ------------------------------------------------------------------------

struct RedriveArgs {
  std::string dlq;
  std::string to;
  std::size_t max = 0;
  bool dry_run = false;
  bool bypass = false;
  double wait_seconds = 1.0;
};

std::string or_dash(std::string_view text) { return text.empty() ? "-" : std::string(text); }

#if defined(BQ_CLI_OTEL)
std::uint64_t unix_nanos_now() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// One PRODUCER span "redrive <urn>" per message moved, in the message's own
// trace (its trace_id's, under the family's synthetic parent), spanning the
// redrive run that moved it.
void record_redrive_spans(const otel::Tracer& tracer, const std::string& dlq, const RedriveResult& result,
                          std::uint64_t started, std::uint64_t ended) {
  for (const RedriveItem& item : result.items) {
    if (!item.redriven || item.trace_id.empty()) continue;
    otel::SpanStart start;
    start.parent = otel::synthetic_parent(item.trace_id);
    start.start_unix_nano = started;
    otel::Span span = tracer.start_span("redrive " + item.urn, otel::SpanKind::producer, start);
    span.set_attribute("messaging.system", std::string("babelqueue"));
    span.set_attribute("messaging.operation", std::string("publish"));
    span.set_attribute("messaging.destination.name", item.to);
    span.set_attribute("messaging.message.id", item.message_id);
    span.set_attribute("messaging.message.conversation_id", item.trace_id);
    span.set_attribute("messaging.babelqueue.redriven_from", dlq);
    span.set_attribute("messaging.babelqueue.dead_letter_reason", item.reason);
    span.set_attribute("messaging.babelqueue.replay", item.bypassed);
    span.end(ended);
  }
}
#endif

int run_redrive(const GlobalOptions& global, const RedriveArgs& args) {
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  RedriveOptions options;
  options.to_queue = args.to;
  options.max = args.max;
  options.dry_run = args.dry_run;
  options.bypass = args.bypass;
  options.wait = seconds(args.wait_seconds);
#if defined(BQ_CLI_OTEL)
  Tracing tracing;
  const std::uint64_t started = unix_nanos_now();
#endif
  auto result = redrive(*transport, args.dlq, options);
  transport->close();
  if (!result) return fail("redrive of " + args.dlq + " failed: " + result.error().message());
#if defined(BQ_CLI_OTEL)
  if (tracing.enabled()) record_redrive_spans(*tracing.tracer(), args.dlq, *result, started, unix_nanos_now());
#endif
  for (const RedriveItem& item : result->items) {
    if (item.redriven) {
      std::cout << "redriven " << or_dash(item.message_id) << ' ' << or_dash(item.urn) << " -> " << item.to;
      if (!item.note.empty()) std::cout << " (" << item.note << ')';
    } else {
      std::cout << "skipped " << or_dash(item.message_id) << ' ' << item.note;
      if (item.note == "dry run" && !item.to.empty()) std::cout << " (would go to " << item.to << ')';
    }
    std::cout << '\n';
  }
  std::cout << "redriven " << result->redriven << ", skipped " << result->skipped << '\n';
  std::cout.flush();
  if (result->error) return fail("redrive stopped: " + result->error->message());
  return kExitOk;
}

}  // namespace

void add_queue_commands(CLI::App& app, Action& action, const GlobalOptions& global) {
  auto publish_args = std::make_shared<PublishArgs>();
  CLI::App* publish = app.add_subcommand("publish", "Publish an envelope for URN and DATA_JSON; print its meta.id");
  publish->add_option("QUEUE", publish_args->queue, "The queue")->required();
  publish->add_option("URN", publish_args->urn, "The message URN, e.g. urn:babel:orders:created")->required();
  publish->add_option("DATA_JSON", publish_args->data_json, "The payload, a JSON object")->required();
  publish->add_option("--trace-id", publish_args->trace_id, "Continue this trace instead of starting one");
  publish->add_option("--header", publish_args->headers, "An out-of-band header (repeatable)")
      ->check(header_check())
      ->allow_extra_args(false)
      ->type_name("NAME=VALUE");
  publish->add_option("--delay", publish_args->delay_ms, "Deliver no earlier than this many milliseconds from now")
      ->check(CLI::NonNegativeNumber)
      ->type_name("MS");
  publish->add_option("--count", publish_args->count, "Publish N envelopes (one id per line)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  publish->callback([&action, &global, publish_args] {
    action = [&global, publish_args] { return run_publish(global, *publish_args); };
  });

  auto send_args = std::make_shared<SendArgs>();
  CLI::App* send = app.add_subcommand(
      "send", "Send standard input as one raw message (no envelope built; one trailing newline dropped)");
  send->add_option("QUEUE", send_args->queue, "The queue")->required();
  send->add_option("--header", send_args->headers, "An out-of-band header (repeatable)")
      ->check(header_check())
      ->allow_extra_args(false)
      ->type_name("NAME=VALUE");
  send->add_flag("--lines", send_args->lines, "Send each non-empty line as its own message");
  send->callback(
      [&action, &global, send_args] { action = [&global, send_args] { return run_send(global, *send_args); }; });

  auto drain_args = std::make_shared<DrainArgs>();
  CLI::App* drain = app.add_subcommand("drain", "Receive and acknowledge messages, printing each body on its own line");
  drain->add_option("QUEUE", drain_args->queue, "The queue")->required();
  drain->add_option("--max", drain_args->max, "Stop after N messages (0 = no limit)")->type_name("N");
  drain->add_option("--wait", drain_args->wait_seconds, "Stop once a receive waited this long for nothing")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->type_name("SECONDS");
  drain->callback(
      [&action, &global, drain_args] { action = [&global, drain_args] { return run_drain(global, *drain_args); }; });

  auto stats_queue = std::make_shared<std::string>();
  CLI::App* stats = app.add_subcommand("stats", "Print {queue, ready, reserved, delayed} as one JSON line");
  stats->add_option("QUEUE", *stats_queue, "The queue")->required();
  stats->callback(
      [&action, &global, stats_queue] { action = [&global, stats_queue] { return run_stats(global, *stats_queue); }; });

  auto redrive_args = std::make_shared<RedriveArgs>();
  CLI::App* redrive_cmd =
      app.add_subcommand("redrive", "Move messages from a dead-letter queue back to where they failed");
  redrive_cmd->add_option("DLQ", redrive_args->dlq, "The dead-letter queue, e.g. orders.dlq")->required();
  redrive_cmd->add_option("--to", redrive_args->to, "Send every message to this queue instead of its original one");
  redrive_cmd->add_option("--max", redrive_args->max, "Redrive at most N messages (0 = all)")->type_name("N");
  redrive_cmd->add_flag("--dry-run", redrive_args->dry_run, "Show what would be redriven; move nothing");
  redrive_cmd->add_flag("--bypass", redrive_args->bypass,
                        "Mark the replays (bq-replay-bypass header) so handlers skip external side effects");
  redrive_cmd->add_option("--wait", redrive_args->wait_seconds, "How long one receive waits on the DLQ")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->type_name("SECONDS");
  redrive_cmd->callback([&action, &global, redrive_args] {
    action = [&global, redrive_args] { return run_redrive(global, *redrive_args); };
  });
}

}  // namespace babelqueue::cli
