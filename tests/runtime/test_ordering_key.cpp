// SPDX-License-Identifier: Apache-2.0
// The ordering key through the runtime, on the memory transport (which keeps
// the key and reads it back): Worker::publish hands PublishParams'
// ordering_key and dedup_id to the transport, and every republish of a
// delivery — retry, dead-letter, unknown-URN release, poison, redrive — keeps
// the key it arrived with, so a keyed message stays in its partition or
// message group.
#include "recording_transport.hpp"

#include <babelqueue/memory/transport.hpp>
#include <babelqueue/redrive.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

namespace bq = babelqueue;
using bq::test_support::RecordingTransport;
using namespace std::chrono_literals;

namespace {

class OrderingKey : public testing::Test {
 protected:
  bq::WorkerOptions options() {
    bq::WorkerOptions o;
    o.default_queue = "orders";
    o.poll_timeout = 100ms;
    o.log = [](bq::LogLevel, std::string_view) {};
    return o;
  }

  // Every message of queue, acked.
  std::vector<bq::Delivery> take_all(std::string_view queue) {
    std::vector<bq::Delivery> out;
    for (;;) {
      auto batch = memory_.receive(queue, 100, 50ms);
      if (!batch || batch->empty()) return out;
      for (auto& d : *batch) {
        EXPECT_TRUE(memory_.ack(d));
        out.push_back(std::move(d));
      }
    }
  }

  // The publishes the worker made to queue, in order.
  std::vector<RecordingTransport::Publish> publishes_to(std::string_view queue) const {
    std::vector<RecordingTransport::Publish> out;
    for (auto& p : recorded_.publishes()) {
      if (p.queue == queue) out.push_back(p);
    }
    return out;
  }

  static bq::PublishParams keyed() {
    bq::PublishParams p;
    p.ordering_key = "group-A";
    return p;
  }

  bq::memory::Transport memory_;
  RecordingTransport recorded_{memory_};
};

TEST_F(OrderingKey, TheMemoryTransportReadsItBack) {
  EXPECT_TRUE(memory_.capabilities().ordering_key);
  bq::PublishOptions o;
  o.ordering_key = "k1";
  ASSERT_TRUE(memory_.publish("q", "a", o));
  ASSERT_TRUE(memory_.publish("q", "b"));
  auto got = take_all("q");
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].ordering_key, "k1");
  EXPECT_EQ(got[1].ordering_key, "");
}

TEST_F(OrderingKey, WorkerPublishForwardsTheKeyAndTheDeduplicationId) {
  bq::Worker worker(recorded_, options());
  bq::PublishParams p = keyed();
  p.dedup_id = "order-1042";
  ASSERT_TRUE(worker.publish("urn:a", {}, p));
  auto sent = publishes_to("orders");
  ASSERT_EQ(sent.size(), 1U);
  EXPECT_EQ(sent[0].options.ordering_key, "group-A");
  EXPECT_EQ(sent[0].options.dedup_id, "order-1042");
  auto got = take_all("orders");
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].ordering_key, "group-A");
}

TEST_F(OrderingKey, ARetryKeepsItWithoutTheOriginalsDeduplicationId) {
  bq::Worker worker(recorded_, options());
  std::vector<std::int64_t> attempts;
  worker.handle("urn:a", [&](const bq::Message& m) {
    attempts.push_back(m.attempts());
    if (attempts.size() == 1) throw std::runtime_error("first try fails");
  });
  bq::PublishParams p = keyed();
  p.dedup_id = "order-1042";
  ASSERT_TRUE(worker.publish("urn:a", {}, p));
  EXPECT_EQ(worker.drain("orders", 1).value(), 1U);
  auto sent = publishes_to("orders");
  ASSERT_EQ(sent.size(), 2U);  // the publish and its retry
  EXPECT_EQ(sent[1].options.ordering_key, "group-A");
  // A broker that deduplicates must not take the retry for the original.
  EXPECT_EQ(sent[1].options.dedup_id, "");
  EXPECT_EQ(worker.metrics().snapshot().retried, 1U);
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{0, 1}));
}

