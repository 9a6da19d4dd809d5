// SPDX-License-Identifier: Apache-2.0
// The transport contract: one value-parameterized GoogleTest suite that every
// Transport must pass, checked against what capabilities() claims.
//
// Use it from exactly one .cpp of a test program (the TEST_Ps are defined in
// this header):
//
//   #include "transport_contract.hpp"
//   INSTANTIATE_TEST_SUITE_P(Redis, TransportContract,
//       testing::Values(bq::test_support::ContractTarget::from_url("redis",
//       "redis://127.0.0.1:6379?visibility_timeout=1")
//                           .with_visibility_timeout(std::chrono::seconds(1))),
//       bq::test_support::ContractTarget::name_of);
//
// Each test opens a fresh transport with target.open() and works on queues of
// its own (a random suffix), so targets may share one broker, and leftovers of
// an earlier run never interfere. Tests a transport's capabilities exclude are
// skipped, not passed.
#pragma once

#include <babelqueue/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/uuid.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace babelqueue::test_support {

using namespace std::chrono_literals;

struct ContractTarget {
  std::string name;  // the test name suffix: letters, digits and '_'
  // Opens a new transport on the target's broker. Every transport it opens
  // must use visibility_timeout below.
  std::function<Result<std::unique_ptr<Transport>>()> open;
  // The visibility timeout the opened transports use; zero skips the tests
  // that wait for it (keep it short: the suite sleeps a few times this).
  std::chrono::milliseconds visibility_timeout{0};
  // How late an operation may return and still count as "at once"; a
  // networked broker needs more than an in-process one.
  std::chrono::milliseconds slack{250};
  // False where stats() gives approximate counts (SQS).
  bool exact_stats = true;

  static ContractTarget from_url(std::string name, std::string url) {
    ContractTarget target;
    target.name = std::move(name);
    target.open = [url = std::move(url)] { return open_transport(url); };
    return target;
  }
  ContractTarget with_visibility_timeout(std::chrono::milliseconds timeout) && {
    visibility_timeout = timeout;
    return std::move(*this);
  }
  ContractTarget with_slack(std::chrono::milliseconds value) && {
    slack = value;
    return std::move(*this);
  }

  // For INSTANTIATE_TEST_SUITE_P's name generator.
  static std::string name_of(const ::testing::TestParamInfo<ContractTarget>& info) { return info.param.name; }
};

// gtest prints parameters; keep it to the name.
inline void PrintTo(const ContractTarget& target, std::ostream* out) { *out << target.name; }

// A body with what JSON text may hold: multi-byte UTF-8, escapes, and size.
inline std::string contract_body(std::string_view tag) {
  return R"({"job":"urn:contract:test","trace_id":"t-)" + std::string(tag) +
         R"(","data":{"text":"h\u00e9llo \"w\" \\ 中文 🎉\n","n":1e-05},"attempts":0,"meta":{}})";
}

}  // namespace babelqueue::test_support

// The fixture lives in the global namespace so that INSTANTIATE_TEST_SUITE_P
// can name it from anywhere (hence the using-directive for 100ms, 2s, ...).
using namespace std::chrono_literals;  // NOLINT(google-global-names-in-headers): test-only, one includer

class TransportContract : public ::testing::TestWithParam<babelqueue::test_support::ContractTarget> {
 protected:
  using Clock = std::chrono::steady_clock;
  using Capabilities = babelqueue::Capabilities;
  using Delivery = babelqueue::Delivery;
  using PublishOptions = babelqueue::PublishOptions;
  using Transport = babelqueue::Transport;
  using Errc = babelqueue::Errc;
  using OutgoingMessage = babelqueue::OutgoingMessage;
  template <class T>
  using Result = babelqueue::Result<T>;
  static constexpr std::string_view kReplayBypassHeader = babelqueue::kReplayBypassHeader;

  static std::string contract_body(std::string_view tag) { return babelqueue::test_support::contract_body(tag); }

  void SetUp() override {
    auto opened = GetParam().open();
    ASSERT_TRUE(opened) << opened.error().message();
    transport_ = std::move(*opened);
    caps_ = transport_->capabilities();
    suffix_ = babelqueue::uuid_v4().substr(0, 8);
  }

  void TearDown() override {
    if (transport_) transport_->close(1s);
  }

  // A queue no other test (or earlier run) uses.
  std::string queue(std::string_view role = "q") const {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return "contract-" + std::string(info->name()) + "-" + std::string(role) + "-" + suffix_;
  }

