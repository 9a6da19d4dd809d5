// SPDX-License-Identifier: Apache-2.0
// The Redis idempotency store against the real server: the Go SDK's key
// layout, checked with a raw connection (a key written the way the Go store
// writes it is honoured; ours reads back the way Go reads it), claims kept
// out of that namespace, and two stores (two hosts) sharing claims.
#include "redis_test_support.hpp"

#include <babelqueue/idempotency/middleware.hpp>
#include <babelqueue/idempotency/store_registry.hpp>
#include <babelqueue/redis/idempotency_store.hpp>

#include <gtest/gtest.h>

namespace bq = babelqueue;
namespace idem = babelqueue::idempotency;
using bq::redis_test::plain_url;
using bq::redis_test::Raw;
using bq::redis_test::with_param;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<idem::Store> store(const std::string& parameters = {}) {
  bq::redis::register_idempotency_store();
  auto opened = idem::open_store(parameters.empty() ? plain_url() : with_param(plain_url(), parameters));
  if (!opened) throw std::runtime_error(opened.error().message());
  return std::move(*opened);
}

// A message with this meta.id, run through the middleware; true when the
// handler ran.
bool handled(idem::Store& s, const std::string& id, bool claim) {
  idem::Options options;
  options.claim = claim;
  options.log = {};
  idem::Middleware guard(std::shared_ptr<idem::Store>(&s, [](idem::Store*) {}), options);
  bq::MakeOptions make;
  make.id = id;
  const auto env = bq::Envelope::make("urn:t:charge", bq::Value::object(), make).value();
  const bq::Headers headers;
  bool ran = false;
  auto acked = guard.handle(bq::Message(env, "pay", headers), [&](const bq::Message&) -> bq::Result<void> {
    ran = true;
    return {};
  });
  EXPECT_TRUE(acked);
  return ran;
}

}  // namespace

TEST(RedisIdempotency, AKeyWrittenTheGoWayIsHonoured) {
  Raw raw;
  auto s = store();
  for (const bool claim : {false, true}) {
    const std::string id = "go-" + bq::uuid_v4();
    // The Go store's Remember with no TTL: SETNX bq:idemp:<id> "1".
    raw.run({"SETNX", "bq:idemp:" + id, "1"});
    EXPECT_TRUE(s->seen(id).value());
    EXPECT_FALSE(handled(*s, id, claim)) << "claim " << claim;
    // With a TTL, go-redis sends SET ... EX <s> NX.
    const std::string with_ttl = "go-ttl-" + bq::uuid_v4();
    raw.run({"SET", "bq:idemp:" + with_ttl, "1", "EX", "60", "NX"});
    EXPECT_FALSE(handled(*s, with_ttl, claim));
    raw.run({"DEL", "bq:idemp:" + id, "bq:idemp:" + with_ttl});
  }
}

TEST(RedisIdempotency, OurKeysReadTheGoWay) {
  Raw raw;
  for (const bool claim : {false, true}) {
    auto s = store("ttl=90s");
    const std::string id = "cpp-" + bq::uuid_v4();
    EXPECT_TRUE(handled(*s, id, claim));
    // Go's Seen is EXISTS bq:idemp:<id>; the value is "1", set with PX.
    EXPECT_EQ(raw.run({"GET", "bq:idemp:" + id}).at(0), "1");
    const long long ttl = raw.number({"PTTL", "bq:idemp:" + id});
    EXPECT_GT(ttl, 80000);
    EXPECT_LE(ttl, 90000);
    EXPECT_EQ(raw.number({"EXISTS", "bq:idemp-claim:" + id}), 0);  // the claim ended with the success
    EXPECT_FALSE(handled(*s, id, claim));
    ASSERT_TRUE(s->forget(id));
    EXPECT_EQ(raw.number({"EXISTS", "bq:idemp:" + id}), 0);
  }
  auto forever = store();
  const std::string id = "cpp-forever-" + bq::uuid_v4();
  ASSERT_TRUE(forever->remember(id));
  EXPECT_EQ(raw.number({"PTTL", "bq:idemp:" + id}), -1);
  ASSERT_TRUE(forever->forget(id));
}

TEST(RedisIdempotency, AClaimStaysOutOfTheGoSeenSet) {
  Raw raw;
  auto s = store();
  const std::string id = "claim-" + bq::uuid_v4();
  auto held = s->claim(id, 5s).value();
  ASSERT_EQ(held.state, idem::ClaimState::acquired);
  // A Go consumer checking EXISTS bq:idemp:<id> still runs the message.
  EXPECT_EQ(raw.number({"EXISTS", "bq:idemp:" + id}), 0);
  EXPECT_EQ(raw.run({"GET", "bq:idemp-claim:" + id}).at(0), held.token);
  const long long lease = raw.number({"PTTL", "bq:idemp-claim:" + id});
  EXPECT_GT(lease, 4000);
  EXPECT_LE(lease, 5000);
  ASSERT_TRUE(s->abandon(id, held.token));
  EXPECT_EQ(raw.number({"EXISTS", "bq:idemp-claim:" + id}), 0);
}

TEST(RedisIdempotency, TwoStoresShareClaimsAndTheTakeoverAfterTheLease) {
  auto a = store();
  auto b = store();
  const std::string id = "shared-" + bq::uuid_v4();
  auto first = a->claim(id, 300ms).value();
  ASSERT_EQ(first.state, idem::ClaimState::acquired);
  auto busy = b->claim(id, 300ms).value();
  EXPECT_EQ(busy.state, idem::ClaimState::in_flight);
  EXPECT_GT(busy.remaining, 0ms);
  EXPECT_LE(busy.remaining, 300ms);
  EXPECT_TRUE(a->renew(id, first.token, 300ms).value());
  std::this_thread::sleep_for(400ms);
  auto second = b->claim(id, 5s).value();
  ASSERT_EQ(second.state, idem::ClaimState::acquired);
  EXPECT_FALSE(a->renew(id, first.token, 5s).value());
  ASSERT_TRUE(a->complete(id, first.token));  // the late first holder's success: remembered
  EXPECT_TRUE(b->seen(id).value());
  ASSERT_TRUE(b->complete(id, second.token));
  EXPECT_EQ(Raw().number({"EXISTS", "bq:idemp-claim:" + id}), 0);
  ASSERT_TRUE(a->forget(id));
}

TEST(RedisIdempotency, PrefixesComeFromTheUrlAndAreChecked) {
  Raw raw;
  auto s = store("prefix=app:seen:&claim_prefix=app:claim:");
  const std::string id = "p-" + bq::uuid_v4();
  ASSERT_TRUE(s->remember(id));
  EXPECT_EQ(raw.run({"GET", "app:seen:" + id}).at(0), "1");
  ASSERT_TRUE(s->forget(id));
  bq::redis::register_idempotency_store();
  EXPECT_FALSE(idem::open_store(with_param(plain_url(), "prefix=same:&claim_prefix=same:")));
  EXPECT_FALSE(idem::open_store(with_param(plain_url(), "ttl=forever")));
  EXPECT_FALSE(idem::open_store(with_param(plain_url(), "no_such_parameter=1")));
}
