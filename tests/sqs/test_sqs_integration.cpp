// SPDX-License-Identifier: Apache-2.0
// babelqueue::sqs against the real SQS-compatible server: what the server
// stores (attributes read back raw), FIFO ordering and deduplication (a retry
// and a redrive are not swallowed), FIFO message groups kept by retries,
// dead-letters and redrives, delays, release and visibility extension,
// batches (the Worker's acks included), the bq-schema-version gate, poison
// settling, long polling, and a user-supplied HTTP client.
#include "sqs_test_support.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/redrive.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

namespace bq = babelqueue;
using namespace std::chrono_literals;
namespace sqs = bq::sqs;
using Clock = std::chrono::steady_clock;

namespace {

// Counts the requests per SQS operation, forwarding to libcurl: proves the
// HttpClient seam and lets tests count round trips.
class CountingHttpClient final : public bq::sqs::HttpClient {
 public:
  CountingHttpClient() : inner_(bq::sqs::make_curl_http_client()) {}
  bq::Result<bq::sqs::HttpResponse> post(const bq::sqs::HttpRequest& request) override {
    for (const auto& [name, value] : request.headers) {
      if (name == "X-Amz-Target") {
        const std::lock_guard lock(mutex_);
        ++counts_[value.substr(value.find('.') + 1)];
      }
    }
    return inner_->post(request);
  }
  void abort() override { inner_->abort(); }
  int count(const std::string& operation) {
    const std::lock_guard lock(mutex_);
    return counts_[operation];
  }

 private:
  std::unique_ptr<bq::sqs::HttpClient> inner_;
  std::mutex mutex_;
  std::map<std::string, int> counts_;
};

class SqsIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    bq::testing::use_dummy_aws_credentials();
    transport_ = open("create=1&visibility_timeout=2");
  }
  void TearDown() override {
    for (const std::string& queue : created_) {
      if (auto url = transport_->queue_url(queue)) {
        static_cast<void>(transport_->request("DeleteQueue", bq::Value::object({{"QueueUrl", *url}})));
      }
    }
  }

  static std::unique_ptr<sqs::Transport> open(const std::string& parameters,
                                              std::shared_ptr<bq::sqs::HttpClient> http = nullptr) {
    auto url = bq::Url::parse(bq::testing::sqs_url(parameters));
    auto options = sqs::Transport::options_from_url(url.value()).value();
    options.http_client = std::move(http);
    auto transport = sqs::Transport::open(options);
    if (!transport) throw bq::Error(transport.error());
    return std::move(*transport);
  }

  std::string queue(const std::string& role, bool fifo = false) {
    std::string name = bq::testing::unique_queue(role) + (fifo ? ".fifo" : "");
    created_.push_back(name);
    created_.push_back(transport_->dead_letter_queue(name));
    return name;
  }

  // A raw ReceiveMessage, to see what the server stores.
  bq::Value raw_receive(const std::string& name, int wait_seconds = 5) {
    auto url = transport_->queue_url(name).value();
    return transport_
        ->request("ReceiveMessage", bq::Value::object({{"QueueUrl", url},
                                                       {"WaitTimeSeconds", wait_seconds},
                                                       {"MaxNumberOfMessages", 10},
                                                       {"AttributeNames", bq::Value::array({"All"})},
                                                       {"MessageAttributeNames", bq::Value::array({"All"})}}))
        .value();
  }

  // Makes a raw-received message visible again at once.
  void make_visible(const std::string& name, const bq::Value& message) {
    auto url = transport_->queue_url(name).value();
    ASSERT_TRUE(transport_->request(
        "ChangeMessageVisibility",
        bq::Value::object(
            {{"QueueUrl", url}, {"ReceiptHandle", message["ReceiptHandle"].as_string()}, {"VisibilityTimeout", 0}})));
  }

  std::vector<bq::Delivery> receive_all(sqs::Transport& transport, const std::string& name, std::size_t count,
                                        std::chrono::milliseconds wait = 5s) {
    std::vector<bq::Delivery> all;
    const auto deadline = Clock::now() + wait;
    while (all.size() < count && Clock::now() < deadline) {
      auto got = transport.receive(name, count - all.size(), 1s);
      EXPECT_TRUE(got) << got.error().message();
      if (!got) break;
      for (auto& d : *got) all.push_back(std::move(d));
    }
    return all;
  }

  static std::string envelope(const std::string& urn, int n, const std::string& queue_name = {}) {
    bq::MakeOptions make;
    if (!queue_name.empty()) make.queue = queue_name;
    return std::string(bq::Envelope::make(urn, bq::Value::object({{"n", n}}), make).value().body());
  }

  static bq::WorkerOptions quiet(bq::WorkerOptions options = {}) {
    options.log = [](bq::LogLevel, std::string_view) {};
    options.poll_timeout = 1s;
    return options;
  }

  std::unique_ptr<sqs::Transport> transport_;
  std::vector<std::string> created_;
};

