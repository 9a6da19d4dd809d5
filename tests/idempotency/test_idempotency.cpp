// SPDX-License-Identifier: Apache-2.0
// The idempotency middleware and its local stores (memory, SQLite): the
// claim's states, renewal, takeover, time to live and its bounded clean-up,
// the middleware's outcomes (skip, hand back, fail open, store errors) on a
// real Worker, and the wrapper for typed handlers. The manifest's sequences
// run through `babelqueue conformance` (tests/cli).
#include <babelqueue/idempotency/memory_store.hpp>
#include <babelqueue/idempotency/middleware.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/sqlite/idempotency_store.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

namespace bq = babelqueue;
namespace idem = babelqueue::idempotency;
using namespace std::chrono_literals;

namespace {

std::filesystem::path scratch() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("bq-idempotency-tests-" + bq::uuid_v4());
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    return d;
  }();
  return dir;
}

struct StoreKind {
  std::string name;
  // A fresh store whose remembered ids live for ttl (zero = for ever).
  std::function<std::shared_ptr<idem::Store>(std::chrono::milliseconds ttl, std::size_t cleanup_batch)> make;
};

class StoreTest : public testing::TestWithParam<StoreKind> {
 protected:
  std::shared_ptr<idem::Store> make(std::chrono::milliseconds ttl = {}, std::size_t cleanup_batch = 256) {
    return GetParam().make(ttl, cleanup_batch);
  }
};

}  // namespace

TEST_P(StoreTest, SeenRememberForget) {
  auto store = make();
  EXPECT_FALSE(store->seen("a").value());
  ASSERT_TRUE(store->remember("a"));
  EXPECT_TRUE(store->seen("a").value());
  EXPECT_FALSE(store->seen("b").value());
  ASSERT_TRUE(store->forget("a"));
  EXPECT_FALSE(store->seen("a").value());
}

TEST_P(StoreTest, ASecondClaimIsInFlightUntilTheFirstCompletes) {
  auto store = make();
  auto first = store->claim("a", 5s).value();
  ASSERT_EQ(first.state, idem::ClaimState::acquired);
  EXPECT_FALSE(first.token.empty());
  EXPECT_FALSE(store->seen("a").value());  // a claim is not a handled id
  auto second = store->claim("a", 5s).value();
  EXPECT_EQ(second.state, idem::ClaimState::in_flight);
  EXPECT_GT(second.remaining, 4s);
  EXPECT_LE(second.remaining, 5s);
  ASSERT_TRUE(store->complete("a", first.token));
  EXPECT_TRUE(store->seen("a").value());
  EXPECT_EQ(store->claim("a", 5s).value().state, idem::ClaimState::done);
}

TEST_P(StoreTest, AnAbandonedClaimCanBeTakenAtOnceAndOnlyItsHolderAbandonsIt) {
  auto store = make();
  auto first = store->claim("a", 5s).value();
  ASSERT_TRUE(store->abandon("a", "not-the-token"));
  EXPECT_EQ(store->claim("a", 5s).value().state, idem::ClaimState::in_flight);
  ASSERT_TRUE(store->abandon("a", first.token));
  EXPECT_FALSE(store->seen("a").value());
  EXPECT_EQ(store->claim("a", 5s).value().state, idem::ClaimState::acquired);
}

TEST_P(StoreTest, AnExpiredClaimIsTakenOverAndTheOldHolderCanNoLongerRenewIt) {
  auto store = make();
  auto first = store->claim("a", 100ms).value();
  EXPECT_TRUE(store->renew("a", first.token, 100ms).value());
  std::this_thread::sleep_for(150ms);
  auto second = store->claim("a", 5s).value();
  ASSERT_EQ(second.state, idem::ClaimState::acquired);
  EXPECT_NE(second.token, first.token);
  EXPECT_FALSE(store->renew("a", first.token, 5s).value());
  EXPECT_TRUE(store->renew("a", second.token, 5s).value());
  ASSERT_TRUE(store->abandon("a", first.token));  // not its claim any more: nothing happens
  EXPECT_EQ(store->claim("a", 5s).value().state, idem::ClaimState::in_flight);
}

