// SPDX-License-Identifier: Apache-2.0
// publish, send, drain, peek, stats and redrive: moving messages in and out
// of a broker, and looking at them, from a shell.
#include "commands.hpp"
#include "option_checks.hpp"
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
#include <optional>

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
  // Envelope::make reads null as {}; on a command line it is a mistake.
  if (!data->is_object())
    return fail("DATA_JSON must be a JSON object, got " + std::string(Value::kind_name(data->kind())));
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
  const std::string queue = queue_name(*transport, args.queue);
  std::atomic<std::size_t> published{0};
  Progress progress(StdoutUse::while_running, [&] {
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
      batch.push_back(OutgoingMessage{queue, std::string(env->body()), options});
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
  const std::string queue = queue_name(*transport, args.queue);
  for (OutgoingMessage& message : messages) message.queue = queue;
  auto r = publish_chunked(*transport, messages);
  transport->close();
  if (!r) return fail(r.error().message());
  return kExitOk;
}

// ---- drain and peek -----------------------------------------------------------------

// How a message is shown: its body on a line of its own (NDJSON for
// envelopes), or with --json a record that any body fits in (a poison body
// that is not JSON would stop jq at the first one):
// {"queue":Q,"body":TEXT,"headers":{...},"native_attempts":N|null}. A body
// that is not valid UTF-8 is shown with U+FFFD in its place and
// "body_utf8":false.
void print_message(bool json, const std::string& queue, const std::string& body, const Headers& headers,
                   std::optional<std::int64_t> native_attempts) {
  if (!json) {
    std::cout << body << '\n';
  } else {
    Object record;
    record.set("queue", sanitize_utf8(queue));
    std::string text = sanitize_utf8(body);
    const bool exact = text == body;
    record.set("body", std::move(text));
    if (!exact) record.set("body_utf8", false);
    record.set("headers", headers_object(headers));
    record.set("native_attempts", native_attempts ? Value(*native_attempts) : Value());
    auto line = to_json(Value(std::move(record)));
    std::cout << (line ? *line : std::string("{}")) << '\n';
  }
  std::cout.flush();
}

struct DrainArgs {
  std::string queue;
  std::size_t max = 0;
  double wait_seconds = 1.0;
  bool json = false;
};

int run_drain(const GlobalOptions& global, const DrainArgs& args) {
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  const std::string queue = queue_name(*transport, args.queue);
  std::atomic<std::size_t> taken{0};
  Progress progress(StdoutUse::while_running,
                    [&] { return "drain " + queue + ": " + std::to_string(taken.load()) + " messages"; });
  const auto wait = seconds(args.wait_seconds);
  int status = kExitOk;
  while (args.max == 0 || taken.load() < args.max) {
    const std::size_t want = args.max == 0 ? 64 : std::min<std::size_t>(64, args.max - taken.load());
    auto batch = transport->receive(queue, want, wait);
    if (!batch) {
      status = fail("receive from " + queue + " failed: " + batch.error().message());
      break;
    }
    if (batch->empty()) break;
    for (const Delivery& d : *batch) {
      // Printed before the ack: a message is never lost, at worst printed twice.
      print_message(args.json, queue, d.body, d.headers, d.native_attempts);
      if (auto r = transport->ack(d); !r) fail("ack on " + queue + " failed: " + r.error().message());
      ++taken;
    }
  }
  transport->close();
  return status;
}

struct PeekArgs {
  std::string queue;
  std::size_t max = 10;
  bool json = false;
};

int run_peek(const GlobalOptions& global, const PeekArgs& args) {
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  const std::string queue = queue_name(*transport, args.queue);
  auto shown = transport->peek(queue, args.max);
  transport->close();
  if (!shown) {
    if (shown.error().code() == Errc::unsupported) {
      return fail("peek: " + shown.error().message() + "; nothing was taken from " + queue);
    }
    return fail("peek at " + queue + " failed: " + shown.error().message());
  }
  for (const PeekedMessage& message : *shown) {
    print_message(args.json, queue, message.body, message.headers, message.native_attempts);
  }
  return kExitOk;
}

// ---- stats --------------------------------------------------------------------------

struct StatsArgs {
  std::string queue;
  bool json = false;
};

int run_stats(const GlobalOptions& global, const StatsArgs& args) {
  auto transport = open_transport_or_report(global);
  if (!transport) return kExitFailure;
  const std::string queue = queue_name(*transport, args.queue);
  auto stats = transport->stats(queue);
  transport->close();
  if (!stats) {
    if (stats.error().code() == Errc::unsupported) {
      return fail("this transport cannot count messages (" + stats.error().message() + ")");
    }
    return fail("stats of " + queue + " failed: " + stats.error().message());
  }
  if (args.json) {
    const auto count = [](std::int64_t n) { return n < 0 ? Value() : Value(n); };
    Object out;
    out.set("queue", queue);
    out.set("ready", count(stats->ready));
    out.set("reserved", count(stats->reserved));
    out.set("delayed", count(stats->delayed));
    return print_json_line(Value(std::move(out)));
  }
  const auto count = [](std::int64_t n) { return n < 0 ? std::string("?") : std::to_string(n); };
  std::cout << queue << ": " << count(stats->ready) << " ready, " << count(stats->reserved) << " reserved, "
            << count(stats->delayed) << " delayed" << '\n';
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
  bool json = false;
};

std::string or_dash(std::string_view text) { return text.empty() ? "-" : std::string(text); }

// {"redriven":N,"skipped":N,"items":[{"id","urn","redriven","to","note"}],
// "error":TEXT|null}; ids and URNs that cannot be read are null.
Value redrive_json(const RedriveResult& result) {
  const auto text_or_null = [](const std::string& text) { return text.empty() ? Value() : Value(sanitize_utf8(text)); };
  Array items;
  for (const RedriveItem& item : result.items) {
    Object entry;
    entry.set("id", text_or_null(item.message_id));
    entry.set("urn", text_or_null(item.urn));
    entry.set("redriven", item.redriven);
    entry.set("to", text_or_null(item.to));
    entry.set("note", text_or_null(item.note));
    items.emplace_back(std::move(entry));
  }
  Object out;
  out.set("redriven", result.redriven);
  out.set("skipped", result.skipped);
  out.set("items", std::move(items));
  out.set("error", result.error ? Value(sanitize_utf8(result.error->message())) : Value());
  return Value(std::move(out));
}

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
  options.to_queue = args.to.empty() ? std::string() : queue_name(*transport, args.to);
  options.max = args.max;
  options.dry_run = args.dry_run;
  options.bypass = args.bypass;
  options.wait = seconds(args.wait_seconds);
  const std::string dlq = queue_name(*transport, args.dlq);
#if defined(BQ_CLI_OTEL)
  Tracing tracing;
  const std::uint64_t started = unix_nanos_now();
#endif
  RedriveResult progress;
  auto result = redrive(*transport, dlq, options, progress);
  transport->close();
#if defined(BQ_CLI_OTEL)
  // Spans for the messages moved, also when the run stopped midway.
  if (tracing.enabled()) record_redrive_spans(*tracing.tracer(), dlq, progress, started, unix_nanos_now());
#endif
  // A run that stopped midway still reports what it did before failing.
  if (!result && progress.items.empty()) return fail("redrive of " + dlq + " failed: " + result.error().message());
  if (args.json) {
    if (print_json_line(redrive_json(progress)) != kExitOk) return kExitFailure;
  } else {
    for (const RedriveItem& item : progress.items) {
      if (item.redriven) {
        std::cout << "redriven " << or_dash(item.message_id) << ' ' << or_dash(item.urn) << " -> " << item.to;
        if (!item.note.empty()) std::cout << " (" << item.note << ')';
      } else {
        std::cout << "skipped " << or_dash(item.message_id) << ' ' << item.note;
        if (item.note == "dry run" && !item.to.empty()) std::cout << " (would go to " << item.to << ')';
      }
      std::cout << '\n';
    }
    std::cout << "redriven " << progress.redriven << ", skipped " << progress.skipped << '\n';
    std::cout.flush();
  }
  if (!result) return fail("redrive stopped: " + result.error().message());
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
      ->check(whole_number(0))
      ->type_name("MS");
  publish->add_option("--count", publish_args->count, "Publish N envelopes (one id per line)")
      ->check(whole_number(1))
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
  CLI::App* drain = app.add_subcommand(
      "drain", "Receive and acknowledge (remove) messages, printing each body on its own line; to look, use peek");
  drain->add_option("QUEUE", drain_args->queue, "The queue")->required();
  drain->add_option("--max", drain_args->max, "Stop after N messages (0 = no limit)")
      ->check(whole_number(0))
      ->type_name("N");
  drain->add_option("--wait", drain_args->wait_seconds, "Stop once a receive waited this long for nothing")
      ->check(seconds_value())
      ->capture_default_str()
      ->type_name("SECONDS");
  drain->add_flag("--json", drain_args->json,
                  "One JSON record per message: {queue, body (as a string), headers, native_attempts}");
  drain->callback(
      [&action, &global, drain_args] { action = [&global, drain_args] { return run_drain(global, *drain_args); }; });

  auto peek_args = std::make_shared<PeekArgs>();
  CLI::App* peek =
      app.add_subcommand("peek", "Show the next messages of QUEUE without taking them (where the broker can browse)");
  peek->add_option("QUEUE", peek_args->queue, "The queue, e.g. orders.dlq")->required();
  peek->add_option("--max", peek_args->max, "Show at most N messages")
      ->check(whole_number(1))
      ->capture_default_str()
      ->type_name("N");
  peek->add_flag("--json", peek_args->json,
                 "One JSON record per message: {queue, body (as a string), headers, native_attempts}");
  peek->callback(
      [&action, &global, peek_args] { action = [&global, peek_args] { return run_peek(global, *peek_args); }; });

  auto stats_args = std::make_shared<StatsArgs>();
  CLI::App* stats = app.add_subcommand("stats", "Count a queue's ready, reserved and delayed messages");
  stats->add_option("QUEUE", stats_args->queue, "The queue")->required();
  stats->add_flag("--json", stats_args->json, "One JSON line: {queue, ready, reserved, delayed} (null: unknown)");
  stats->callback(
      [&action, &global, stats_args] { action = [&global, stats_args] { return run_stats(global, *stats_args); }; });

  auto redrive_args = std::make_shared<RedriveArgs>();
  CLI::App* redrive_cmd =
      app.add_subcommand("redrive", "Move messages from a dead-letter queue back to where they failed");
  redrive_cmd->add_option("DLQ", redrive_args->dlq, "The dead-letter queue, e.g. orders.dlq")->required();
  redrive_cmd->add_option("--to", redrive_args->to, "Send every message to this queue instead of its original one");
  redrive_cmd->add_option("--max", redrive_args->max, "Redrive at most N messages (0 = all)")
      ->check(whole_number(0))
      ->type_name("N");
  redrive_cmd->add_flag("--dry-run", redrive_args->dry_run, "Show what would be redriven; move nothing");
  redrive_cmd->add_flag("--bypass", redrive_args->bypass,
                        "Mark the replays (bq-replay-bypass header) so handlers skip external side effects");
  redrive_cmd->add_option("--wait", redrive_args->wait_seconds, "How long one receive waits on the DLQ")
      ->check(seconds_value())
      ->capture_default_str()
      ->type_name("SECONDS");
  redrive_cmd->add_flag("--json", redrive_args->json,
                        "One JSON line: {redriven, skipped, items: [{id, urn, redriven, to, note}], error}");
  redrive_cmd->callback([&action, &global, redrive_args] {
    action = [&global, redrive_args] { return run_redrive(global, *redrive_args); };
  });
}

}  // namespace babelqueue::cli