TEST_F(SqsIntegration, TheServerStoresTheBodyAndTheProjectedAttributes) {
  const std::string q = queue("attrs");
  const std::string body = envelope("urn:test:attrs", 7);
  const auto env = bq::Envelope::decode(body).value();
  bq::PublishOptions options;
  options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
                     {"bq-job", "a header never overrides the contract"}};
  ASSERT_TRUE(transport_->publish(q, body, options));
  const bq::Value answer = raw_receive(q);
  ASSERT_EQ(answer["Messages"].as_array().size(), 1U);
  const bq::Value& message = answer["Messages"].as_array()[0];
  EXPECT_EQ(message["Body"].as_string(), body);
  const bq::Value& attributes = message["MessageAttributes"];
  auto expect = [&](const char* name, const char* type, const std::string& value) {
    EXPECT_EQ(attributes[name]["DataType"].as_string(), type) << name;
    EXPECT_EQ(attributes[name]["StringValue"].as_string(), value) << name;
  };
  expect("bq-job", "String", "urn:test:attrs");
  expect("bq-trace-id", "String", std::string(env.trace_id()));
  expect("bq-message-id", "String", std::string(env.id()));
  expect("bq-schema-version", "Number", "1");
  expect("bq-source-lang", "String", std::string(env.lang()));
  expect("bq-created-at", "Number", std::to_string(*env.created_at()));
  expect("traceparent", "String", options.headers.at("traceparent"));
  EXPECT_EQ(attributes.as_object().size(), 7U);
  EXPECT_EQ(message["Attributes"]["ApproximateReceiveCount"].as_string(), "1");
}

TEST_F(SqsIntegration, FifoKeepsOrderAndDeduplicatesARepublishedOriginal) {
  const std::string q = queue("order", true);
  std::vector<std::string> bodies;
  for (int i = 0; i < 12; ++i) bodies.push_back(envelope("urn:test:fifo", i));
  for (const auto& body : bodies) ASSERT_TRUE(transport_->publish(q, body));
  // The same envelope again (a producer retrying its publish): deduplicated by meta.id.
  ASSERT_TRUE(transport_->publish(q, bodies[3]));
  // The pitfall the derived ids avoid: a retry sent with the original's
  // meta.id as its deduplication id is dropped by the server.
  bq::PublishOptions same_id;
  same_id.dedup_id = std::string(bq::Envelope::decode(bodies[5]).value().id());
  ASSERT_TRUE(transport_->publish(q, bq::Envelope::decode(bodies[5]).value().encode_with_attempts(1).value(), same_id));
  std::vector<std::string> order;
  while (order.size() < bodies.size()) {
    auto got = transport_->receive(q, 10, 2s);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_FALSE(got->empty()) << "only " << order.size() << " received";
    for (const auto& d : *got) order.push_back(d.body);
    ASSERT_TRUE(transport_->ack_batch(*got));
  }
  EXPECT_EQ(order, bodies);
  auto extra = transport_->receive(q, 10, 1s);
  ASSERT_TRUE(extra);
  EXPECT_TRUE(extra->empty()) << "the duplicate publish was delivered";
}