TEST_P(StoreTest, RenewalKeepsAClaimPastItsFirstLease) {
  auto store = make();
  auto held = store->claim("a", 150ms).value();
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(60ms);
    ASSERT_TRUE(store->renew("a", held.token, 150ms).value());
  }
  EXPECT_EQ(store->claim("a", 150ms).value().state, idem::ClaimState::in_flight);
}

TEST_P(StoreTest, RememberedIdsExpireAfterTheirTtlAndTheCleanUpIsBounded) {
  auto store = make(100ms, 0);  // no automatic clean-up: purge_expired alone
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->remember("id-" + std::to_string(i)));
  EXPECT_TRUE(store->seen("id-3").value());
  std::this_thread::sleep_for(150ms);
  EXPECT_FALSE(store->seen("id-3").value());  // expired at once, removed or not
  EXPECT_EQ(store->claim("id-4", 5s).value().state, idem::ClaimState::acquired);
  EXPECT_EQ(store->purge_expired(4).value(), 4U);
  EXPECT_EQ(store->purge_expired(100).value(), 5U);  // id-4 is claimed now, not expired
  EXPECT_EQ(store->purge_expired(100).value(), 0U);
}

TEST_P(StoreTest, ConcurrentClaimsOfOneIdHaveOneWinner) {
  auto store = make();
  std::atomic<int> acquired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto c = store->claim("race-" + std::to_string(i), 5s);
        if (c && c->state == idem::ClaimState::acquired) ++acquired;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(acquired.load(), 20);
}

INSTANTIATE_TEST_SUITE_P(
    Stores, StoreTest,
    testing::Values(StoreKind{"memory",
                              [](std::chrono::milliseconds ttl, std::size_t batch) -> std::shared_ptr<idem::Store> {
                                return std::make_shared<idem::MemoryStore>(idem::MemoryStore::Options{ttl, batch});
                              }},
                    StoreKind{"sqlite",
                              [](std::chrono::milliseconds ttl, std::size_t batch) -> std::shared_ptr<idem::Store> {
                                bq::sqlite::IdempotencyStore::Options o;
                                o.path = (scratch() / (bq::uuid_v4() + ".db")).string();
                                o.ttl = ttl;
                                o.cleanup_batch = batch;
                                return bq::sqlite::IdempotencyStore::open(o).value();
                              }}),
    [](const testing::TestParamInfo<StoreKind>& kind) { return kind.param.name; });

TEST(SqliteIdempotencyStore, TwoConnectionsToOneFileShareTheSeenSetAndTheClaims) {
  const std::string url = "sqlite://" + (scratch() / "shared.db").string() + "?ttl=1h";
  bq::sqlite::register_idempotency_store();
  auto a = idem::open_store(url).value();
  auto b = idem::open_store(url).value();
  auto claim = a->claim("x", 5s).value();
  EXPECT_EQ(b->claim("x", 5s).value().state, idem::ClaimState::in_flight);
  ASSERT_TRUE(a->complete("x", claim.token));
  EXPECT_TRUE(b->seen("x").value());
  EXPECT_FALSE(idem::open_store("sqlite://" + (scratch() / "x.db").string() + "?ttl=soon"));
}

TEST(MemoryStore, TheCleanUpRunsEveryBatchOfWrites) {
  idem::MemoryStore store({.ttl = 1ms, .cleanup_batch = 4});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.remember("id-" + std::to_string(i)));
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(store.size(), 3U);
  ASSERT_TRUE(store.remember("id-3"));  // the fourth write removes the expired three
  EXPECT_EQ(store.size(), 1U);
}

// ---- the middleware on a Worker ----------------------------------------------------------------

