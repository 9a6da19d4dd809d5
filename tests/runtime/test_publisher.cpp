// SPDX-License-Identifier: Apache-2.0
// Publisher without a Worker: one message, a batch and typed messages; the
// confirmation synchronously, through a callback and a future; retries under
// the backoff (and none for an unknown outcome unless asked); meta.queue from
// one source; the publish side of the middleware. On the memory and SQLite
// transports; failures the real transports cannot produce on demand come
// from FaultInjectingTransport (a refusal by a real broker: tests/redis).
#include "fault_injecting_transport.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/publisher.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace bq = babelqueue;
using bq::test_support::FaultInjectingTransport;
using namespace std::chrono_literals;

namespace {

struct OrderCreated {
  static constexpr std::string_view urn = "urn:babel:orders:created";
  std::int64_t order_id = 0;
  bq::Value to_value() const { return bq::Value::object({{"order_id", order_id}}); }
  static OrderCreated from_value(const bq::Value& v) { return {v["order_id"].as_int64()}; }
};

bq::PublisherOptions quick(std::string queue = "orders") {
  bq::PublisherOptions o;
  o.default_queue = std::move(queue);
  o.retry_backoff = bq::BackoffPolicy{1ms, 2.0, 5ms, 0.0};
  o.log = {};
  return o;
}

std::vector<bq::Envelope> take_all(bq::Transport& transport, std::string_view queue) {
  std::vector<bq::Envelope> out;
  for (;;) {
    auto batch = transport.receive(queue, 100, 10ms);
    if (!batch || batch->empty()) return out;
    for (auto& d : *batch) {
      EXPECT_TRUE(transport.ack(d));
      out.push_back(bq::Envelope::decode(d.body).value());
    }
  }
}

class PublisherTest : public ::testing::Test {
 protected:
  bq::memory::Transport memory_;
  FaultInjectingTransport faulty_{memory_};
};

}  // namespace

TEST_F(PublisherTest, PublishesOneAndReturnsTheConfirmedReceipt) {
  bq::Publisher publisher(memory_, quick());
  auto receipt = publisher.publish("urn:babel:orders:created", bq::Value::object({{"order_id", 1}}));
  ASSERT_TRUE(receipt) << receipt.error().message();
  EXPECT_EQ(receipt->queue, "orders");
  EXPECT_EQ(receipt->tries, 1);
  const auto held = take_all(memory_, "orders");
  ASSERT_EQ(held.size(), 1U);
  EXPECT_EQ(held[0].id(), receipt->id);
  EXPECT_EQ(held[0].queue(), "orders") << "meta.queue is the queue it was sent to";
}

TEST_F(PublisherTest, TypedMessagesAndAnotherQueue) {
  bq::Publisher publisher(memory_, quick());
  auto receipt = publisher.publish(OrderCreated{1042}, {.queue = "priority"});
  ASSERT_TRUE(receipt) << receipt.error().message();
  EXPECT_EQ(receipt->queue, "priority");
  const auto held = take_all(memory_, "priority");
  ASSERT_EQ(held.size(), 1U);
  EXPECT_EQ(held[0].queue(), "priority");
  EXPECT_EQ(held[0].data_as<OrderCreated>().order_id, 1042);
}