TEST_F(SqsIntegration, FifoRetryAndRedriveAreNotDeduplicatedAway) {
  const std::string q = queue("retry", true);
  std::vector<std::int64_t> seen;  // attempts per handler call
  bq::WorkerOptions options = quiet();
  options.max_attempts = 3;
  options.dead_letter = true;
  {
    bq::Worker worker(*transport_, options);
    worker.handle("urn:test:retry", [&](const bq::Message& m) -> bq::Result<void> {
      seen.push_back(m.attempts());
      return bq::unexpected(bq::Errc::io, "always fails");
    });
    ASSERT_TRUE(transport_->publish(q, envelope("urn:test:retry", 1, q)));
    bq::RunLimits limits;
    limits.max_messages = 3;
    limits.idle_exit = 5s;
    ASSERT_TRUE(worker.run({q}, limits));
  }
  // Every retry arrived (none swallowed as a duplicate of the original).
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0, 1, 2}));
  // The dead-letter copy is in <queue>-dlq.fifo; redriving it within the
  // deduplication window must deliver it again.
  const std::string dlq = transport_->dead_letter_queue(q);
  EXPECT_EQ(dlq, q.substr(0, q.size() - 5) + "-dlq.fifo");
  // Redrive holds what it takes until it is done: a visibility timeout
  // longer than its receive wait keeps it from taking a message twice.
  auto redriver = open("create=1&visibility_timeout=30");
  bq::RedriveOptions redrive;
  redrive.wait = 1s;
  auto redriven = bq::redrive(*redriver, dlq, redrive);
  ASSERT_TRUE(redriven) << redriven.error().message();
  EXPECT_EQ(redriven->redriven, 1U);
  auto again = receive_all(*transport_, q, 1, 5s);
  ASSERT_EQ(again.size(), 1U) << "the redriven message was deduplicated away";
  EXPECT_EQ(bq::Envelope::decode(again[0].body).value().attempts(), 0);
  ASSERT_TRUE(transport_->ack(again[0]));
}

TEST_F(SqsIntegration, AnSqsFifoMessageWithACustomGroupIsRetriedInThatGroup) {
  const std::string q = queue("group", true);
  std::vector<std::int64_t> seen;
  {
    bq::Worker worker(*transport_, quiet());
    worker.handle("urn:test:group", [&](const bq::Message& m) -> bq::Result<void> {
      seen.push_back(m.attempts());
      return bq::unexpected(bq::Errc::io, "the first try fails");
    });
    // Published straight to the transport, so only the retry is on trial.
    bq::PublishOptions keyed;
    keyed.ordering_key = "group-A";
    ASSERT_TRUE(transport_->publish(q, envelope("urn:test:group", 1, q), keyed));
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 5s;
    ASSERT_TRUE(worker.run({q}, limits));
  }
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0}));
  // What the server holds: the retry, in the original's group.
  const bq::Value answer = raw_receive(q);
  ASSERT_EQ(answer["Messages"].as_array().size(), 1U);
  const bq::Value& retry = answer["Messages"].as_array()[0];
  EXPECT_EQ(retry["Attributes"]["MessageGroupId"].as_string(), "group-A");
  EXPECT_EQ(bq::Envelope::decode(retry["Body"].as_string()).value().attempts(), 1);
  // And what receive hands the runtime.
  make_visible(q, retry);
  auto again = receive_all(*transport_, q, 1, 5s);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_EQ(again[0].ordering_key, "group-A");
  ASSERT_TRUE(transport_->ack(again[0]));
}

TEST_F(SqsIntegration, AFifoDeadLetterAndItsRedriveStayInTheGroup) {
  const std::string q = queue("dlqgroup", true);
  bq::WorkerOptions options = quiet();
  options.max_attempts = 1;
  options.dead_letter = true;
  {
    bq::Worker worker(*transport_, options);
    worker.handle("urn:test:dlqgroup",
                  [](const bq::Message&) -> bq::Result<void> { return bq::unexpected(bq::Errc::io, "always fails"); });
    bq::PublishParams params;
    params.queue = q;
    params.ordering_key = "group-B";
    ASSERT_TRUE(worker.publish("urn:test:dlqgroup", bq::Value::object({{"n", 1}}), params));
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 5s;
    ASSERT_TRUE(worker.run({q}, limits));
  }
  const std::string dlq = transport_->dead_letter_queue(q);
  const bq::Value dead = raw_receive(dlq);
  ASSERT_EQ(dead["Messages"].as_array().size(), 1U);
  EXPECT_EQ(dead["Messages"].as_array()[0]["Attributes"]["MessageGroupId"].as_string(), "group-B");
  make_visible(dlq, dead["Messages"].as_array()[0]);
  auto redriver = open("create=1&visibility_timeout=30");
  bq::RedriveOptions redrive;
  redrive.wait = 1s;
  auto redriven = bq::redrive(*redriver, dlq, redrive);
  ASSERT_TRUE(redriven) << redriven.error().message();
  EXPECT_EQ(redriven->redriven, 1U);
  const bq::Value back = raw_receive(q);
  ASSERT_EQ(back["Messages"].as_array().size(), 1U);
  EXPECT_EQ(back["Messages"].as_array()[0]["Attributes"]["MessageGroupId"].as_string(), "group-B");
}

