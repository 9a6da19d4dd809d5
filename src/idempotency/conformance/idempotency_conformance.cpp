// SPDX-License-Identifier: Apache-2.0
#include "idempotency_conformance.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/idempotency/middleware.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/release_delivery.hpp>
#include <babelqueue/uuid.hpp>

#include <filesystem>
#include <set>
#include <stdexcept>

namespace babelqueue::idempotency {

namespace {

// The handler of a sequence: counts its runs (the manifest's effects: a
// run that throws fired its side effect too, as throw-leaves-id-unmarked
// counts) and throws when told to.
struct SequenceHandler {
  int runs = 0;
  bool fail_next = false;
  Result<void> operator()(const Message&) {
    ++runs;
    if (fail_next) throw std::runtime_error("the delivery's outcome is throw");
    return {};
  }
};

// The fixture's envelope with meta.id replaced.
Envelope with_id(const Value& fixture, const std::string& id) {
  Value copy = fixture;
  copy.as_object()["meta"].as_object()["id"] = id;
  return Envelope::decode(to_json(copy).value()).value();
}

// One sequence on one store; "" when it held, else what went wrong. Ids are
// suffixed with run so that sequences sharing a store (a Redis server) never
// see each other's ids; the empty id stays empty.
std::string run_sequence(const Value& sequence, const Value& fixture, Store& store, bool claim, const std::string& run,
                         std::set<std::string>& used) {
  Options options;
  options.claim = claim;
  options.claim_lease = std::chrono::seconds(10);
  options.log = {};
  Middleware middleware(std::shared_ptr<Store>(&store, [](Store*) {}), options);
  SequenceHandler handler;
  const MessageHandler next = [&](const Message& m) { return handler(m); };
  std::size_t index = 0;
  for (const Value& delivery : sequence["deliveries"].as_array()) {
    ++index;
    const std::string& manifest_id = delivery["meta_id"].as_string();
    const std::string id = manifest_id.empty() ? "" : manifest_id + "-" + run;
    if (!id.empty()) used.insert(id);
    const std::string where =
        "delivery " + std::to_string(index) + " (" + (manifest_id.empty() ? "no id" : manifest_id) + ")";
    if (const Value* forget = delivery.find("forget_before");
        forget != nullptr && forget->is_bool() && forget->as_bool()) {
      if (auto forgotten = store.forget(id); !forgotten)
        return where + ": forget failed: " + forgotten.error().message();
    }
    const std::string& expect = delivery["expect_effect"].as_string();
    const Value* outcome = delivery.find("outcome");
    handler.fail_next = outcome != nullptr && outcome->is_string() && outcome->as_string() == "throw";
    const Envelope env = with_id(fixture, id);
    const Headers headers;
    const Message message(env, "orders", headers);
    const int runs_before = handler.runs;
    bool acked = false;
    try {
      acked = static_cast<bool>(middleware.handle(message, next));
    } catch (const ReleaseDelivery& later) {
      return where + ": handed back (" + later.what() + ")";
    } catch (const std::exception&) {
      acked = false;  // the handler's throw, passed on to the runtime
    }
    const bool ran = handler.runs > runs_before;
    if (expect == "run" && !ran) return where + ": expected run, the handler did not run";
    if (expect == "skip") {
      if (ran) return where + ": expected skip, the handler ran";
      if (!acked) return where + ": expected skip (acked), the delivery failed";
    }
    if (expect == "run" && handler.fail_next == acked) {
      return where + ": the delivery was " + (acked ? "acked" : "failed") + " after a handler that " +
             (handler.fail_next ? "threw" : "succeeded");
    }
  }
  const std::int64_t expected = sequence["expected_effects"].as_int64();
  if (handler.runs != expected) {
    return "effects " + std::to_string(handler.runs) + ", expected " + std::to_string(expected);
  }
  return {};
}

// meta.id verbatim is the key, trace_id is not.
std::string check_dedup_key(const Value& block, const conformance::Suite& suite, Store& store) {
  const Value& key = block["dedup_key"];
  const auto fixture = Envelope::decode(suite.read_file(key["envelope_file"].as_string()));
  if (!fixture) return "the fixture does not decode: " + fixture.error().detail;
  const std::string expected = key["expected_key"].as_string();
  if (fixture->id() != expected) return "meta.id is " + std::string(fixture->id()) + ", expected " + expected;
  // Forgotten first and last: a shared store keeps nothing of the check.
  (void)store.forget(expected);
  Options options;
  options.log = {};
  Middleware middleware(std::shared_ptr<Store>(&store, [](Store*) {}), options);
  int runs = 0;
  const Headers headers;
  const Message message(*fixture, "orders", headers);
  auto outcome = middleware.handle(message, [&](const Message&) -> Result<void> {
    ++runs;
    return {};
  });
  std::string problem;
  if (!outcome || runs != 1) problem = "the first delivery did not run and ack";
  if (problem.empty() && !store.seen(expected).value_or(false)) problem = "meta.id was not remembered";
  if (problem.empty() && store.seen(fixture->trace_id()).value_or(false)) problem = "trace_id was remembered";
  (void)store.forget(expected);
  return problem;
}

struct StoreUnderTest {
  std::string name;
  std::string url;
};

std::vector<StoreUnderTest> stores_under_test(const conformance::Options& options, conformance::Reporter& reporter,
                                              const std::filesystem::path& scratch) {
  std::vector<StoreUnderTest> out;
  const auto schemes = store_schemes();
  const std::set<std::string> registered(schemes.begin(), schemes.end());
  std::string given_scheme;
  if (options.url) {
    if (auto url = Url::parse(*options.url)) given_scheme = url->scheme;
  }
  for (const std::string& scheme : schemes) {
    if (scheme == "memory") {
      out.push_back({"memory", "memory://"});
    } else if (scheme == "sqlite") {
      out.push_back({"sqlite", "sqlite://" + (scratch / "seen.db").string()});
    } else if (scheme == given_scheme) {
      out.push_back({scheme, *options.url});
    } else if (given_scheme == scheme + "s" || scheme == given_scheme + "s" ||
               (scheme.back() == 's' && registered.count(scheme.substr(0, scheme.size() - 1)) > 0)) {
      continue;  // a TLS twin (rediss of redis): one store, checked or reported once
    } else {
      reporter.skip("idempotency." + scheme, "needs --url " + scheme + "://... (a live server)");
    }
  }
  return out;
}

}  // namespace

void add_conformance_section(conformance::Runner& runner) {
  runner.add_section("idempotency", [](const conformance::Suite& suite, const Value& block,
                                       const conformance::Options& options, conformance::Reporter& reporter) {
    const Value fixture = parse_json(suite.read_file(block["dedup_key"]["envelope_file"].as_string())).value();
    const auto scratch = std::filesystem::temp_directory_path() / ("bq-idempotency-conformance-" + uuid_v4());
    std::filesystem::create_directories(scratch);
    for (const StoreUnderTest& target : stores_under_test(options, reporter, scratch)) {
      const std::string prefix = "idempotency." + target.name;
      auto store = open_store(target.url);
      if (!store) {
        reporter.fail(prefix, "cannot open the store: " + store.error().message());
        continue;
      }
      if (auto problem = check_dedup_key(block, suite, **store); problem.empty()) {
        reporter.pass(prefix + ".dedup_key");
      } else {
        reporter.fail(prefix + ".dedup_key", problem);
      }
      std::set<std::string> used;
      for (const bool claim : {false, true}) {
        for (const Value& sequence : block["sequences"]["cases"].as_array()) {
          const std::string name = prefix + (claim ? ".claim." : ".") + sequence["name"].as_string();
          const auto problem = run_sequence(sequence, fixture, **store, claim, uuid_v4(), used);
          if (problem.empty()) {
            reporter.pass(name);
          } else {
            reporter.fail(name, problem);
          }
        }
      }
      for (const auto& id : used) (void)(*store)->forget(id);
    }
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  });
}

}  // namespace babelqueue::idempotency
