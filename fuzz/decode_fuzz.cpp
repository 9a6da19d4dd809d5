// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: any bytes through Envelope::decode, the re-emitters and
// parse_json, checking the invariants the wire contract promises. A violation
// prints what broke and abort()s, so libFuzzer saves the input.
//
// Invariants checked (each must hold for every input; why it holds is said
// where it is not obvious):
//   decode
//     D0  a failed decode reports one of the decoding rejections (too_large ..
//         duplicate_key), never one of accepts()'s
//     D1  a decoded envelope's body() is the input, byte for byte
//     D2  every accessor works; data() never throws (the bytes were validated)
//     D3  on_warning is called once per entry of warnings(), same pointers
//     D4  attempts() >= 0 (an invalid attempts reads as 0 and rejects)
//     D5  accepts() true  =>  urn and trace_id are not blank, schema_version
//         is 1, data() is an object
//     D6  encode() succeeds  <=>  accepts() is true; negative attempts fail
//     D7  a copy of the envelope re-emits the same bytes (the layout is
//         offsets into the envelope's own buffer, never pointers)
//   re-emitting an accepted envelope as E = encode_with_attempts(n)
//     R1  E decodes (with the same depth limit: re-emitting never nests
//         deeper), is accepted, has no warnings (forbidden keys are dropped)
//     R2  same urn, trace_id, id, queue, lang, schema_version, created_at,
//         dead_letter block, data(); data_json is the input's data_json
//         without insignificant whitespace; attempts is n
//     R3  E is canonical: re-emitting the re-decoded envelope gives E again
//     R4  set_attempts(n) then encode() gives E
//   dead-lettering with a block B, as DL = encode_dead_letter(B)
//     L1  DL succeeds (B is valid UTF-8) and decodes with dead_letter() == B
//         and the same verdict of accepts() as the original
//     L2  an accepted envelope keeps urn, trace_id, data and attempts
//     L3  dead-lettering DL again with B2 replaces the block (one block, B2)
//     L4  dead_letter_body(input, B) is DL when the input decodes, else the
//         input unchanged
//   the two decoders (docs/adr/0036): decode and parse_json read a valid
//   input through simdjson's DOM tape and leave the rest to the On-Demand pass
//     X1  decode and the On-Demand pass alone agree: the same reason and
//         detail, or envelopes with the same fields, warnings, verdict and
//         re-emitted bytes
//     X2  parse_json and its On-Demand pass alone agree: the same error
//         message, or equal values
//   parse_json (same limits)
//     P1  to_json of a parsed value never fails: parsing yields no NaN or
//         infinity (numbers a double cannot hold stay NumberText) and only
//         valid UTF-8 (simdjson validates the text and unescapes surrogates
//         strictly)
//     P2  parse_json(to_json(v)) == v, and to_json is a fixed point there
//     P3  parse_json and decode agree on what is valid JSON: decode
//         succeeds => parse_json gives an object; parse_json gives an object
//         => decode succeeds or reports a duplicate frame/meta key (the one
//         rule parse_json does not have: it keeps the last duplicate)
#include "on_demand.hpp"

#include <babelqueue/dead_letter.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/rejection.hpp>
#include <babelqueue/value.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using babelqueue::DeadLetter;
using babelqueue::DecodeOptions;
using babelqueue::Envelope;
using babelqueue::Rejection;

constexpr std::size_t kMaxDepth = 64;
constexpr std::size_t kMaxBytes = 1U << 20U;

[[noreturn]] void violated(const char* invariant, const char* what, int line) {
  std::fprintf(stderr, "\n*** babelqueue invariant %s violated (decode_fuzz.cpp:%d): %s\n", invariant, line, what);
  std::abort();
}