TEST_F(SqsIntegration, TheWorkerDeletesHandledMessagesInBatches) {
  auto http = std::make_shared<CountingHttpClient>();
  auto counted = open("create=1&visibility_timeout=30", http);
  ASSERT_TRUE(counted->capabilities().batch_ack);
  const std::string q = queue("workerbatch");
  std::vector<bq::OutgoingMessage> batch;
  for (int i = 0; i < 25; ++i) batch.push_back({q, envelope("urn:test:workerbatch", i), {}});
  ASSERT_TRUE(counted->publish_batch(batch));
  bq::WorkerOptions options = quiet();
  // Only full batches and the end of the run send: 10 + 10 + 5.
  options.ack_linger = std::chrono::hours(1);
  bq::Worker worker(*counted, options);
  std::atomic<int> handled{0};
  worker.handle("urn:test:workerbatch", [&](const bq::Message&) { ++handled; });
  bq::RunLimits limits;
  limits.idle_exit = 2s;
  auto run = worker.run({q}, limits);
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_EQ(handled.load(), 25);
  EXPECT_EQ(http->count("DeleteMessageBatch"), 3);
  EXPECT_EQ(http->count("DeleteMessage"), 0);
  EXPECT_EQ(worker.metrics().snapshot().settle_errors, 0U);
  auto rest = transport_->receive(q, 10, 1s);
  ASSERT_TRUE(rest);
  EXPECT_TRUE(rest->empty()) << "a handled message was not deleted";
}

TEST_F(SqsIntegration, ContentBasedDeduplicationSendsNoIdAndKeepsRetries) {
  // A visibility timeout beyond the test's waits: nothing is received twice.
  auto content = open("create=1&visibility_timeout=30&fifo=1&content_dedup=1&group_id=g1");
  const std::string q = queue("content", true);
  const std::string body = envelope("urn:test:content", 1);
  auto first = content->publish(q, body);
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE(content->publish(q, body));  // the same bytes: deduplicated by the queue
  const std::string retry = bq::Envelope::decode(body).value().encode_with_attempts(1).value();
  ASSERT_TRUE(content->publish(q, retry));  // a retry's bytes differ: delivered
  auto got = receive_all(*content, q, 3, 3s);
  ASSERT_EQ(got.size(), 2U);
  EXPECT_EQ(got[0].body, body);
  EXPECT_EQ(got[1].body, retry);
  ASSERT_TRUE(content->ack_batch(got));
  const bq::Value attributes =
      content
          ->request("GetQueueAttributes", bq::Value::object({{"QueueUrl", content->queue_url(q).value()},
                                                             {"AttributeNames", bq::Value::array({"All"})}}))
          .value();
  EXPECT_EQ(attributes["Attributes"]["ContentBasedDeduplication"].as_string(), "true");
  EXPECT_EQ(attributes["Attributes"]["FifoQueue"].as_string(), "true");
  // fifo=1 refuses a name that is not a FIFO queue's.
  auto refused = content->publish("not-fifo", body);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
}

TEST_F(SqsIntegration, DelaysAreHonouredAndTheirLimitsRefusedClearly) {
  const std::string q = queue("delay");
  bq::PublishOptions delayed;
  delayed.delay = 2s;
  const auto published_at = Clock::now();
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:delay", 1), delayed));
  auto early = transport_->receive(q, 10, 1s);
  ASSERT_TRUE(early);
  EXPECT_TRUE(early->empty());
  auto later = receive_all(*transport_, q, 1, 6s);
  ASSERT_EQ(later.size(), 1U);
  EXPECT_GE(Clock::now() - published_at, 1900ms);
  ASSERT_TRUE(transport_->ack(later[0]));

  delayed.delay = 901s;
  auto too_long = transport_->publish(q, "x", delayed);
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(too_long.error().message().find("900"), std::string::npos);
  delayed.delay = 1s;
  auto fifo = transport_->publish(queue("delayfifo", true), "x", delayed);
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code(), bq::Errc::unsupported);
}

