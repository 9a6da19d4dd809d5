// SPDX-License-Identifier: Apache-2.0
// The seam of middleware.hpp on the Worker: the order of the layers on both
// sides, what a middleware's result does to a delivery (ack without the
// handler, fail, hand back unhandled), and what a publish middleware may do
// (refuse before anything is sent, add a header, replace the envelope).
#include <babelqueue/json.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

// Records "<name> in" / "<name> out" around both sides.
class Recorder : public bq::Middleware {
 public:
  Recorder(std::string name, std::vector<std::string>& trace, std::mutex& mutex)
      : name_(std::move(name)), trace_(trace), mutex_(mutex) {}

  bq::Result<void> handle(const bq::Message& message, const bq::MessageHandler& next) override {
    note(name_ + " in");
    auto r = next(message);
    note(name_ + " out");
    return r;
  }
  bq::Result<void> publish(bq::PublishRequest& request, const bq::PublishStep& next) override {
    note(name_ + " publish");
    return next(request);
  }

 private:
  void note(std::string line) {
    std::lock_guard lock(mutex_);
    trace_.push_back(std::move(line));
  }
  std::string name_;
  std::vector<std::string>& trace_;
  std::mutex& mutex_;
};

// A middleware built from two lambdas.
struct Lambda : bq::Middleware {
  std::function<bq::Result<void>(const bq::Message&, const bq::MessageHandler&)> on_handle;
  std::function<bq::Result<void>(bq::PublishRequest&, const bq::PublishStep&)> on_publish;
  bq::Result<void> handle(const bq::Message& m, const bq::MessageHandler& next) override {
    return on_handle ? on_handle(m, next) : next(m);
  }
  bq::Result<void> publish(bq::PublishRequest& r, const bq::PublishStep& next) override {
    return on_publish ? on_publish(r, next) : next(r);
  }
};

bq::WorkerOptions quiet_options() {
  bq::WorkerOptions o;
  o.default_queue = "orders";
  o.poll_timeout = 20ms;
  o.log = {};
  return o;
}

std::vector<bq::Delivery> take_all(bq::Transport& transport, std::string_view queue) {
  std::vector<bq::Delivery> out;
  for (;;) {
    auto batch = transport.receive(queue, 100, 10ms);
    if (!batch || batch->empty()) return out;
    for (auto& d : *batch) {
      EXPECT_TRUE(transport.ack(d));
      out.push_back(std::move(d));
    }
  }
}

}  // namespace

TEST(Middleware, FirstAddedIsOutermostOnConsumeAndLastOnPublish) {
  bq::memory::Transport transport;
  std::vector<std::string> trace;
  std::mutex mutex;
  auto options = quiet_options();
  options.middleware.push_back(std::make_shared<Recorder>("a", trace, mutex));
  bq::Worker worker(transport, options);
  worker.use(std::make_shared<Recorder>("b", trace, mutex));
  worker.use(std::make_shared<Recorder>("c", trace, mutex));
  worker.handle("urn:t:x", [&](const bq::Message&) {
    std::lock_guard lock(mutex);
    trace.emplace_back("handler");
  });
  ASSERT_TRUE(worker.publish("urn:t:x", bq::Value::object({{"n", 1}})));
  EXPECT_EQ(trace, (std::vector<std::string>{"c publish", "b publish", "a publish"}));
  trace.clear();
  ASSERT_EQ(worker.drain().value(), 1U);
  EXPECT_EQ(trace, (std::vector<std::string>{"a in", "b in", "c in", "handler", "c out", "b out", "a out"}));
}

TEST(Middleware, TheChainWrapsTheCatchAllHandlerToo) {
  bq::memory::Transport transport;
  std::vector<std::string> trace;
  std::mutex mutex;
  bq::Worker worker(transport, quiet_options());
  worker.use(std::make_shared<Recorder>("a", trace, mutex));
  worker.handle_any([&](const bq::Message&) -> bq::Result<void> {
    trace.emplace_back("any");
    return {};
  });
  ASSERT_TRUE(worker.publish("urn:t:unrouted", bq::Value::object()));
  ASSERT_EQ(worker.drain().value(), 1U);
  EXPECT_EQ(trace, (std::vector<std::string>{"a publish", "a in", "any", "a out"}));
}