#define BQ_CHECK(invariant, condition)                           \
  do {                                                           \
    if (!(condition)) violated(invariant, #condition, __LINE__); \
  } while (false)

// The input's JSON text without insignificant whitespace, written apart from
// the SDK's own compaction so that the two check each other.
std::string compact(std::string_view json) {
  std::string out;
  bool in_string = false;
  bool escaped = false;
  for (const char c : json) {
    if (in_string) {
      out.push_back(c);
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      out.push_back(c);
      in_string = c == '"';
    }
  }
  return out;
}

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\n\v\f\r") == std::string_view::npos; }

bool is_decode_rejection(Rejection r) {
  return r == Rejection::too_large || r == Rejection::invalid_utf8 || r == Rejection::invalid_json ||
         r == Rejection::not_an_object || r == Rejection::too_deep || r == Rejection::duplicate_key;
}

// Fixed blocks (DeadLetter::make would stamp the clock): text that needs
// escaping and non-ASCII, so the block's own writer is exercised too.
DeadLetter block_one() {
  DeadLetter b;
  b.reason = "poison";
  b.error = "bad \"input\"\n\tat byte 0 — ünïcødé \xF0\x9F\x92\xA5";
  b.exception = "babelqueue::Error";
  b.failed_at = 1749132727001;
  b.original_queue = "orders";
  b.attempts = 3;
  b.lang = "cpp";
  return b;
}

DeadLetter block_two() {
  DeadLetter b;
  b.reason = "failed";
  b.failed_at = -1;
  b.original_queue = "";
  b.attempts = std::numeric_limits<std::int64_t>::max();
  b.lang = "go";
  return b;
}

DecodeOptions redecode_options() {
  // Re-emitting adds at most `"attempts":N` and a block to what fit the
  // limit; the depth stays the same (a block adds 2 levels).
  DecodeOptions options;
  options.max_bytes = 4 * kMaxBytes;
  options.max_depth = kMaxDepth;
  return options;
}

// R1-R3 for one re-emitted body.
void check_reemitted(const Envelope& original, const std::string& emitted, std::int64_t attempts) {
  auto again = Envelope::decode(emitted, redecode_options());
  BQ_CHECK("R1", again.has_value());
  const Envelope& e = *again;
  BQ_CHECK("R1", accepts(e).accepted());
  BQ_CHECK("R1", e.warnings().empty());
  BQ_CHECK("R2", e.urn() == original.urn());
  BQ_CHECK("R2", e.trace_id() == original.trace_id());
  BQ_CHECK("R2", e.id() == original.id());
  BQ_CHECK("R2", e.queue() == original.queue());
  BQ_CHECK("R2", e.lang() == original.lang());
  BQ_CHECK("R2", e.schema_version() == original.schema_version());
  BQ_CHECK("R2", e.created_at() == original.created_at());
  BQ_CHECK("R2", e.attempts() == attempts);
  BQ_CHECK("R2", e.data_json() == compact(original.data_json()));
  BQ_CHECK("R2", e.data() == original.data());
  BQ_CHECK("R2", e.has_dead_letter() == original.has_dead_letter());
  BQ_CHECK("R2", e.dead_letter() == original.dead_letter());
  auto canonical = e.encode();
  BQ_CHECK("R3", canonical.has_value() && *canonical == emitted);
}

// L1-L3 for an envelope (accepted or not).
void check_dead_letter(const Envelope& env, std::string_view input) {
  const DeadLetter one = block_one();
  auto dl = env.encode_dead_letter(one);
  BQ_CHECK("L1", dl.has_value());
  auto decoded = Envelope::decode(*dl, redecode_options());
  BQ_CHECK("L1", decoded.has_value());
  const Envelope& d = *decoded;
  BQ_CHECK("L1", d.has_dead_letter());
  BQ_CHECK("L1", d.dead_letter() == one);
  BQ_CHECK("L1", accepts(d).reason() == accepts(env).reason());
  if (accepts(env)) {
    BQ_CHECK("L2", d.urn() == env.urn());
    BQ_CHECK("L2", d.trace_id() == env.trace_id());
    BQ_CHECK("L2", d.data_json() == compact(env.data_json()));
    BQ_CHECK("L2", d.attempts() == env.attempts());
  }
  const DeadLetter two = block_two();
  auto replaced = d.encode_dead_letter(two);
  BQ_CHECK("L3", replaced.has_value());
  auto redecoded = Envelope::decode(*replaced, redecode_options());
  BQ_CHECK("L3", redecoded.has_value());
  BQ_CHECK("L3", redecoded->dead_letter() == two);
  BQ_CHECK("L3", accepts(*redecoded).reason() == accepts(env).reason());

  DecodeOptions options;
  options.max_bytes = kMaxBytes;
  options.max_depth = kMaxDepth;
  BQ_CHECK("L4", babelqueue::dead_letter_body(input, one, options) == *dl);
}

// Returns the decode failure's reason, nullopt when the input decoded.
// X1: the decoded envelope (or failure) against the On-Demand pass's.
void check_decoders_agree(std::string_view input, const babelqueue::Result<Envelope, babelqueue::DecodeError>& fast) {
  const DecodeOptions options{.max_bytes = kMaxBytes, .max_depth = kMaxDepth};
  const auto exact = babelqueue::detail::decode_on_demand(input, options);
  BQ_CHECK("X1", fast.has_value() == exact.has_value());
  if (!fast) {
    BQ_CHECK("X1", fast.error().reason == exact.error().reason);
    BQ_CHECK("X1", fast.error().detail == exact.error().detail);
    return;
  }
  const Envelope& a = *fast;
  const Envelope& b = *exact;
  BQ_CHECK("X1", a.urn() == b.urn() && a.trace_id() == b.trace_id() && a.data_json() == b.data_json());
  BQ_CHECK("X1", a.id() == b.id() && a.queue() == b.queue() && a.lang() == b.lang());
  BQ_CHECK("X1", a.schema_version() == b.schema_version() && a.created_at() == b.created_at());
  BQ_CHECK("X1", a.attempts() == b.attempts() && a.has_dead_letter() == b.has_dead_letter());
  BQ_CHECK("X1", a.warnings() == b.warnings());
  BQ_CHECK("X1", accepts(a).reason() == accepts(b).reason());
  const auto a_bytes = a.encode_with_attempts(a.attempts());
  const auto b_bytes = b.encode_with_attempts(b.attempts());
  BQ_CHECK("X1", a_bytes.has_value() == b_bytes.has_value() && (!a_bytes || *a_bytes == *b_bytes));
  const auto a_dead = a.encode_dead_letter(block_one());
  const auto b_dead = b.encode_dead_letter(block_one());
  BQ_CHECK("X1", a_dead.has_value() == b_dead.has_value() && (!a_dead || *a_dead == *b_dead));
}

std::optional<Rejection> check_envelope(std::string_view input) {
  std::vector<std::string> reported;
  DecodeOptions options;
  options.max_bytes = kMaxBytes;
  options.max_depth = kMaxDepth;
  options.on_warning = [&reported](std::string_view pointer) { reported.emplace_back(pointer); };

  auto decoded = Envelope::decode(input, options);
  check_decoders_agree(input, decoded);
  if (!decoded) {
    BQ_CHECK("D0", is_decode_rejection(decoded.error().reason));
    options.on_warning = nullptr;
    BQ_CHECK("L4", babelqueue::dead_letter_body(input, block_one(), options) == input);
    return decoded.error().reason;
  }
  const Envelope& env = *decoded;

  // D1-D4: every accessor.
  BQ_CHECK("D1", env.body() == input);
  const std::string_view urn = env.urn();
  const std::string_view trace_id = env.trace_id();
  const babelqueue::Value data = env.data();  // throws (and so crashes) on a broken invariant D2
  BQ_CHECK("D2", !env.data_json().empty() || data.is_null());
  (void)env.id();
  (void)env.queue();
  (void)env.lang();
  const auto schema_version = env.schema_version();
  (void)env.created_at();
  BQ_CHECK("D2", env.has_dead_letter() || !env.dead_letter().has_value());
  BQ_CHECK("D3", env.warnings() == reported);
  BQ_CHECK("D4", env.attempts() >= 0);

  const babelqueue::Acceptance verdict = accepts(env);
  BQ_CHECK("D5", verdict.accepted() == !verdict.reason().has_value());
  if (verdict) {
    BQ_CHECK("D5", !is_blank(urn) && !is_blank(trace_id));
    BQ_CHECK("D5", schema_version == std::optional<std::int64_t>(1));
    BQ_CHECK("D5", data.is_object());
  } else {
    BQ_CHECK("D5", !is_decode_rejection(*verdict.reason()));
  }

  auto encoded = env.encode();
  BQ_CHECK("D6", encoded.has_value() == verdict.accepted());
  BQ_CHECK("D6", !env.encode_with_attempts(-1).has_value());

  Envelope copy = env;
  auto copy_encoded = copy.encode();
  BQ_CHECK("D7", copy_encoded.has_value() == encoded.has_value());
  BQ_CHECK("D7", !encoded || *copy_encoded == *encoded);

  if (verdict) {
    check_reemitted(env, *encoded, env.attempts());
    // attempts + 1 would overflow at INT64_MAX; a retry counter never gets there.
    if (env.attempts() < std::numeric_limits<std::int64_t>::max()) {
      const std::int64_t next = env.attempts() + 1;
      auto retried = env.encode_with_attempts(next);
      BQ_CHECK("R1", retried.has_value());
      check_reemitted(env, *retried, next);
      copy.set_attempts(next);
      auto via_set = copy.encode();
      BQ_CHECK("R4", via_set.has_value() && *via_set == *retried);
    }
  }
  check_dead_letter(env, input);
  return std::nullopt;
}

// decode_failure: what check_envelope returned for the same input.
void check_parse_json(std::string_view input, std::optional<Rejection> decode_failure) {
  const babelqueue::JsonLimits limits{.max_depth = kMaxDepth, .max_bytes = kMaxBytes};
  auto parsed = babelqueue::parse_json(input, limits);
  const auto exact = babelqueue::detail::parse_json_on_demand(input, limits);
  BQ_CHECK("X2", parsed.has_value() == exact.has_value());
  BQ_CHECK("X2", parsed ? *parsed == *exact : parsed.error().message() == exact.error().message());

  if (!decode_failure) BQ_CHECK("P3", parsed.has_value() && parsed->is_object());
  if (parsed && parsed->is_object()) {
    BQ_CHECK("P3", !decode_failure || *decode_failure == Rejection::duplicate_key);
  }

  if (!parsed) return;
  auto text = babelqueue::to_json(*parsed);
  BQ_CHECK("P1", text.has_value());
  auto reparsed = babelqueue::parse_json(*text, limits);
  BQ_CHECK("P2", reparsed.has_value());
  BQ_CHECK("P2", *reparsed == *parsed);
  auto text_again = babelqueue::to_json(*reparsed);
  BQ_CHECK("P2", text_again.has_value() && *text_again == *text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  check_parse_json(input, check_envelope(input));
  return 0;
}