TEST_F(SqsIntegration, ReleaseChangesVisibilityOfTheSameMessage) {
  const std::string q = queue("release");
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:release", 1)));
  auto first = receive_all(*transport_, q, 1);
  ASSERT_EQ(first.size(), 1U);
  ASSERT_TRUE(transport_->release(first[0], 1s));
  // The same SQS message (its receive count goes on), not a re-sent copy.
  const bq::Value answer = raw_receive(q, 5);
  ASSERT_EQ(answer["Messages"].as_array().size(), 1U);
  EXPECT_EQ(answer["Messages"].as_array()[0]["Attributes"]["ApproximateReceiveCount"].as_string(), "2");
  auto stats = transport_->stats(q).value();
  EXPECT_EQ(stats.ready + stats.reserved + stats.delayed, 1);
}

TEST_F(SqsIntegration, ALongHandlersMessageStaysReservedWhileItRuns) {
  const std::string q = queue("extend");
  ASSERT_TRUE(transport_->publish(q, envelope("urn:test:long", 1)));
  std::atomic<int> calls{0};
  std::atomic<bool> seen_by_other{false};
  auto other = open("create=1&visibility_timeout=2");
  bq::Worker worker(*transport_, quiet());
  worker.handle("urn:test:long", [&](const bq::Message&) {
    ++calls;
    // Meanwhile another consumer must not get the message (visibility 2 s).
    const auto until = Clock::now() + 6s;
    while (Clock::now() < until) {
      auto got = other->receive(q, 10, 1s);
      if (got && !got->empty()) seen_by_other = true;
    }
  });
  bq::RunLimits limits;
  limits.max_messages = 1;
  limits.idle_exit = 3s;
  ASSERT_TRUE(worker.run({q}, limits));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_FALSE(seen_by_other.load()) << "the visibility was not extended";
  auto after = other->receive(q, 10, 3s);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty()) << "the message came back after it was handled";
}