  Transport& transport() { return *transport_; }

  void publish(const std::string& queue_name, std::string_view body, const PublishOptions& options = {}) {
    auto published = transport_->publish(queue_name, body, options);
    ASSERT_TRUE(published) << published.error().message();
  }

  std::vector<Delivery> receive(const std::string& queue_name, std::size_t max, std::chrono::milliseconds wait) {
    auto received = transport_->receive(queue_name, max, wait);
    EXPECT_TRUE(received) << received.error().message();
    return received ? std::move(*received) : std::vector<Delivery>{};
  }

  // Receives until count messages arrived or wait passed.
  std::vector<Delivery> receive_all(const std::string& queue_name, std::size_t count,
                                    std::chrono::milliseconds wait = 5s) {
    std::vector<Delivery> all;
    const auto deadline = Clock::now() + wait;
    while (all.size() < count && Clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      for (Delivery& delivery : receive(queue_name, count - all.size(), std::max(left, 1ms))) {
        all.push_back(std::move(delivery));
      }
    }
    return all;
  }

  void ack(const Delivery& delivery) {
    auto acked = transport_->ack(delivery);
    ASSERT_TRUE(acked) << acked.error().message();
  }

  void expect_empty(const std::string& queue_name, std::chrono::milliseconds wait = 100ms) {
    EXPECT_TRUE(receive(queue_name, 10, wait).empty()) << "queue " << queue_name << " should be empty";
  }

  static std::chrono::milliseconds since(Clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  }

  std::unique_ptr<Transport> transport_;
  Capabilities caps_;
  std::string suffix_;
};

TEST_P(TransportContract, PublishReceiveAckKeepsTheBytes) {
  const std::string q = queue();
  std::string big = contract_body("big");
  big.insert(big.size() - 1, ",\"pad\":\"" + std::string(64 * 1024, 'x') + "\"");
  publish(q, contract_body("small"));
  publish(q, big);
  const auto received = receive_all(q, 2);
  ASSERT_EQ(received.size(), 2U);
  std::multiset<std::string> bodies{received[0].body, received[1].body};
  EXPECT_EQ(bodies, (std::multiset<std::string>{contract_body("small"), big}));
  for (const Delivery& delivery : received) {
    EXPECT_EQ(delivery.queue, q);
    ack(delivery);
  }
  expect_empty(q);
}

TEST_P(TransportContract, ReceiveOnAnEmptyQueueWaitsForTheWholeWait) {
  const auto start = Clock::now();
  const auto received = receive(queue(), 5, 300ms);
  const auto elapsed = since(start);
  EXPECT_TRUE(received.empty());
  EXPECT_GE(elapsed, 290ms) << "returned too early";
  EXPECT_LE(elapsed, 300ms + GetParam().slack) << "returned too late";
}

TEST_P(TransportContract, ReceiveReturnsAsSoonAsAMessageArrives) {
  const std::string q = queue();
  std::thread producer([&] {
    std::this_thread::sleep_for(100ms);
    publish(q, contract_body("late"));
  });
  const auto start = Clock::now();
  const auto received = receive(q, 5, 5s);
  const auto elapsed = since(start);
  producer.join();
  ASSERT_EQ(received.size(), 1U);
  EXPECT_LE(elapsed, 100ms + GetParam().slack);
  ack(received[0]);
}

TEST_P(TransportContract, ReceiveTakesAtMostMax) {
  const std::string q = queue();
  for (int i = 0; i < 5; ++i) publish(q, contract_body(std::to_string(i)));
  const auto first = receive(q, 2, 2s);
  EXPECT_GE(first.size(), 1U);
  EXPECT_LE(first.size(), 2U);
  auto rest = receive_all(q, 5 - first.size());
  EXPECT_EQ(first.size() + rest.size(), 5U);
  for (const Delivery& delivery : first) ack(delivery);
  for (const Delivery& delivery : rest) ack(delivery);
}

TEST_P(TransportContract, QueuesAreSeparate) {
  publish(queue("a"), contract_body("a"));
  expect_empty(queue("b"));
  const auto received = receive_all(queue("a"), 1);
  ASSERT_EQ(received.size(), 1U);
  ack(received[0]);
}