TEST_F(PublisherTest, WithoutAQueueNothingIsSent) {
  bq::Publisher publisher(memory_, quick(""));
  auto receipt = publisher.publish(OrderCreated{1});
  ASSERT_FALSE(receipt);
  EXPECT_EQ(receipt.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(receipt.error().message().find("default_queue"), std::string::npos) << receipt.error().message();
}

TEST_F(PublisherTest, ABatchOfTypedMessagesIsConfirmedInOrder) {
  bq::Publisher publisher(memory_, quick());
  const std::vector<OrderCreated> orders{{1}, {2}, {3}};
  auto receipts = publisher.publish_batch(std::span<const OrderCreated>(orders));
  ASSERT_TRUE(receipts) << receipts.error().message();
  ASSERT_EQ(receipts->size(), 3U);
  const auto held = take_all(memory_, "orders");
  ASSERT_EQ(held.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(held[i].id(), (*receipts)[i].id);
    EXPECT_EQ(held[i].data_as<OrderCreated>().order_id, orders[i].order_id);
  }
}

// Issue: an envelope made without a queue carries meta.queue "default"; sent
// to "orders" its dead letter would point back to "default".
TEST_F(PublisherTest, AnEnvelopeNamingAnotherQueueIsRefusedAndNothingIsSent) {
  bq::Publisher publisher(memory_, quick());
  const auto made_without_queue = bq::Envelope::make(OrderCreated{7}).value();
  ASSERT_EQ(made_without_queue.queue(), "default");
  auto refused = publisher.publish(made_without_queue, {.queue = "orders"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(refused.error().message().find("meta.queue 'default'"), std::string::npos) << refused.error().message();
  EXPECT_TRUE(take_all(memory_, "orders").empty());

  // In a batch, one such envelope refuses the batch before anything is sent.
  const std::vector<bq::Envelope> batch{bq::Envelope::make(OrderCreated{8}, {.queue = "orders"}).value(),
                                        made_without_queue};
  auto batch_refused = publisher.publish_batch(batch, {.queue = "orders"});
  ASSERT_FALSE(batch_refused);
  EXPECT_NE(batch_refused.error().message().find("message 1 of the batch"), std::string::npos);
  EXPECT_TRUE(take_all(memory_, "orders").empty());

  // Without a queue of its own, an envelope goes to its meta.queue.
  auto own = publisher.publish(made_without_queue);
  ASSERT_TRUE(own) << own.error().message();
  EXPECT_EQ(own->queue, "default");
  EXPECT_EQ(take_all(memory_, "default").size(), 1U);
}

TEST_F(PublisherTest, AnEnvelopeThatIsNotAcceptableIsRefused) {
  bq::Publisher publisher(memory_, quick());
  const auto decoded = bq::Envelope::decode(R"({"job":"urn:x","meta":{"queue":"orders"},"data":{}})").value();
  auto refused = publisher.publish(decoded);  // no trace_id, no schema_version
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::rejected);
  EXPECT_FALSE(refused.error().retriable());
  EXPECT_TRUE(refused.error().rejection());
  EXPECT_TRUE(take_all(memory_, "orders").empty());
}

TEST_F(PublisherTest, ARetriableFailureIsRetriedUnderTheBackoff) {
  bq::Publisher publisher(faulty_, quick());
  faulty_.fail_next_publishes(2, bq::Errc::connection);
  auto receipt = publisher.publish(OrderCreated{1});
  ASSERT_TRUE(receipt) << receipt.error().message();
  EXPECT_EQ(receipt->tries, 3);
  EXPECT_EQ(take_all(memory_, "orders").size(), 1U);

  faulty_.fail_next_publishes(3, bq::Errc::timeout);
  auto exhausted = publisher.publish(OrderCreated{2});
  ASSERT_FALSE(exhausted);
  EXPECT_EQ(exhausted.error().code(), bq::Errc::timeout);
  EXPECT_NE(exhausted.error().message().find("after 3 tries"), std::string::npos) << exhausted.error().message();
  EXPECT_TRUE(take_all(memory_, "orders").empty());
}

TEST_F(PublisherTest, ATerminalFailureIsNotRetried) {
  bq::Publisher publisher(faulty_, quick());
  faulty_.fail_next_publishes(5, bq::Errc::auth);
  auto refused = publisher.publish(OrderCreated{1});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::auth);
  EXPECT_EQ(faulty_.injected_failures(), 1U);
}

TEST_F(PublisherTest, AnUnknownOutcomeIsReportedNotResentUnlessAsked) {
  {
    bq::Publisher publisher(faulty_, quick());
    faulty_.fail_next_publishes(1, bq::Errc::outcome_unknown);
    auto unknown = publisher.publish(OrderCreated{1});
    ASSERT_FALSE(unknown);
    EXPECT_TRUE(unknown.error().outcome_unknown());
    EXPECT_EQ(faulty_.injected_failures(), 1U) << "sent once: a second copy could duplicate it";
  }
  auto options = quick();
  options.retry_outcome_unknown = true;
  bq::Publisher publisher(faulty_, options);
  faulty_.fail_next_publishes(1, bq::Errc::outcome_unknown);
  auto receipt = publisher.publish(OrderCreated{2});
  ASSERT_TRUE(receipt) << receipt.error().message();
  EXPECT_EQ(receipt->tries, 2);
}

TEST_F(PublisherTest, WithoutABatchSendEachMessageOfABatchHasItsOwnRetries) {
  ASSERT_FALSE(faulty_.capabilities().batch_publish);
  bq::Publisher publisher(faulty_, quick());
  const std::vector<OrderCreated> orders{{1}, {2}, {3}};
  faulty_.fail_next_publishes(1, bq::Errc::connection);
  auto receipts = publisher.publish_batch(std::span<const OrderCreated>(orders));
  ASSERT_TRUE(receipts) << receipts.error().message();
  EXPECT_EQ((*receipts)[0].tries, 2);
  EXPECT_EQ((*receipts)[1].tries, 1);
  EXPECT_EQ(take_all(memory_, "orders").size(), 3U);
}

// A batch sent in one round trip may fail part-way: sending it again may
// repeat what was accepted, so it is retried only where a duplicate is.
TEST(PublisherBatch, AFailedBatchIsResentOnlyWhereADuplicateIsAccepted) {
  const auto path = std::filesystem::temp_directory_path() / ("bq-publisher-" + bq::uuid_v4() + ".db");
  bq::sqlite::Transport::Options sqlite_options;
  sqlite_options.path = path.string();
  {
    auto sqlite = bq::sqlite::Transport::open(sqlite_options).value();
    FaultInjectingTransport faulty(*sqlite);
    ASSERT_TRUE(faulty.capabilities().batch_publish);
    const std::vector<OrderCreated> orders{{1}, {2}, {3}};
    {
      bq::Publisher publisher(faulty, quick());
      faulty.fail_next_publishes(1, bq::Errc::connection);
      auto failed = publisher.publish_batch(std::span<const OrderCreated>(orders));
      ASSERT_FALSE(failed);
      EXPECT_EQ(faulty.injected_failures(), 1U);
      EXPECT_TRUE(take_all(*sqlite, "orders").empty());
    }
    auto options = quick();
    options.retry_outcome_unknown = true;
    bq::Publisher publisher(faulty, options);
    faulty.fail_next_publishes(1, bq::Errc::connection, "orders");
    auto receipts = publisher.publish_batch(std::span<const OrderCreated>(orders));
    ASSERT_TRUE(receipts) << receipts.error().message();
    EXPECT_EQ((*receipts)[0].tries, 2);
    EXPECT_EQ(take_all(*sqlite, "orders").size(), 3U);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
}

TEST_F(PublisherTest, AsyncConfirmationsThroughACallbackAndAFuture) {
  bq::Publisher publisher(faulty_, quick());
  std::mutex mutex;
  std::vector<bq::Result<bq::PublishReceipt>> outcomes;
  publisher.publish_async(OrderCreated{1}, [&](bq::Result<bq::PublishReceipt> r) {
    std::lock_guard lock(mutex);
    outcomes.push_back(std::move(r));
  });
  auto future = publisher.publish_async(OrderCreated{2});
  const auto confirmed = future.get();
  ASSERT_TRUE(confirmed) << confirmed.error().message();
  publisher.flush();
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(outcomes.size(), 1U);
    ASSERT_TRUE(outcomes[0]);
  }

  faulty_.fail_next_publishes(10, bq::Errc::auth);
  auto refused = publisher.publish_async(OrderCreated{3}).get();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::auth);
  publisher.publish_async(OrderCreated{4}, [&](bq::Result<bq::PublishReceipt> r) {
    std::lock_guard lock(mutex);
    outcomes.push_back(std::move(r));
  });
  publisher.flush();
  std::lock_guard lock(mutex);
  ASSERT_EQ(outcomes.size(), 2U);
  ASSERT_FALSE(outcomes[1]) << "a refused publish is reported through the callback, not lost";
  EXPECT_EQ(outcomes[1].error().code(), bq::Errc::auth);
  EXPECT_EQ(take_all(memory_, "orders").size(), 2U);
}