TEST_F(SqsIntegration, BatchSendAndConcurrentAcksGoTogether) {
  auto http = std::make_shared<CountingHttpClient>();
  auto counted = open("create=1&visibility_timeout=10", http);
  const std::string q = queue("batch");
  std::vector<bq::OutgoingMessage> batch;
  for (int i = 0; i < 25; ++i) batch.push_back({q, envelope("urn:test:batch", i), {}});
  ASSERT_TRUE(counted->publish_batch(batch));
  EXPECT_EQ(http->count("SendMessageBatch"), 3);
  EXPECT_EQ(http->count("SendMessage"), 0);

  std::vector<bq::Delivery> got = receive_all(*counted, q, 25);
  ASSERT_EQ(got.size(), 25U);
  std::multiset<std::string> bodies;
  for (const auto& d : got) bodies.insert(d.body);
  for (const auto& m : batch) EXPECT_EQ(bodies.count(m.body), 1U);
  // 20 acks from 20 threads at once: they share DeleteMessageBatch calls.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (std::size_t i = 0; i < 20; ++i) {
    threads.emplace_back([&, i] {
      if (!counted->ack(got[i])) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const int calls = http->count("DeleteMessage") + http->count("DeleteMessageBatch");
  EXPECT_LT(calls, 20) << "no ack was batched";
  ASSERT_TRUE(counted->ack_batch(std::span(got).subspan(20)));
  auto rest = counted->receive(q, 10, 1s);
  ASSERT_TRUE(rest);
  EXPECT_TRUE(rest->empty());
  // A stale receipt handle in a batch is reported, not ignored.
  auto stale = counted->ack(got[0]);
  if (!stale) {
    EXPECT_EQ(stale.error().code(), bq::Errc::not_found);
  }
}

TEST_F(SqsIntegration, TheSchemaVersionGateSettlesGatedMessagesToTheDeadLetterQueue) {
  const std::string q = queue("gate");
  const std::string dlq = transport_->dead_letter_queue(q);
  EXPECT_EQ(dlq, q + "-dlq");
  const auto url = transport_->queue_url(q).value();
  struct Case {
    std::string value;
    bool gated;
  };
  const std::vector<Case> cases = {{"2", true}, {"01", true},       {" 1", true}, {"1 ", true},
                                   {"x", true}, {"\xc2\xa0", true}, {"1", false}, {" \t", false}};
  std::map<std::string, std::string> body_of;  // body -> gate value
  for (const Case& c : cases) {
    const std::string body = envelope("urn:test:gate", static_cast<int>(body_of.size()));
    body_of[body] = c.value;
    ASSERT_TRUE(transport_->request(
        "SendMessage",
        bq::Value::object(
            {{"QueueUrl", url},
             {"MessageBody", body},
             {"MessageAttributes",
              bq::Value::object(
                  {{"bq-schema-version", bq::Value::object({{"DataType", "String"}, {"StringValue", c.value}})}})}})));
  }
  std::set<std::string> handled;
  std::vector<std::string> poisoned;
  bq::WorkerOptions options = quiet();
  options.dead_letter = true;
  options.hooks.on_poison = [&](const bq::PoisonEvent& e) {
    EXPECT_EQ(e.reason, bq::Rejection::schema_version_gate);
    EXPECT_TRUE(e.dead_lettered);
    poisoned.emplace_back(e.body);
  };
  options.hooks.on_error = [&](const bq::ErrorEvent&) { ADD_FAILURE() << "a gated message reached the error path"; };
  bq::Worker worker(*transport_, options);
  worker.handle("urn:test:gate", [&](const bq::Message& m) { handled.insert(std::string(m.envelope().body())); });
  bq::RunLimits limits;
  limits.max_messages = cases.size();
  limits.idle_exit = 3s;
  ASSERT_TRUE(worker.run({q}, limits));
  std::size_t gated = 0;
  for (const auto& [body, value] : body_of) {
    const bool expect_gated = value != "1" && value != " \t";
    EXPECT_EQ(handled.contains(body), !expect_gated) << "value '" << value << "'";
    gated += expect_gated ? 1 : 0;
  }
  EXPECT_EQ(poisoned.size(), gated);
  // Settled on the first delivery: in the DLQ with the dead_letter block and
  // the reason header, gone from the queue.
  auto dead = receive_all(*transport_, dlq, gated);
  ASSERT_EQ(dead.size(), gated);
  for (const auto& d : dead) {
    auto env = bq::Envelope::decode(d.body);
    ASSERT_TRUE(env);
    ASSERT_TRUE(env->dead_letter());
    EXPECT_EQ(env->dead_letter()->reason, "poison");
    EXPECT_EQ(d.headers.at("bq-dead-letter-reason"), "poison");
  }
  auto left = transport_->receive(q, 10, 3s);  // past the 2 s visibility timeout
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty()) << "a gated message was not deleted";
}

TEST_F(SqsIntegration, PoisonIsDeadLetteredOnFirstDeliveryAndKeptWhenThatFails) {
  const std::string q = queue("poison");
  ASSERT_TRUE(transport_->publish(q, "not json at all"));
  bq::WorkerOptions options = quiet();
  options.dead_letter = true;
  {
    bq::Worker worker(*transport_, options);
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 2s;
    ASSERT_TRUE(worker.run({q}, limits));
    EXPECT_EQ(worker.metrics().snapshot().poison, 1U);
    EXPECT_EQ(worker.metrics().snapshot().dead_lettered, 1U);
  }
  auto dead = receive_all(*transport_, q + "-dlq", 1);
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(dead[0].body, "not json at all");  // byte for byte
  EXPECT_EQ(dead[0].headers.at("bq-dead-letter-reason"), "poison");
  EXPECT_EQ(dead[0].native_attempts, 0);
  auto left = transport_->receive(q, 10, 3s);
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());

  // The dead-letter send fails (its queue does not exist and nothing creates
  // it): the original is not deleted.
  auto strict = open("visibility_timeout=2");
  ASSERT_TRUE(transport_->publish(q, "still poison"));
  options.dead_letter_queue = bq::testing::unique_queue("missing");
  options.release_delay_on_error = 0ms;
  {
    bq::Worker worker(*strict, options);
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 2s;
    ASSERT_TRUE(worker.run({q}, limits));
    EXPECT_EQ(worker.metrics().snapshot().dead_lettered, 0U);
    EXPECT_GE(worker.metrics().snapshot().settle_errors, 1U);
  }
  auto kept = receive_all(*transport_, q, 1, 6s);
  ASSERT_EQ(kept.size(), 1U);
  EXPECT_EQ(kept[0].body, "still poison");
  ASSERT_TRUE(transport_->ack(kept[0]));

  // Without dead-lettering the poison is left to the queue (its RedrivePolicy), not deleted.
  ASSERT_TRUE(transport_->publish(q, "poison for the redrive policy"));
  {
    bq::Worker worker(*transport_, quiet());
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 2s;
    ASSERT_TRUE(worker.run({q}, limits));
    EXPECT_EQ(worker.metrics().snapshot().dropped, 0U);
  }
  auto left_to_policy = receive_all(*transport_, q, 1, 6s);
  ASSERT_EQ(left_to_policy.size(), 1U);
  EXPECT_GE(left_to_policy[0].native_attempts.value_or(0), 1);
}