TEST_P(TransportContract, FirstInFirstOutWhereOrdered) {
  if (!caps_.ordered) GTEST_SKIP() << "not ordered";
  const std::string q = queue();
  constexpr int kCount = 20;
  for (int i = 0; i < kCount; ++i) publish(q, "m" + std::to_string(i));
  std::vector<std::string> order;
  while (order.size() < kCount) {
    const auto batch = receive(q, 7, 2s);
    ASSERT_FALSE(batch.empty()) << "only " << order.size() << " received";
    for (const Delivery& delivery : batch) {
      order.push_back(delivery.body);
      ack(delivery);
    }
  }
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], "m" + std::to_string(i));
}

TEST_P(TransportContract, ReleaseMakesTheMessageReceivableAgain) {
  const std::string q = queue();
  PublishOptions options;
  if (caps_.headers) options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  publish(q, contract_body("r"), options);
  auto first = receive_all(q, 1);
  ASSERT_EQ(first.size(), 1U);
  auto released = transport().release(first[0]);
  ASSERT_TRUE(released) << released.error().message();
  auto second = receive_all(q, 1);
  ASSERT_EQ(second.size(), 1U);
  EXPECT_EQ(second[0].body, contract_body("r"));
  if (caps_.headers) {
    EXPECT_EQ(second[0].headers.at("traceparent"), options.headers.at("traceparent"));
  }
  if (caps_.delivery_count) {
    ASSERT_TRUE(first[0].native_attempts && second[0].native_attempts);
    EXPECT_EQ(*second[0].native_attempts, *first[0].native_attempts + 1);
  }
  ack(second[0]);
  expect_empty(q);
}

TEST_P(TransportContract, ReleaseWithADelayHidesTheMessageUntilThen) {
  if (!caps_.native_delay) GTEST_SKIP() << "no native delay";
  const std::string q = queue();
  publish(q, contract_body("d"));
  auto first = receive_all(q, 1);
  ASSERT_EQ(first.size(), 1U);
  const auto released_at = Clock::now();
  auto released = transport().release(first[0], 600ms);
  ASSERT_TRUE(released) << released.error().message();
  expect_empty(q, 200ms);
  auto again = receive_all(q, 1, 3s);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_GE(since(released_at), 590ms);
  ack(again[0]);
}

TEST_P(TransportContract, DelayedPublishIsHiddenUntilDueAndDoesNotBlockOthers) {
  const std::string q = queue();
  PublishOptions delayed;
  delayed.delay = 600ms;
  if (!caps_.native_delay) {
    auto refused = transport().publish(q, contract_body("delayed"), delayed);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), Errc::unsupported);
    return;
  }
  const auto published_at = Clock::now();
  publish(q, contract_body("delayed"), delayed);
  publish(q, contract_body("now"));
  auto first = receive(q, 10, 2s);
  ASSERT_EQ(first.size(), 1U);
  EXPECT_EQ(first[0].body, contract_body("now"));
  ack(first[0]);
  auto later = receive_all(q, 1, 3s);
  ASSERT_EQ(later.size(), 1U);
  EXPECT_EQ(later[0].body, contract_body("delayed"));
  EXPECT_GE(since(published_at), 590ms);
  ack(later[0]);
}

TEST_P(TransportContract, HeadersRoundTrip) {
  if (!caps_.headers) GTEST_SKIP() << "no headers";
  const std::string q = queue();
  PublishOptions options;
  options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                     {"tracestate", "vendor=a:b,other=\"quoted\""},
                     {std::string(kReplayBypassHeader), "1"},
                     {"x-unicode", "héllo 中文"}};
  publish(q, contract_body("h"), options);
  publish(q, contract_body("no-headers"));
  const auto received = receive_all(q, 2);
  ASSERT_EQ(received.size(), 2U);
  for (const Delivery& delivery : received) {
    if (delivery.body == contract_body("h")) {
      for (const auto& [name, value] : options.headers) {
        ASSERT_TRUE(delivery.headers.contains(name)) << "header " << name << " lost";
        EXPECT_EQ(delivery.headers.at(name), value);
      }
    } else {
      EXPECT_FALSE(delivery.headers.contains("traceparent"));
    }
    ack(delivery);
  }
}

TEST_P(TransportContract, AStaleTokenSettlesNothing) {
  if (!caps_.redelivers_unsettled || GetParam().visibility_timeout.count() == 0) {
    GTEST_SKIP() << "no visibility timeout";
  }
  const std::string q = queue();
  publish(q, contract_body("stale"));
  auto first = receive_all(q, 1);
  ASSERT_EQ(first.size(), 1U);
  auto second = receive_all(q, 1, GetParam().visibility_timeout * 4 + 2s);
  ASSERT_EQ(second.size(), 1U) << "the unsettled message did not come back";
  auto stale_ack = transport().ack(first[0]);
  ASSERT_FALSE(stale_ack);
  EXPECT_EQ(stale_ack.error().code(), Errc::not_found) << stale_ack.error().message();
  auto stale_release = transport().release(first[0]);
  ASSERT_FALSE(stale_release);
  EXPECT_EQ(stale_release.error().code(), Errc::not_found);
  ack(second[0]);
  expect_empty(q);
}