TEST_F(PublisherTest, ABadUrnIsReportedBeforePublishAsyncReturns) {
  bq::Publisher publisher(memory_, quick());
  auto future = publisher.publish_async("  ", bq::Value::object({}));
  ASSERT_EQ(future.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(future.get().error().code(), bq::Errc::invalid_argument);
}

TEST_F(PublisherTest, DestroyingThePublisherFinishesEveryPendingPublish) {
  std::atomic<int> called{0};
  std::atomic<int> confirmed{0};
  {
    bq::Publisher publisher(memory_, quick());
    for (int i = 0; i < 200; ++i) {
      publisher.publish_async(OrderCreated{i}, [&](bq::Result<bq::PublishReceipt> r) {
        ++called;
        if (r) ++confirmed;
      });
    }
  }
  EXPECT_EQ(called.load(), 200);
  EXPECT_EQ(confirmed.load(), 200);
  EXPECT_EQ(take_all(memory_, "orders").size(), 200U);
}

namespace {
struct Lambda : bq::Middleware {
  std::function<bq::Result<void>(bq::PublishRequest&, const bq::PublishStep&)> on_publish;
  bq::Result<void> publish(bq::PublishRequest& r, const bq::PublishStep& next) override { return on_publish(r, next); }
};
}  // namespace

TEST_F(PublisherTest, ThePublishSideOfTheMiddlewareSeesEveryPublishOnce) {
  auto stamp = std::make_shared<Lambda>();
  std::atomic<int> seen{0};
  stamp->on_publish = [&](bq::PublishRequest& request, const bq::PublishStep& next) {
    ++seen;
    EXPECT_EQ(request.envelope.queue(), request.queue);
    request.options.headers["x-stamped"] = "1";
    return next(request);
  };
  auto options = quick();
  options.middleware.push_back(stamp);
  bq::Publisher publisher(faulty_, options);
  faulty_.fail_next_publishes(1, bq::Errc::connection);  // a retry re-sends; the middleware ran once
  ASSERT_TRUE(publisher.publish(OrderCreated{1}));
  EXPECT_EQ(seen.load(), 1);
  const std::vector<OrderCreated> orders{{2}, {3}};
  ASSERT_TRUE(publisher.publish_batch(std::span<const OrderCreated>(orders)));
  EXPECT_EQ(seen.load(), 3);
  auto batch = memory_.receive("orders", 10, 10ms).value();
  ASSERT_EQ(batch.size(), 3U);
  for (const auto& d : batch) EXPECT_EQ(d.headers.at("x-stamped"), "1");
}

TEST_F(PublisherTest, AMiddlewareCannotSendAnEnvelopeToAnotherQueue) {
  auto swap = std::make_shared<Lambda>();
  swap->on_publish = [](bq::PublishRequest& request, const bq::PublishStep& next) {
    request.envelope = bq::Envelope::make(OrderCreated{99}, {.queue = "elsewhere"}).value();
    return next(request);
  };
  auto options = quick();
  options.middleware.push_back(swap);
  bq::Publisher publisher(memory_, options);
  auto refused = publisher.publish(OrderCreated{1});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("meta.queue 'elsewhere'"), std::string::npos);
  EXPECT_TRUE(take_all(memory_, "orders").empty());
}