TEST_F(SqsIntegration, AnExplicitDeadLetterQueueUrlReceivesThePoison) {
  const std::string q = queue("explicitdlq");
  const std::string target = queue("elsewhere");
  const std::string target_url = transport_->queue_url(target).value();
  auto explicit_dlq = open("create=1&visibility_timeout=2&dead_letter_queue_url=" + target_url);
  EXPECT_EQ(explicit_dlq->dead_letter_queue(q), target_url);
  ASSERT_TRUE(explicit_dlq->publish(q, "{\"not\":\"an envelope\"}"));
  bq::WorkerOptions options = quiet();
  options.dead_letter = true;
  {
    bq::Worker worker(*explicit_dlq, options);
    bq::RunLimits limits;
    limits.max_messages = 1;
    limits.idle_exit = 2s;
    ASSERT_TRUE(worker.run({q}, limits));
  }
  auto dead = receive_all(*transport_, target, 1);
  ASSERT_EQ(dead.size(), 1U);
  // A JSON object keeps its bytes and gains the dead_letter block.
  EXPECT_NE(dead[0].body.find("\"not\":\"an envelope\""), std::string::npos);
  EXPECT_NE(dead[0].body.find("\"dead_letter\""), std::string::npos);
  ASSERT_TRUE(transport_->ack(dead[0]));
}

TEST_F(SqsIntegration, LongPollingWaitsInOneRequest) {
  auto http = std::make_shared<CountingHttpClient>();
  auto counted = open("create=1", http);
  const std::string q = queue("poll");
  ASSERT_TRUE(counted->queue_url(q));
  const auto start = Clock::now();
  auto got = counted->receive(q, 10, 3s);
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->empty());
  EXPECT_GE(Clock::now() - start, 2900ms);
  EXPECT_EQ(http->count("ReceiveMessage"), 1) << "the wait was not one long poll";
  // A message published meanwhile ends the poll at once.
  std::thread producer([&] {
    std::this_thread::sleep_for(500ms);
    ASSERT_TRUE(transport_->publish(q, envelope("urn:test:poll", 1)));
  });
  const auto polled_at = Clock::now();
  auto woken = counted->receive(q, 10, 10s);
  producer.join();
  ASSERT_TRUE(woken);
  ASSERT_EQ(woken->size(), 1U);
  EXPECT_LT(Clock::now() - polled_at, 3s);
  ASSERT_TRUE(counted->ack((*woken)[0]));
}

TEST_F(SqsIntegration, AMissingQueueIsAClearErrorWithoutCreate) {
  auto strict = open("");
  const std::string name = bq::testing::unique_queue("absent");
  auto published = strict->publish(name, "x");
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code(), bq::Errc::not_found);
  EXPECT_NE(published.error().message().find(name), std::string::npos) << published.error().message();
  EXPECT_NE(published.error().message().find("create=1"), std::string::npos);
  // create=1 made the queue and its dead-letter queue.
  const std::string made = queue("made");
  ASSERT_TRUE(transport_->publish(made, "x"));
  EXPECT_TRUE(strict->queue_url(made));
  EXPECT_TRUE(strict->queue_url(made + "-dlq"));
}