TEST_P(TransportContract, AnUnsettledMessageComesBackAfterTheVisibilityTimeout) {
  const auto timeout = GetParam().visibility_timeout;
  if (!caps_.redelivers_unsettled || timeout.count() == 0) GTEST_SKIP() << "no visibility timeout";
  const std::string q = queue();
  publish(q, contract_body("vt"));
  auto first = receive_all(q, 1);
  ASSERT_EQ(first.size(), 1U);
  const auto received_at = Clock::now();
  // Held by a "dead worker": not visible before the timeout.
  expect_empty(q, timeout / 2);
  auto again = receive_all(q, 1, timeout * 4 + 2s);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_GE(since(received_at), timeout - 10ms);
  EXPECT_EQ(again[0].body, contract_body("vt"));
  if (caps_.delivery_count) {
    ASSERT_TRUE(again[0].native_attempts && first[0].native_attempts);
    EXPECT_EQ(*again[0].native_attempts, *first[0].native_attempts + 1);
  }
  ack(again[0]);
}

TEST_P(TransportContract, CapabilitiesStateTheLease) {
  if (!caps_.redelivers_unsettled || GetParam().visibility_timeout.count() == 0)
    GTEST_SKIP() << "no visibility timeout";
  // The runtime extends long handlers' leases by this much.
  EXPECT_EQ(caps_.lease, GetParam().visibility_timeout);
}

TEST_P(TransportContract, ExtendKeepsALongHandlersMessageReserved) {
  const auto timeout = GetParam().visibility_timeout;
  if (!caps_.extendable_lease || !caps_.redelivers_unsettled || timeout.count() == 0) {
    GTEST_SKIP() << "no extendable lease";
  }
  const std::string q = queue();
  publish(q, contract_body("long"));
  auto first = receive_all(q, 1);
  ASSERT_EQ(first.size(), 1U);
  auto extended = transport().extend(first[0], timeout * 4);
  ASSERT_TRUE(extended) << extended.error().message();
  expect_empty(q, timeout * 2);
  ack(first[0]);
  expect_empty(q);
}

// The runtime checks a prefetched message's lease before its handler
// starts: a transport whose leases expire says when (Delivery::lease_deadline),
// no later than the lease it granted.
TEST_P(TransportContract, ADeliveryCarriesItsLeaseDeadline) {
  const auto timeout = GetParam().visibility_timeout;
  if (!caps_.extendable_lease || !caps_.redelivers_unsettled || timeout.count() == 0) {
    GTEST_SKIP() << "no expiring lease";
  }
  const std::string q = queue();
  publish(q, contract_body("leased"));
  const auto before = std::chrono::steady_clock::now();
  auto got = receive_all(q, 1);
  const auto after = std::chrono::steady_clock::now();
  ASSERT_EQ(got.size(), 1U);
  ASSERT_TRUE(got[0].lease_deadline) << "an expiring lease without a deadline";
  EXPECT_GE(*got[0].lease_deadline, before + timeout);
  EXPECT_LE(*got[0].lease_deadline, after + timeout);
  ack(got[0]);
}

TEST_P(TransportContract, BatchPublishDeliversEveryMessage) {
  std::vector<OutgoingMessage> batch;
  for (int i = 0; i < 10; ++i) {
    OutgoingMessage message;
    message.queue = queue(i % 2 == 0 ? "even" : "odd");
    message.body = contract_body(std::to_string(i));
    if (caps_.headers) message.options.headers = {{"x-index", std::to_string(i)}};
    batch.push_back(std::move(message));
  }
  auto published = transport().publish_batch(batch);
  ASSERT_TRUE(published) << published.error().message();
  ASSERT_TRUE(transport().publish_batch({}));
  for (const char* role : {"even", "odd"}) {
    auto received = receive_all(queue(role), 5);
    ASSERT_EQ(received.size(), 5U) << role;
    for (const Delivery& delivery : received) {
      if (caps_.headers) {
        const auto index = std::stoul(delivery.headers.at("x-index"));
        EXPECT_EQ(delivery.body, batch[index].body);
      }
      ack(delivery);
    }
    expect_empty(queue(role), 50ms);
  }
}