TEST_F(PublisherTest, OptionsOutOfRangeAreRefused) {
  auto options = quick();
  options.max_tries = 0;
  EXPECT_THROW(bq::Publisher(memory_, options), bq::Error);
  options = quick();
  options.retry_backoff.jitter = 2;
  try {
    bq::Publisher publisher(memory_, options);
    FAIL() << "accepted jitter 2";
  } catch (const bq::Error& e) {
    EXPECT_NE(std::string(e.what()).find("PublisherOptions::retry_backoff"), std::string::npos) << e.what();
  }
}

TEST(PublisherSqlite, PublishesThroughAnOwnedTransportInOneTransactionPerBatch) {
  const auto path = std::filesystem::temp_directory_path() / ("bq-publisher-" + bq::uuid_v4() + ".db");
  {
    bq::sqlite::Transport::Options options;
    options.path = path.string();
    auto options_p = quick();
    bq::Publisher publisher(bq::sqlite::Transport::open(options).value(), options_p);
    const std::vector<OrderCreated> orders{{1}, {2}};
    ASSERT_TRUE(publisher.publish_batch(std::span<const OrderCreated>(orders)));
    ASSERT_TRUE(publisher.publish(OrderCreated{3}));
    auto stats = publisher.transport().stats("orders").value();
    EXPECT_EQ(stats.ready, 3);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
}