TEST_F(OrderingKey, TheRetriedDeliveryArrivesWithIt) {
  bq::Worker worker(recorded_, options());
  worker.handle("urn:a", [](const bq::Message&) { throw std::runtime_error("fails"); });
  ASSERT_TRUE(worker.publish("urn:a", {}, keyed()));
  EXPECT_EQ(worker.drain("orders", 1).value(), 1U);
  auto retried = take_all("orders");
  ASSERT_EQ(retried.size(), 1U);
  EXPECT_EQ(bq::Envelope::decode(retried[0].body).value().attempts(), 1);
  EXPECT_EQ(retried[0].ordering_key, "group-A");
}

TEST_F(OrderingKey, ADeadLetterKeepsIt) {
  auto o = options();
  o.dead_letter = true;
  o.max_attempts = 1;
  bq::Worker worker(recorded_, o);
  worker.handle("urn:a", [](const bq::Message&) { throw std::runtime_error("fails"); });
  ASSERT_TRUE(worker.publish("urn:a", {}, keyed()));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  auto sent = publishes_to("orders.dlq");
  ASSERT_EQ(sent.size(), 1U);
  EXPECT_EQ(sent[0].options.ordering_key, "group-A");
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(dlq[0].ordering_key, "group-A");
  EXPECT_EQ(bq::Envelope::decode(dlq[0].body).value().dead_letter()->reason, "failed");
}

TEST_F(OrderingKey, AnUnknownUrnReleasedOrDeadLetteredKeepsIt) {
  auto o = options();
  o.unknown_urn = bq::UnknownUrnStrategy::release;
  o.unknown_urn_release_delay = 0ms;
  {
    bq::Worker worker(recorded_, o);
    ASSERT_TRUE(worker.publish("urn:nobody", {}, keyed()));
    EXPECT_EQ(worker.drain("orders", 1).value(), 1U);
  }
  auto released = take_all("orders");
  ASSERT_EQ(released.size(), 1U);
  EXPECT_EQ(released[0].ordering_key, "group-A");

  o.unknown_urn = bq::UnknownUrnStrategy::dead_letter;
  o.dead_letter = true;
  bq::Worker worker(recorded_, o);
  ASSERT_TRUE(worker.publish("urn:nobody", {}, keyed()));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(dlq[0].ordering_key, "group-A");
}

TEST_F(OrderingKey, APoisonDeadLetterKeepsIt) {
  auto o = options();
  o.dead_letter = true;
  bq::Worker worker(recorded_, o);
  bq::PublishOptions raw;
  raw.ordering_key = "group-A";
  ASSERT_TRUE(memory_.publish("orders", "not an envelope", raw));
  EXPECT_EQ(worker.drain("orders").value(), 1U);
  EXPECT_EQ(worker.metrics().snapshot().poison, 1U);
  auto dlq = take_all("orders.dlq");
  ASSERT_EQ(dlq.size(), 1U);
  EXPECT_EQ(dlq[0].ordering_key, "group-A");
}

TEST_F(OrderingKey, ARedriveKeepsIt) {
  auto o = options();
  o.dead_letter = true;
  o.max_attempts = 1;
  {
    bq::Worker worker(recorded_, o);
    worker.handle("urn:a", [](const bq::Message&) { throw std::runtime_error("fails"); });
    ASSERT_TRUE(worker.publish("urn:a", {}, keyed()));
    EXPECT_EQ(worker.drain("orders").value(), 1U);
  }
  bq::RedriveOptions redrive;
  redrive.wait = 100ms;
  auto result = bq::redrive(recorded_, "orders.dlq", redrive);
  ASSERT_TRUE(result) << result.error().message();
  EXPECT_EQ(result->redriven, 1U);
  auto sent = publishes_to("orders");
  ASSERT_EQ(sent.size(), 2U);  // the publish and the redrive
  EXPECT_EQ(sent[1].options.ordering_key, "group-A");
  auto back = take_all("orders");
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(back[0].ordering_key, "group-A");
}

}  // namespace