TEST_P(TransportContract, StatsCountReadyReservedAndDelayed) {
  const std::string q = queue();
  auto empty = transport().stats(q);
  if (!empty && empty.error().code() == Errc::unsupported) GTEST_SKIP() << "no stats";
  ASSERT_TRUE(empty) << empty.error().message();
  for (int i = 0; i < 3; ++i) publish(q, contract_body(std::to_string(i)));
  if (caps_.native_delay) {
    PublishOptions delayed;
    delayed.delay = 10s;
    publish(q, contract_body("delayed"), delayed);
  }
  const auto held = receive(q, 1, 2s);
  ASSERT_EQ(held.size(), 1U);
  auto counts = transport().stats(q);
  ASSERT_TRUE(counts) << counts.error().message();
  if (GetParam().exact_stats) {
    EXPECT_EQ(counts->ready, 2);
    EXPECT_EQ(counts->reserved, 1);
    if (caps_.native_delay) {
      EXPECT_EQ(counts->delayed, 1);
    }
  } else {
    EXPECT_GE(counts->ready + counts->reserved, 1);
  }
  ack(held[0]);
}

// At least once, settled exactly once: every message is received, and exactly
// one ack of each succeeds. A message may be received twice only when its
// first reservation expired (a slow machine against a short visibility
// timeout) — then the first ack answers not_found, which the test counts.
TEST_P(TransportContract, ConcurrentProducersAndConsumersAckEachMessageOnce) {
  const std::string q = queue();
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 150;
  constexpr std::size_t kTotal = kProducers * kPerProducer;
  std::mutex mutex;
  std::multiset<std::string> acked_bodies;  // guarded by mutex
  std::size_t receipts = 0;                 // guarded by mutex
  std::size_t stale_acks = 0;               // guarded by mutex
  std::string first_error;                  // guarded by mutex
  std::atomic<std::size_t> acked{0};
  std::atomic<bool> failed{false};
  auto fail = [&](const std::string& what) {
    const std::lock_guard lock(mutex);
    if (first_error.empty()) first_error = what;
    failed = true;
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer && !failed; ++i) {
        auto published = transport().publish(q, "p" + std::to_string(p) + "-" + std::to_string(i));
        if (!published) fail("publish: " + published.error().message());
      }
    });
  }
  const auto deadline = Clock::now() + 30s;
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&] {
      while (acked.load() < kTotal && Clock::now() < deadline && !failed) {
        auto batch = transport().receive(q, 10, 100ms);
        if (!batch) {
          fail("receive: " + batch.error().message());
          return;
        }
        for (const Delivery& delivery : *batch) {
          auto settled = transport().ack(delivery);
          const std::lock_guard lock(mutex);
          ++receipts;
          if (settled) {
            acked_bodies.insert(delivery.body);
            ++acked;
          } else if (settled.error().code() == Errc::not_found) {
            ++stale_acks;
          } else {
            if (first_error.empty()) first_error = "ack: " + settled.error().message();
            failed = true;
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_FALSE(failed) << first_error;
  ASSERT_EQ(acked_bodies.size(), kTotal);
  for (int p = 0; p < kProducers; ++p) {
    for (int i = 0; i < kPerProducer; ++i) {
      EXPECT_EQ(acked_bodies.count("p" + std::to_string(p) + "-" + std::to_string(i)), 1U);
    }
  }
  EXPECT_EQ(receipts, kTotal + stale_acks) << "a message was received twice without its first lease expiring";
  if (stale_acks > 0) std::cout << "[          ] " << stale_acks << " reservations expired under load\n";
  expect_empty(q);
}

TEST_P(TransportContract, CloseUnblocksAWaitingReceive) {
  const std::string q = queue();
  std::optional<Result<std::vector<Delivery>>> outcome;
  const auto start = Clock::now();
  std::thread receiver([&] { outcome.emplace(transport().receive(q, 1, 10s)); });
  std::this_thread::sleep_for(150ms);
  transport().close(2s);
  receiver.join();
  EXPECT_LE(since(start), 150ms + GetParam().slack + 500ms);
  ASSERT_TRUE(outcome.has_value());
  ASSERT_FALSE(*outcome) << "receive after close should fail";
  EXPECT_EQ(outcome->error().code(), Errc::closed) << outcome->error().message();
  auto after = transport().publish(q, "x");
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code(), Errc::closed);
  transport().close();  // idempotent
}

// peek() shows what a receive would get, and takes nothing: the messages are
// received afterwards as if nobody had looked (same delivery count). A
// transport without peek says so (Errc::unsupported, with its reason).
TEST_P(TransportContract, PeekShowsWaitingMessagesWithoutTakingThem) {
  const std::string q = queue();
  auto nothing = transport().peek(q, 5);
  if (!caps_.peek) {
    ASSERT_FALSE(nothing) << "capabilities().peek is false, yet peek() answered";
    EXPECT_EQ(nothing.error().code(), Errc::unsupported);
    EXPECT_FALSE(nothing.error().message().empty());
    GTEST_SKIP() << "no peek: " << nothing.error().message();
  }
  ASSERT_TRUE(nothing) << nothing.error().message();
  EXPECT_TRUE(nothing->empty());
  PublishOptions options;
  if (caps_.headers) options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  const std::vector<std::string> bodies{contract_body("p0"), contract_body("p1"), contract_body("p2")};
  for (const std::string& body : bodies) {
    publish(q, body, options);
    publish(queue("control"), body, options);
  }
  // Brokers that make a published message visible to readers a moment later
  // (a log's fetch) get a few tries.
  Result<std::vector<babelqueue::PeekedMessage>> all = std::vector<babelqueue::PeekedMessage>{};
  for (const auto deadline = Clock::now() + 5s; Clock::now() < deadline;) {
    all = transport().peek(q, 10);
    ASSERT_TRUE(all) << all.error().message();
    if (all->size() >= bodies.size()) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(all->size(), bodies.size());
  std::multiset<std::string> shown;
  for (const auto& message : *all) shown.insert(message.body);
  EXPECT_EQ(shown, std::multiset<std::string>(bodies.begin(), bodies.end()));
  if (caps_.ordered) {
    for (std::size_t i = 0; i < bodies.size(); ++i) EXPECT_EQ((*all)[i].body, bodies[i]) << "at " << i;
  }
  if (caps_.headers) {
    EXPECT_EQ((*all)[0].headers.at("traceparent"), options.headers.at("traceparent"));
  }
  auto two = transport().peek(q, 2);
  ASSERT_TRUE(two) << two.error().message();
  EXPECT_EQ(two->size(), 2U);
  if (caps_.ordered && two->size() == 2) {
    EXPECT_EQ((*two)[1].body, bodies[1]);
  }

  // Nothing was taken: all three are received, with the delivery count of
  // messages nobody looked at.
  // (Each queue settled before the next is received: a Kafka consumer that
  // subscribes to another topic gives its partitions back.)
  const auto received = receive_all(q, bodies.size());
  ASSERT_EQ(received.size(), bodies.size());
  for (const Delivery& delivery : received) ack(delivery);
  const auto control = receive_all(queue("control"), bodies.size());
  ASSERT_EQ(control.size(), bodies.size());
  for (const Delivery& delivery : control) ack(delivery);
  for (const Delivery& delivery : received) {
    EXPECT_EQ(delivery.native_attempts, control[0].native_attempts) << "peek counted as a delivery";
  }
  // Acknowledged, they are gone from the peek too (Kafka: once committed, a
  // moment after the ack).
  auto acked = transport().peek(q, 10);
  for (const auto deadline = Clock::now() + 5s; acked && !acked->empty() && Clock::now() < deadline;) {
    std::this_thread::sleep_for(50ms);
    acked = transport().peek(q, 10);
  }
  ASSERT_TRUE(acked) << acked.error().message();
  EXPECT_TRUE(acked->empty()) << "acknowledged messages are still shown";

  auto zero = transport().peek(q, 0);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code(), Errc::invalid_argument);
  auto no_queue = transport().peek("", 1);
  ASSERT_FALSE(no_queue);
  EXPECT_EQ(no_queue.error().code(), Errc::invalid_argument);
}

TEST_P(TransportContract, RefusesAnEmptyQueueNameAndAZeroMax) {
  auto no_queue = transport().publish("", "x");
  ASSERT_FALSE(no_queue);
  EXPECT_EQ(no_queue.error().code(), Errc::invalid_argument);
  auto zero = transport().receive(queue(), 0, 0ms);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code(), Errc::invalid_argument);
}

TEST_P(TransportContract, NamesADeadLetterQueue) {
  const std::string dlq = transport().dead_letter_queue("orders");
  EXPECT_FALSE(dlq.empty());
  EXPECT_NE(dlq, "orders");
}
