// SPDX-License-Identifier: Apache-2.0
#include "commands.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>

#include <iostream>
#include <iterator>
#include <limits>
#include <memory>

namespace babelqueue::cli {

std::string read_stdin() {
  std::string input(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  if (!input.empty() && input.back() == '\n') {
    input.pop_back();
    if (!input.empty() && input.back() == '\r') input.pop_back();
  }
  return input;
}

namespace {

int fail(const std::string& message) {
  std::cerr << "babelqueue: " << message << '\n';
  return kExitFailure;
}

struct EncodeArgs {
  std::string urn;
  std::string data_json;
  std::string queue = "default";
  std::string trace_id;
};

int run_encode(const EncodeArgs& args) {
  auto data = parse_json(args.data_json);
  if (!data) return fail("DATA_JSON is not JSON: " + data.error().message());
  // Envelope::make reads null as {}; on a command line it is a mistake.
  if (!data->is_object())
    return fail("DATA_JSON must be a JSON object, got " + std::string(Value::kind_name(data->kind())));
  MakeOptions options;
  options.queue = args.queue;
  options.trace_id = args.trace_id;
  auto env = Envelope::make(args.urn, *data, options);
  if (!env) return fail(env.error().message());
  std::cout << env->body() << '\n';
  return kExitOk;
}

int run_decode() {
  const std::string body = read_stdin();
  Array warnings;
  DecodeOptions options;
  options.on_warning = [&](std::string_view pointer) { warnings.emplace_back(std::string(pointer)); };
  auto env = Envelope::decode(body, options);
  Object out;
  if (!env) {
    out.set("accepted", false);
    out.set("reason", std::string(to_string(env.error().reason)));
    out.set("urn", nullptr);
    out.set("attempts", nullptr);
    out.set("lang", nullptr);
  } else {
    const Acceptance verdict = accepts(*env);
    out.set("accepted", verdict.accepted());
    out.set("reason", verdict ? Value() : Value(std::string(to_string(*verdict.reason()))));
    out.set("urn", env->urn().empty() ? Value() : Value(env->urn()));
    out.set("attempts", env->attempts());
    out.set("lang", env->lang().empty() ? Value() : Value(env->lang()));
  }
  out.set("warnings", std::move(warnings));
  auto line = to_json(Value(std::move(out)));
  if (!line) return fail(line.error().message());
  std::cout << *line << '\n';
  return kExitOk;
}

int run_retry() {
  const std::string body = read_stdin();
  auto env = Envelope::decode(body);
  if (!env) return fail("not retried, the body is poison: " + to_error_info(env.error()).message());
  // A count already at the top of its range has no next one: refused, not
  // wrapped around to a negative count.
  if (env->attempts() == std::numeric_limits<std::int64_t>::max()) {
    return fail("not retried: attempts is " + std::to_string(env->attempts()) +
                ", the largest count there is; a worker gives such a message up (dead-letters it)");
  }
  auto retry = env->encode_with_attempts(env->attempts() + 1);
  if (!retry) return fail("not retried: " + retry.error().message());
  std::cout << *retry << '\n';
  return kExitOk;
}

struct DeadLetterArgs {
  std::string reason;
  std::string original_queue;
  std::string error;
  bool has_error = false;
};

int run_dead_letter(const DeadLetterArgs& args) {
  const std::string body = read_stdin();
  auto env = Envelope::decode(body);
  const std::int64_t attempts = env ? env->attempts() : 0;
  const auto reason = dead_letter_reason_from_string(args.reason);
  auto block = DeadLetter::make(*reason, args.original_queue, attempts,
                                args.has_error ? std::optional<std::string>(args.error) : std::nullopt);
  std::cout << dead_letter_body(body, block) << '\n';
  return kExitOk;
}

}  // namespace

void add_codec_commands(CLI::App& app, Action& action) {
  CLI::App* codec = app.add_subcommand("codec", "Encode, decode and re-emit envelopes (no broker needed)");
  codec->require_subcommand(1);

  auto encode_args = std::make_shared<EncodeArgs>();
  CLI::App* encode = codec->add_subcommand("encode", "Print the canonical envelope for URN and DATA_JSON");
  encode->add_option("URN", encode_args->urn, "The message URN, e.g. urn:babel:orders:created")->required();
  encode->add_option("DATA_JSON", encode_args->data_json, "The payload, a JSON object")->required();
  encode->add_option("--queue", encode_args->queue, "meta.queue")->capture_default_str();
  encode->add_option("--trace-id", encode_args->trace_id, "Continue this trace instead of starting one");
  encode->callback([&action, encode_args] { action = [encode_args] { return run_encode(*encode_args); }; });

  CLI::App* decode = codec->add_subcommand(
      "decode", "Read a body on stdin; print {accepted, reason, urn, attempts, lang, warnings} as one JSON line");
  decode->callback([&action] { action = run_decode; });

  CLI::App* retry =
      codec->add_subcommand("retry", "Read a body on stdin; print the body republished after one failure");
  retry->callback([&action] { action = run_retry; });

  auto dl_args = std::make_shared<DeadLetterArgs>();
  CLI::App* dead_letter = codec->add_subcommand(
      "dead-letter", "Read a body on stdin; print it as it goes to a dead-letter queue (with the dead_letter block)");
  dead_letter->add_option("REASON", dl_args->reason, "failed, unknown_urn or poison")
      ->required()
      ->check(CLI::IsMember({"failed", "unknown_urn", "poison"}));
  dead_letter->add_option("ORIGINAL_QUEUE", dl_args->original_queue, "The queue the message failed on")->required();
  CLI::Option* error_option = dead_letter->add_option("--error", dl_args->error, "The error message to record");
  dead_letter->callback([&action, dl_args, error_option] {
    dl_args->has_error = error_option->count() > 0;
    action = [dl_args] { return run_dead_letter(*dl_args); };
  });
}

}  // namespace babelqueue::cli