namespace {

bq::WorkerOptions quiet() {
  bq::WorkerOptions o;
  o.default_queue = "pay";
  o.poll_timeout = 20ms;
  o.log = {};
  return o;
}

std::string body_with_id(const std::string& id) {
  bq::MakeOptions make;
  make.queue = "pay";
  make.id = id;
  return std::string(bq::Envelope::make("urn:t:charge", bq::Value::object({{"n", 1}}), make).value().body());
}

idem::Options options(bool claim) {
  idem::Options o;
  o.claim = claim;
  o.claim_lease = 2s;
  o.log = {};
  return o;
}

}  // namespace

TEST(IdempotencyMiddleware, ADuplicateIsAckedWithoutRunningWithAndWithoutTheClaim) {
  for (const bool claim : {false, true}) {
    bq::memory::Transport transport;
    auto store = std::make_shared<idem::MemoryStore>();
    bq::Worker worker(transport, quiet());
    worker.use(std::make_shared<idem::Middleware>(store, options(claim)));
    int runs = 0;
    worker.handle("urn:t:charge", [&](const bq::Message&) { ++runs; });
    ASSERT_TRUE(transport.publish("pay", body_with_id("dup-1")));
    ASSERT_TRUE(transport.publish("pay", body_with_id("dup-1")));
    ASSERT_TRUE(transport.publish("pay", body_with_id("dup-2")));
    ASSERT_EQ(worker.drain().value(), 3U);
    EXPECT_EQ(runs, 2) << "claim " << claim;
    EXPECT_EQ(worker.metrics().snapshot().succeeded, 3U);
    EXPECT_TRUE(store->seen("dup-1").value());
  }
}

TEST(IdempotencyMiddleware, AFailureLeavesTheIdUnmarkedSoTheRetryRuns) {
  bq::memory::Transport transport;
  auto store = std::make_shared<idem::MemoryStore>();
  bq::Worker worker(transport, quiet());
  worker.use(std::make_shared<idem::Middleware>(store, options(true)));
  std::vector<std::int64_t> attempts;
  worker.handle("urn:t:charge", [&](const bq::Message& m) {
    attempts.push_back(m.attempts());
    if (m.attempts() == 0) throw std::runtime_error("gateway down");
  });
  ASSERT_TRUE(transport.publish("pay", body_with_id("f-1")));
  ASSERT_EQ(worker.drain().value(), 2U);
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{0, 1}));
  EXPECT_TRUE(store->seen("f-1").value());
}

TEST(IdempotencyMiddleware, AnIdClaimedElsewhereIsHandedBackForTheRestOfItsLease) {
  auto store = std::make_shared<idem::MemoryStore>();
  auto other = store->claim("busy-1", 300ms).value();  // another worker holds it
  ASSERT_EQ(other.state, idem::ClaimState::acquired);
  bq::memory::Transport transport;
  bq::Worker worker(transport, quiet());
  worker.use(std::make_shared<idem::Middleware>(store, options(true)));
  std::atomic<int> runs{0};
  worker.handle("urn:t:charge", [&](const bq::Message&) {
    ++runs;
    worker.stop();
  });
  ASSERT_TRUE(transport.publish("pay", body_with_id("busy-1")));
  const auto start = std::chrono::steady_clock::now();
  bq::RunLimits limits;
  limits.max_messages = 20;  // a bound if the takeover never came
  ASSERT_TRUE(worker.run({}, limits));
  // Handed back (once, or again if it came back just before the lease
  // ended), then taken over once the other claim's lease had passed.
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(runs.load(), 1);
  const auto m = worker.metrics().snapshot();
  EXPECT_GE(m.released, 1U);
  EXPECT_EQ(m.failed, 0U);
  EXPECT_EQ(m.succeeded, 1U);
  EXPECT_FALSE(store->renew("busy-1", other.token, 1s).value());
}

