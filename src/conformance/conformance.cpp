// SPDX-License-Identifier: Apache-2.0
#include "conformance.hpp"

#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>

#include <fstream>
#include <iterator>
#include <sstream>

namespace babelqueue::conformance {

void Reporter::pass(const std::string& name) {
  ++passed_;
  out_ << "PASS " << name << '\n';
}

void Reporter::fail(const std::string& name, const std::string& why) {
  ++failed_;
  out_ << "FAIL " << name << ": " << why << '\n';
}

void Reporter::skip(const std::string& name, const std::string& why) {
  ++skipped_;
  out_ << "SKIP " << name << ": " << why << '\n';
}

std::string Suite::read_file(const std::string& relative) const {
  const std::filesystem::path path = dir / relative;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(Errc::not_found, "cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Runner::add_section(std::string manifest_key, Section section) {
  sections_[std::move(manifest_key)] = std::move(section);
}

bool Runner::run(const std::filesystem::path& suite_dir, const Options& options, std::ostream& out) const {
  Reporter reporter(out);
  Suite suite{suite_dir, {}};
  try {
    auto manifest = parse_json(suite.read_file("manifest.json"));
    if (!manifest || !manifest->is_object()) {
      throw Error(Errc::invalid_json, "manifest.json is not a JSON object");
    }
    suite.manifest = std::move(*manifest);
  } catch (const std::exception& e) {
    reporter.fail("manifest", e.what());
    out << reporter.passed() << " passed, " << reporter.failed() << " failed, " << reporter.skipped() << " skipped\n";
    return false;
  }
  for (const auto& [key, block] : suite.manifest.as_object()) {
    if (!block.is_object() && !block.is_array()) continue;  // schema_version, description
    auto section = sections_.find(key);
    if (section == sections_.end()) {
      reporter.skip(key, "nothing in this build implements it");
      continue;
    }
    try {
      section->second(suite, block, options, reporter);
    } catch (const std::exception& e) {
      reporter.fail(key, e.what());
    }
  }
  out << reporter.passed() << " passed, " << reporter.failed() << " failed, " << reporter.skipped() << " skipped\n";
  return reporter.failed() == 0;
}

// ---- the `cases` section --------------------------------------------------------

namespace {

bool is_uuid_shaped(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash ? c != '-' : !hex) return false;
  }
  return true;
}

std::string to_text(const Value& v) {
  auto json = to_json(v);
  return json ? *json : std::string("<unprintable>");
}

template <class A, class B>
std::string differs(std::string_view what, const A& expected, const B& actual) {
  std::ostringstream s;
  s << what << ": expected " << expected << ", got " << actual;
  return s.str();
}

std::string check_dead_letter(const Envelope& env, const Value& expected) {
  const auto block = env.dead_letter();
  if (!block) return "expected a dead_letter block, found none";
  for (const auto& [key, want] : expected.as_object()) {
    Value got;
    if (key == "reason")
      got = block->reason;
    else if (key == "original_queue")
      got = block->original_queue;
    else if (key == "lang")
      got = block->lang;
    else if (key == "attempts")
      got = block->attempts;
    else if (key == "failed_at")
      got = block->failed_at;
    else if (key == "error")
      got = block->error ? Value(*block->error) : Value();
    else if (key == "exception")
      got = block->exception ? Value(*block->exception) : Value();
    else
      return "unknown dead_letter key in the manifest: " + key;
    if (!(got == want)) return differs("dead_letter." + key, to_text(want), to_text(got));
  }
  return {};
}

std::string check_invalid(const Suite& suite, const Value& expect, const Result<Envelope, DecodeError>& env) {
  (void)suite;
  std::optional<Rejection> reason;
  if (env) {
    reason = accepts(*env).reason();
    if (!reason) return "accepted an envelope the suite says is invalid";
  } else {
    reason = env.error().reason;
  }
  if (const Value* want = expect.find("reason"); want != nullptr && want->is_string()) {
    if (to_string(*reason) != want->as_string()) return differs("reason", want->as_string(), to_string(*reason));
  }
  return {};
}

std::string check_valid(const Suite& suite, const Value& expect, const Envelope& env,
                        const std::vector<std::string>& warnings) {
  if (auto verdict = accepts(env); !verdict) {
    return "rejected: " + std::string(to_string(*verdict.reason()));
  }
  if (const Value* v = expect.find("urn"); v != nullptr && env.urn() != v->as_string()) {
    return differs("urn", v->as_string(), env.urn());
  }
  if (const Value* v = expect.find("data"); v != nullptr && !(env.data() == *v)) {
    return differs("data", to_text(*v), env.data_json());
  }
  if (const Value* v = expect.find("data_json"); v != nullptr && env.data_json() != v->as_string()) {
    return differs("data bytes", v->as_string(), env.data_json());
  }
  if (const Value* v = expect.find("attempts"); v != nullptr && env.attempts() != v->as_int64()) {
    return differs("attempts", v->as_int64(), env.attempts());
  }
  if (const Value* v = expect.find("lang"); v != nullptr && env.lang() != v->as_string()) {
    return differs("lang", v->as_string(), env.lang());
  }
  if (const Value* v = expect.find("schema_version"); v != nullptr && env.schema_version() != v->as_int64()) {
    return differs("schema_version", v->as_int64(), env.schema_version().value_or(-1));
  }
  if (const Value* v = expect.find("dead_letter")) {
    if (auto why = check_dead_letter(env, *v); !why.empty()) return why;
  }
  // Per-message fields: presence and shape only.
  if (!is_uuid_shaped(env.trace_id())) return "trace_id is not a UUID: " + std::string(env.trace_id());
  if (!is_uuid_shaped(env.id())) return "meta.id is not a UUID: " + std::string(env.id());
  if (!env.created_at() || *env.created_at() < 0) return "meta.created_at is not an integer >= 0";

  if (const Value* v = expect.find("warnings")) {
    Array got;
    for (const auto& w : warnings) got.emplace_back(w);
    if (!(Value(got) == *v)) return differs("warnings", to_text(*v), to_text(Value(got)));
  }
  // Re-emitting must keep every value; a retry changes only attempts.
  auto same = env.encode();
  if (!same) return "re-emit failed: " + same.error().message();
  auto again = Envelope::decode(*same);
  if (!again || again->urn() != env.urn() || again->attempts() != env.attempts() || !(again->data() == env.data())) {
    return "re-emitted bytes do not decode to the same envelope: " + *same;
  }
  if (const Value* v = expect.find("retry_file")) {
    const std::string want = suite.read_file(v->as_string());
    auto retry = env.encode_with_attempts(detail::next_attempts(env.attempts()));
    if (!retry) return "retry re-emit failed: " + retry.error().message();
    if (*retry != want) return differs("retry bytes", want, *retry);
  }
  return {};
}

void run_cases(const Suite& suite, const Value& block, const Options&, Reporter& reporter) {
  for (const Value& c : block.as_array()) {
    const std::string name = "cases/" + c["name"].as_string();
    try {
      const std::string bytes = suite.read_file(c["file"].as_string());
      std::vector<std::string> warnings;
      DecodeOptions options;
      options.on_warning = [&](std::string_view pointer) { warnings.emplace_back(pointer); };
      auto env = Envelope::decode(bytes, options);
      const Value& expect = c["expect"];
      std::string why;
      if (!c["valid"].as_bool()) {
        why = check_invalid(suite, expect, env);
      } else if (!env) {
        why = "decode failed: " + std::string(to_string(env.error().reason)) + ": " + env.error().detail;
      } else {
        why = check_valid(suite, expect, *env, warnings);
      }
      if (why.empty()) {
        reporter.pass(name);
      } else {
        reporter.fail(name, why);
      }
    } catch (const std::exception& e) {
      reporter.fail(name, e.what());
    }
  }
}

}  // namespace

void add_core_sections(Runner& runner) { runner.add_section("cases", run_cases); }

}  // namespace babelqueue::conformance