TEST_F(SqsIntegration, QueueUrlsFromThePrefixNeedNoLookupAndLookupsAreCached) {
  const std::string q = queue("prefix");
  ASSERT_TRUE(transport_->queue_url(q));  // created
  const std::string prefix = bq::testing::broker_info("sqs").at("queue_url_prefix");
  auto http = std::make_shared<CountingHttpClient>();
  auto prefixed = open("prefix=" + prefix, http);
  ASSERT_TRUE(prefixed->publish(q, envelope("urn:test:prefix", 1)));
  auto got = receive_all(*prefixed, q, 1);
  ASSERT_EQ(got.size(), 1U);
  ASSERT_TRUE(prefixed->ack(got[0]));
  EXPECT_EQ(prefixed->queue_url(q).value(), prefix + "/" + q);
  EXPECT_EQ(http->count("GetQueueUrl"), 0);

  auto http2 = std::make_shared<CountingHttpClient>();
  auto looked_up = open("", http2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(looked_up->publish(q, envelope("urn:test:prefix", i)));
  EXPECT_EQ(http2->count("GetQueueUrl"), 1);
  EXPECT_EQ(http2->count("SendMessage"), 3);
}

TEST_F(SqsIntegration, WrongEndpointIsAConnectionErrorNamingTheHost) {
  auto url = bq::Url::parse("sqs://us-east-1?endpoint=http://127.0.0.1:9&request_timeout=2").value();
  auto transport = sqs::Transport::open(sqs::Transport::options_from_url(url).value()).value();
  auto published = transport->publish("q", "x");
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code(), bq::Errc::connection);
  EXPECT_NE(published.error().message().find("127.0.0.1:9"), std::string::npos) << published.error().message();
  EXPECT_EQ(published.error().message().find("babelqueue-test-secret"), std::string::npos);
}

}  // namespace

// A message above max_message_size (body and attributes, as SQS counts them)
// is refused before it is sent, naming both sizes; in a batch, the messages
// before it are published and counted, none after it. A raised limit lets the
// same message through.
TEST_F(SqsIntegration, AMessageAboveTheSizeLimitIsRefusedNamingBothSizes) {
  const std::string q = queue("big");
  const std::string at_limit(256 * 1024, 'x');  // not an envelope: no attributes
  ASSERT_TRUE(transport_->publish(q, at_limit));
  const std::string over(256 * 1024 + 1, 'x');
  auto refused = transport_->publish(q, over);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(refused.error().message().find("is 262145 bytes; SQS takes at most 262144 bytes (max_message_size"),
            std::string::npos)
      << refused.error().message();

  // An envelope's projected attributes count too.
  std::string padded = envelope("urn:test:big", 1);
  const std::size_t body_only = padded.size();
  auto with_attributes = transport_->publish(q, std::string(256 * 1024 - body_only, ' ') + padded);
  ASSERT_FALSE(with_attributes) << "the attributes were not counted";
  EXPECT_NE(with_attributes.error().message().find("SQS takes at most 262144 bytes"), std::string::npos);

  std::vector<bq::OutgoingMessage> batch(3);
  for (auto& message : batch) message.queue = q;
  batch[0].body = envelope("urn:test:big", 2);
  batch[1].body = over;
  batch[2].body = envelope("urn:test:big", 3);
  auto stopped = transport_->publish_batch(batch);
  ASSERT_FALSE(stopped);
  EXPECT_NE(stopped.error().message().find("262145 bytes"), std::string::npos) << stopped.error().message();
  EXPECT_NE(stopped.error().message().find("stopped after 1 of 3"), std::string::npos) << stopped.error().message();
  std::vector<bq::Delivery> received;
  for (const auto deadline = Clock::now() + 3s; Clock::now() < deadline;) {
    auto got = transport_->receive(q, 10, 500ms);
    ASSERT_TRUE(got) << got.error().message();
    for (auto& d : *got) {
      ASSERT_TRUE(transport_->ack(d));  // acked: never seen again
      received.push_back(std::move(d));
    }
  }
  std::multiset<std::size_t> sizes;  // (the bodies themselves are too long to print)
  bool small_one = false;
  for (const auto& d : received) {
    sizes.insert(d.body.size());
    small_one = small_one || d.body == batch[0].body;
  }
  EXPECT_EQ(sizes, (std::multiset<std::size_t>{at_limit.size(), batch[0].body.size()}));
  EXPECT_TRUE(small_one);

  auto raised = open("max_message_size=1048576");
  auto sent = raised->publish(q, over);
  EXPECT_TRUE(sent) << sent.error().message();
}