TEST(Middleware, SkippingTheHandlerAcksTheMessage) {
  bq::memory::Transport transport;
  auto skip = std::make_shared<Lambda>();
  skip->on_handle = [](const bq::Message&, const bq::MessageHandler&) -> bq::Result<void> { return {}; };
  bq::Worker worker(transport, quiet_options());
  worker.use(skip);
  int ran = 0;
  worker.handle("urn:t:x", [&](const bq::Message&) { ++ran; });
  ASSERT_TRUE(worker.publish("urn:t:x", bq::Value::object()));
  ASSERT_EQ(worker.drain().value(), 1U);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(worker.metrics().snapshot().succeeded, 1U);
  EXPECT_TRUE(take_all(transport, "orders").empty());
}

TEST(Middleware, AnErrorFromAMiddlewareIsAFailureThatIsRetriedWhenRetriable) {
  bq::memory::Transport transport;
  auto refuse = std::make_shared<Lambda>();
  refuse->on_handle = [](const bq::Message& m, const bq::MessageHandler& next) -> bq::Result<void> {
    if (m.attempts() == 0) return bq::unexpected(bq::Errc::timeout, "the middleware's store timed out");
    return next(m);
  };
  bq::Worker worker(transport, quiet_options());
  worker.use(refuse);
  std::vector<std::int64_t> attempts;
  worker.handle("urn:t:x", [&](const bq::Message& m) { attempts.push_back(m.attempts()); });
  ASSERT_TRUE(worker.publish("urn:t:x", bq::Value::object()));
  ASSERT_EQ(worker.drain().value(), 2U);
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(worker.metrics().snapshot().retried, 1U);
}

TEST(Middleware, ReleaseDeliveryHandsTheMessageBackWithItsAttemptsUnchanged) {
  bq::memory::Transport transport;
  auto later = std::make_shared<Lambda>();
  std::atomic<int> seen{0};
  later->on_handle = [&](const bq::Message& m, const bq::MessageHandler& next) -> bq::Result<void> {
    if (seen++ == 0) throw bq::ReleaseDelivery(150ms, "not now");
    return next(m);
  };
  bq::Worker worker(transport, quiet_options());
  worker.use(later);
  std::vector<std::int64_t> attempts;
  worker.handle("urn:t:x", [&](const bq::Message& m) { attempts.push_back(m.attempts()); });
  ASSERT_TRUE(worker.publish("urn:t:x", bq::Value::object()));
  const auto start = std::chrono::steady_clock::now();
  bq::RunLimits limits;
  limits.max_messages = 2;
  ASSERT_TRUE(worker.run({}, limits));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);  // the delay was the broker's
  // The body's attempts are unchanged; the memory broker, like SQLite and
  // SQS, counts the release as a delivery (Delivery::native_attempts).
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{1}));
  const auto m = worker.metrics().snapshot();
  EXPECT_EQ(m.released, 1U);
  EXPECT_EQ(m.failed, 0U);
  EXPECT_EQ(m.retried, 0U);
  EXPECT_EQ(m.succeeded, 1U);
}

TEST(Middleware, APublishMiddlewareThatRefusesSendsNothing) {
  bq::memory::Transport transport;
  auto refuse = std::make_shared<Lambda>();
  refuse->on_publish = [](bq::PublishRequest& r, const bq::PublishStep&) -> bq::Result<void> {
    return bq::unexpected(bq::Errc::invalid_argument, "refused " + std::string(r.envelope.urn()));
  };
  bq::Worker worker(transport, quiet_options());
  worker.use(refuse);
  auto published = worker.publish("urn:t:x", bq::Value::object());
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().message(), "refused urn:t:x");
  EXPECT_TRUE(take_all(transport, "orders").empty());
}