TEST(IdempotencyMiddleware, AMessageWithoutAnIdRunsUnguarded) {
  auto store = std::make_shared<idem::MemoryStore>();
  idem::Middleware guard(store, options(true));
  const bq::Envelope env = bq::Envelope::decode(R"({"job":"urn:t:x","trace_id":"t","data":{},"meta":{"queue":"q",)"
                                                R"("lang":"go","schema_version":1,"created_at":1},"attempts":0})")
                               .value();
  const bq::Headers headers;
  const bq::Message message(env, "q", headers);
  int runs = 0;
  const bq::MessageHandler next = [&](const bq::Message&) -> bq::Result<void> {
    ++runs;
    return {};
  };
  ASSERT_TRUE(guard.handle(message, next));
  ASSERT_TRUE(guard.handle(message, next));
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(store->size(), 0U);
}

namespace {
// A store whose every call fails: the server is away.
struct DownStore : idem::Store {
  bq::Unexpected<bq::ErrorInfo> down() { return bq::unexpected(bq::Errc::connection, "the store is down"); }
  bq::Result<bool> seen(std::string_view) override { return down(); }
  bq::Result<void> remember(std::string_view) override { return down(); }
  bq::Result<void> forget(std::string_view) override { return down(); }
  bq::Result<idem::Claim> claim(std::string_view, std::chrono::milliseconds) override { return down(); }
  bq::Result<bool> renew(std::string_view, std::string_view, std::chrono::milliseconds) override { return down(); }
  bq::Result<void> complete(std::string_view, std::string_view) override { return down(); }
  bq::Result<void> abandon(std::string_view, std::string_view) override { return down(); }
  bq::Result<std::size_t> purge_expired(std::size_t) override { return down(); }
};
}  // namespace

TEST(IdempotencyMiddleware, AStoreThatCannotAnswerFailsTheDeliveryBeforeTheHandler) {
  for (const bool claim : {false, true}) {
    bq::memory::Transport transport;
    auto o = quiet();
    o.max_attempts = 1;
    bq::Worker worker(transport, o);
    worker.use(std::make_shared<idem::Middleware>(std::make_shared<DownStore>(), options(claim)));
    int runs = 0;
    worker.handle("urn:t:charge", [&](const bq::Message&) { ++runs; });
    ASSERT_TRUE(transport.publish("pay", body_with_id("s-1")));
    ASSERT_EQ(worker.drain().value(), 1U);
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(worker.metrics().snapshot().failed, 1U);
  }
}

namespace {
struct Charge {
  static constexpr std::string_view urn = "urn:t:charge";
  std::int64_t n = 0;
  bq::Value to_value() const { return bq::Value::object({{"n", n}}); }
  static Charge from_value(const bq::Value& v) { return Charge{v["n"].as_int64()}; }
};
}  // namespace

TEST(IdempotencyMiddleware, TheWrapperGuardsOneTypedHandler) {
  bq::memory::Transport transport;
  auto store = std::make_shared<idem::MemoryStore>();
  bq::Worker worker(transport, quiet());
  std::int64_t total = 0;
  worker.handle<Charge>(idem::idempotent(
      store, [&](const Charge& c, const bq::Message&) { total += c.n; }, options(true)));
  int untyped = 0;
  worker.handle("urn:t:other", idem::idempotent(store, [&](const bq::Message&) -> bq::Result<void> {
                  ++untyped;
                  return {};
                }));
  ASSERT_TRUE(transport.publish("pay", body_with_id("w-1")));
  ASSERT_TRUE(transport.publish("pay", body_with_id("w-1")));
  bq::MakeOptions make;
  make.queue = "pay";
  make.id = "w-2";
  const auto other = bq::Envelope::make("urn:t:other", bq::Value::object(), make).value();
  ASSERT_TRUE(transport.publish("pay", other.body()));
  ASSERT_TRUE(transport.publish("pay", other.body()));
  ASSERT_EQ(worker.drain().value(), 4U);
  EXPECT_EQ(total, 1);
  EXPECT_EQ(untyped, 1);
}

TEST(IdempotencyStores, TheRegistryOpensMemoryAndRefusesUnknownSchemes) {
  EXPECT_TRUE(idem::open_store("memory://?ttl=168h"));
  EXPECT_FALSE(idem::open_store("memory://?ttl=-1"));
  auto unknown = idem::open_store("nosuch://x");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("memory://"), std::string::npos);
}