TEST(Middleware, APublishMiddlewareSeesTheDataAndMayAddHeadersOrReplaceTheEnvelope) {
  bq::memory::Transport transport;
  auto change = std::make_shared<Lambda>();
  change->on_publish = [](bq::PublishRequest& r, const bq::PublishStep& next) -> bq::Result<void> {
    EXPECT_NE(r.data, nullptr);
    EXPECT_EQ(r.data->as_object().find("n")->as_int64(), 1);
    r.options.headers["x-added"] = "yes";
    bq::MakeOptions make;
    make.queue = std::string(r.envelope.queue());
    make.trace_id = std::string(r.envelope.trace_id());
    make.id = std::string(r.envelope.id());
    r.envelope = bq::Envelope::make(r.envelope.urn(), bq::Value::object({{"n", 2}}), make).value();
    r.data = nullptr;
    return next(r);
  };
  bq::Worker worker(transport, quiet_options());
  worker.use(change);
  auto id = worker.publish("urn:t:x", bq::Value::object({{"n", 1}}));
  ASSERT_TRUE(id);
  auto got = take_all(transport, "orders");
  ASSERT_EQ(got.size(), 1U);
  EXPECT_EQ(got[0].headers.at("x-added"), "yes");
  auto env = bq::Envelope::decode(got[0].body).value();
  EXPECT_EQ(env.data_json(), R"({"n":2})");
  EXPECT_EQ(env.id(), *id);
}

TEST(Middleware, RetriesAndDeadLettersDoNotPassThroughThePublishSide) {
  bq::memory::Transport transport;
  std::vector<std::string> trace;
  std::mutex mutex;
  auto options = quiet_options();
  options.max_attempts = 2;
  options.dead_letter = true;
  bq::Worker worker(transport, options);
  worker.use(std::make_shared<Recorder>("a", trace, mutex));
  worker.handle("urn:t:x", [](const bq::Message&) { throw std::runtime_error("no"); });
  ASSERT_TRUE(worker.publish("urn:t:x", bq::Value::object()));
  ASSERT_EQ(worker.drain().value(), 2U);
  EXPECT_EQ(std::count(trace.begin(), trace.end(), "a publish"), 1);
  EXPECT_EQ(take_all(transport, "orders.dlq").size(), 1U);
}

TEST(Middleware, UseAfterTheFirstPublishIsRefused) {
  bq::memory::Transport transport;
  bq::Worker worker(transport, quiet_options());
  ASSERT_TRUE(worker.publish("urn:t:x", bq::Value::object()));
  EXPECT_THROW(worker.use(std::make_shared<Lambda>()), bq::Error);
  EXPECT_THROW(bq::MiddlewareChain().add(nullptr), bq::Error);
}

// meta.queue names the queue a dead letter goes back to: an envelope that
// names another queue than the one it is sent to is refused, nothing sent.
TEST(Middleware, AnEnvelopeWhoseQueueDisagreesIsRefused) {
  bq::memory::Transport transport;
  auto swap = std::make_shared<Lambda>();
  swap->on_publish = [](bq::PublishRequest& r, const bq::PublishStep& next) -> bq::Result<void> {
    r.envelope = bq::Envelope::make(r.envelope.urn(), bq::Value::object()).value();  // meta.queue "default"
    return next(r);
  };
  bq::Worker worker(transport, quiet_options());
  worker.use(swap);
  bq::PublishParams to_orders;
  to_orders.queue = "orders";
  auto published = worker.publish("urn:t:x", bq::Value::object(), to_orders);
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(published.error().message().find("'default'"), std::string::npos) << published.error().message();
  EXPECT_TRUE(take_all(transport, "orders").empty());
}

// Published through the Worker to a queue, a message that fails names that
// queue in its dead-letter block.
TEST(Middleware, ADeadLetterNamesTheQueueItWasPublishedTo) {
  bq::memory::Transport transport;
  auto options = quiet_options();
  options.max_attempts = 1;
  options.dead_letter = true;
  bq::Worker worker(transport, options);
  worker.handle("urn:t:x", [](const bq::Message&) { throw std::runtime_error("no"); });
  bq::PublishParams to_payments;
  to_payments.queue = "payments";
  ASSERT_TRUE(worker.publish("urn:t:x", bq::Value::object(), to_payments));
  ASSERT_EQ(worker.drain("payments").value(), 1U);
  auto dead = take_all(transport, "payments.dlq");
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(bq::Envelope::decode(dead[0].body).value().dead_letter()->original_queue, "payments");
}
