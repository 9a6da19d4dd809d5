// SPDX-License-Identifier: Apache-2.0
// babelqueue::servicebus on the Service Bus test server: what is on the
// wire (read back by a plain AMQP client), DeliveryCount and the service's
// dead-lettering, the native dead-letter of poison and version-gated
// messages with the SDK's dead-lettering off, a handler that runs past the
// lock duration, tokens refreshed before they expire, and the errors a
// person sees for a wrong key, an expired signature, a bad connection string
// and an unreachable namespace.
#include "../../src/servicebus/sas_token.hpp"
#include "../../src/servicebus/servicebus_projection.hpp"
#include "servicebus_test_env.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <proton/binary.hpp>
#include <proton/scalar.hpp>
#include <proton/types.hpp>
#include <sstream>
#include <thread>

namespace bq = babelqueue;
namespace sb = babelqueue::servicebus;
using namespace std::chrono_literals;

namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(BQ_CONFORMANCE_DIR) + "/fixtures/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<sb::Transport> open(const std::string& query = {}, sb::Options* adjust = nullptr) {
  auto url = bq::Url::parse(bq::testing::servicebus_url(query));
  EXPECT_TRUE(url) << url.error().message();
  auto options = sb::Transport::options_from_url(*url);
  EXPECT_TRUE(options) << options.error().message();
  options->log = {};
  if (adjust != nullptr) {
    adjust->namespace_host = options->namespace_host;
    adjust->port = options->port;
    adjust->lock_duration = options->lock_duration;
    options = *adjust;
  }
  auto opened = sb::Transport::open(*options);
  EXPECT_TRUE(opened) << opened.error().message();
  return opened ? std::move(*opened) : nullptr;
}

std::vector<bq::Delivery> receive_n(bq::Transport& t, const std::string& queue, std::size_t n,
                                    std::chrono::milliseconds wait = 10s) {
  std::vector<bq::Delivery> out;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto got = t.receive(queue, n - out.size(), 500ms);
    EXPECT_TRUE(got) << got.error().message();
    if (!got) break;
    for (auto& d : *got) out.push_back(std::move(d));
  }
  return out;
}

// A message sent by a plain AMQP client with bq-schema-version set to value.
void send_with_schema_version(const std::string& queue, const proton::scalar& value, const std::string& body) {
  auto client = bq::testing::raw_client();
  proton::message m;
  m.inferred(true);
  m.body(proton::binary(body));
  m.properties().put("bq-schema-version", value);
  std::vector<proton::message> messages{m};
  auto sent = client->send(queue, std::move(messages), 10s);
  ASSERT_TRUE(sent) << sent.error().message();
  client->close();
}

// A loopback port nothing listens on: bound, read and closed again.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t size = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), size);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

class ServiceBusIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    bq::testing::servicebus_server();
    transport_ = open();
    ASSERT_TRUE(transport_);
  }
  void TearDown() override {
    if (transport_) transport_->close(2s);
  }
  std::unique_ptr<sb::Transport> transport_;
};

TEST_F(ServiceBusIntegration, TheWireCarriesTheBindingAsAPlainClientReadsIt) {
  const std::string queue = bq::testing::unique_queue("wire");
  const std::string body = fixture("order-created.json");
  bq::PublishOptions options;
  options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  ASSERT_TRUE(transport_->publish(queue, body, options));

  auto raw = bq::testing::raw_client();
  auto received = raw->receive(queue, 1, 10s);
  ASSERT_TRUE(received) << received.error().message();
  ASSERT_EQ(received->size(), 1U);
  const proton::message& m = received->front().message;
  ASSERT_EQ(m.body().type(), proton::BINARY);
  EXPECT_TRUE(m.inferred()) << "the body is not a Data section";
  const auto data = proton::get<proton::binary>(m.body());
  EXPECT_EQ(std::string(data.begin(), data.end()), body);
  EXPECT_EQ(m.subject(), "urn:babel:orders:created");
  EXPECT_EQ(proton::to_string(m.correlation_id()), "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b");
  EXPECT_EQ(proton::to_string(m.id()), "f1e2d3c4-b5a6-4789-90ab-cdef01234567");
  EXPECT_EQ(m.content_type(), "application/json");
  std::map<std::string, proton::scalar> props;
  proton::get(m.properties().value(), props);
  EXPECT_EQ(props.at("bq-schema-version").type(), proton::INT);
  EXPECT_EQ(props.at("bq-created-at").type(), proton::LONG);
  EXPECT_EQ(proton::get<std::string>(props.at("bq-source-lang")), "php");
  EXPECT_EQ(proton::get<std::string>(props.at("traceparent")),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  // The service's own annotations, and the lock token as the delivery tag.
  EXPECT_EQ(m.delivery_count(), 0U);
  const sb::Lock lock = sb::lock_of(m, received->front().tag);
  EXPECT_EQ(lock.token, sb::lock_token_from_tag(received->front().tag));
  ASSERT_TRUE(lock.locked_until);
  const std::uint64_t id = received->front().id;
  auto settled = raw->settle_confirmed(std::span<const std::uint64_t>(&id, 1), bq::amqp10::Outcome::accepted(), 10s);
  EXPECT_FALSE(settled[0]) << settled[0]->message();
}

TEST_F(ServiceBusIntegration, AbandonRaisesTheDeliveryCountUntilTheServiceDeadLettersIt) {
  const std::string queue = bq::testing::unique_queue("abandon");
  ASSERT_TRUE(transport_->publish(queue, fixture("order-created.json")));
  const int max = bq::testing::servicebus_server().max_delivery_count;
  for (int i = 0; i < max; ++i) {
    auto got = receive_n(*transport_, queue, 1);
    ASSERT_EQ(got.size(), 1U) << "delivery " << i + 1;
    EXPECT_EQ(got[0].native_attempts, i) << "DeliveryCount " << i + 1 << " reads attempts " << i;
    ASSERT_TRUE(transport_->release(got[0]));
  }
  EXPECT_TRUE(receive_n(*transport_, queue, 1, 1s).empty());
  auto dead = receive_n(*transport_, sb::Transport::native_dead_letter_queue(queue), 1);
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(dead[0].body, fixture("order-created.json"));
  EXPECT_EQ(dead[0].headers.at("DeadLetterReason"), "MaxDeliveryCountExceeded");
  ASSERT_TRUE(transport_->ack(dead[0]));
}

TEST_F(ServiceBusIntegration, DeadLetterNativelyMovesTheMessageWithItsReason) {
  const std::string queue = bq::testing::unique_queue("native-dlq");
  ASSERT_TRUE(transport_->publish(queue, "not an envelope"));
  auto got = receive_n(*transport_, queue, 1);
  ASSERT_EQ(got.size(), 1U);
  ASSERT_TRUE(transport_->dead_letter_natively(got[0], "poison", "invalid_json: at 0"));
  auto again = transport_->dead_letter_natively(got[0], "poison", "twice");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), bq::Errc::not_found);
  auto dead = receive_n(*transport_, sb::Transport::native_dead_letter_queue(queue), 1);
  ASSERT_EQ(dead.size(), 1U);
  EXPECT_EQ(dead[0].body, "not an envelope");
  EXPECT_EQ(dead[0].headers.at("DeadLetterReason"), "poison");
  EXPECT_EQ(dead[0].headers.at("DeadLetterErrorDescription"), "invalid_json: at 0");
  ASSERT_TRUE(transport_->ack(dead[0]));
}

// Service Bus's Peek also shows scheduled messages and locked ones: peek()
// skips the scheduled (a receive would not hand them out) and shows a
// locked message, which stays in its place; DeliveryCount is untouched.
TEST_F(ServiceBusIntegration, PeekSkipsScheduledMessagesAndShowsLockedOnes) {
  const std::string queue = bq::testing::unique_queue("peek");
  bq::PublishOptions later;
  later.delay = 60s;
  ASSERT_TRUE(transport_->publish(queue, "scheduled", later));
  ASSERT_TRUE(transport_->publish(queue, "first"));
  ASSERT_TRUE(transport_->publish(queue, "second"));
  auto shown = transport_->peek(queue, 10);
  ASSERT_TRUE(shown) << shown.error().message();
  ASSERT_EQ(shown->size(), 2U);
  EXPECT_EQ((*shown)[0].body, "first");
  EXPECT_EQ((*shown)[1].body, "second");
  EXPECT_EQ((*shown)[0].native_attempts, 0);
  auto one = transport_->peek(queue, 1);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1U);
  EXPECT_EQ((*one)[0].body, "first");

  auto got = receive_n(*transport_, queue, 2);
  ASSERT_EQ(got.size(), 2U);
  auto locked = transport_->peek(queue, 10);
  ASSERT_TRUE(locked);
  EXPECT_EQ(locked->size(), 2U) << "a locked message stays in its place";
  for (const auto& d : got) ASSERT_TRUE(transport_->ack(d));
  auto after = transport_->peek(queue, 10);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty()) << "completed messages are gone, the scheduled one is not shown";
}

TEST_F(ServiceBusIntegration, TheGateReadsIntLongAndStringFromTheWire) {
  const std::string queue = bq::testing::unique_queue("gate");
  const std::string body = fixture("order-created.json");
  const std::vector<std::pair<proton::scalar, bool>> cases = {
      {proton::scalar(std::int32_t{1}), true},  {proton::scalar(std::int64_t{1}), true},
      {proton::scalar(std::string("1")), true}, {proton::scalar(std::int32_t{2}), false},
      {proton::scalar(std::int64_t{2}), false}, {proton::scalar(std::string("2")), false}};
  for (const auto& [value, accepted] : cases) send_with_schema_version(queue, value, body);
  auto got = receive_n(*transport_, queue, cases.size());
  ASSERT_EQ(got.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(!got[i].gate_rejection, cases[i].second) << proton::to_string(cases[i].first);
    ASSERT_TRUE(transport_->ack(got[i]));
  }
}

TEST_F(ServiceBusIntegration, WithoutDeadLetteringPoisonAndGatedMessagesEndInTheDeadLetterQueue) {
  const std::string queue = bq::testing::unique_queue("poison");
  ASSERT_TRUE(transport_->publish(queue, "garbage"));
  send_with_schema_version(queue, proton::scalar(std::int64_t{2}), fixture("order-created.json"));
  bq::WorkerOptions o;
  o.default_queue = queue;
  o.dead_letter = false;
  o.poll_timeout = 200ms;
  o.log = {};
  bq::Worker worker(*transport_, o);
  worker.handle("urn:babel:orders:created", [](const bq::Message&) { FAIL() << "a gated message was handled"; });
  (void)worker.drain(queue);
  EXPECT_EQ(worker.metrics().snapshot().poison, 2U);
  EXPECT_EQ(worker.metrics().snapshot().settle_errors, 0U);
  EXPECT_TRUE(receive_n(*transport_, queue, 1, 1s).empty());
  auto dead = receive_n(*transport_, sb::Transport::native_dead_letter_queue(queue), 2);
  ASSERT_EQ(dead.size(), 2U);
  std::multiset<std::string> reasons;
  for (const auto& d : dead) {
    reasons.insert(d.headers.at("DeadLetterReason"));
    EXPECT_EQ(d.native_attempts, 0) << "dead-lettered on its first delivery";
    ASSERT_TRUE(transport_->ack(d));
  }
  EXPECT_EQ(reasons, (std::multiset<std::string>{"poison", "unsupported schema version"}));
}

TEST_F(ServiceBusIntegration, AHandlerRunningPastTheLockDurationKeepsItsLock) {
  const auto lock = bq::testing::servicebus_server().lock_duration;
  const std::string queue = bq::testing::unique_queue("long");
  bq::WorkerOptions o;
  o.default_queue = queue;
  o.poll_timeout = 200ms;
  o.prefetch = 1;
  o.log = {};
  bq::Worker worker(*transport_, o);
  std::atomic<int> runs{0};
  worker.handle("urn:babel:orders:created", [&](const bq::Message&) {
    ++runs;
    std::this_thread::sleep_for(lock + lock / 2);
  });
  ASSERT_TRUE(worker.publish("urn:babel:orders:created", bq::Value::object({{"order_id", 1}})));
  EXPECT_EQ(worker.drain(queue).value(), 1U);
  EXPECT_EQ(runs.load(), 1) << "the lock was lost and the message delivered again";
  const auto m = worker.metrics().snapshot();
  EXPECT_EQ(m.succeeded, 1U);
  EXPECT_EQ(m.settle_errors, 0U);
  // Nothing comes back after the original lock would have ended.
  EXPECT_TRUE(receive_n(*transport_, queue, 1, lock + 1s).empty());
}

TEST_F(ServiceBusIntegration, ExtendRenewsTheLockThroughManagement) {
  const auto lock = bq::testing::servicebus_server().lock_duration;
  const std::string queue = bq::testing::unique_queue("renew");
  ASSERT_TRUE(transport_->publish(queue, fixture("order-created.json")));
  auto got = receive_n(*transport_, queue, 1);
  ASSERT_EQ(got.size(), 1U);
  ASSERT_TRUE(transport_->extend(got[0], lock * 3));
  // Another receiver sees nothing for twice the lock duration.
  auto other = open();
  EXPECT_TRUE(receive_n(*other, queue, 1, lock * 2).empty());
  ASSERT_TRUE(transport_->ack(got[0]));
  other->close(2s);
}

TEST_F(ServiceBusIntegration, AnExpiredLockCannotBeRenewedOrCompleted) {
  const auto lock = bq::testing::servicebus_server().lock_duration;
  const std::string queue = bq::testing::unique_queue("lost");
  ASSERT_TRUE(transport_->publish(queue, fixture("order-created.json")));
  auto first = receive_n(*transport_, queue, 1);
  ASSERT_EQ(first.size(), 1U);
  auto again = receive_n(*transport_, queue, 1, lock * 3);
  ASSERT_EQ(again.size(), 1U);
  EXPECT_EQ(again[0].native_attempts, 1);
  EXPECT_NE(again[0].token.text, first[0].token.text) << "a new lock token";
  auto renewed = transport_->extend(first[0], lock);
  ASSERT_FALSE(renewed);
  EXPECT_EQ(renewed.error().code(), bq::Errc::not_found) << renewed.error().message();
  auto stale = transport_->ack(first[0]);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), bq::Errc::not_found);
  ASSERT_TRUE(transport_->ack(again[0]));
}

TEST_F(ServiceBusIntegration, TokensAreRefreshedBeforeTheyExpire) {
  // The server detaches a link whose token expired, checking every half
  // second: links that live three lifetimes need fresh tokens.
  sb::Options options;
  options.connection_string = bq::testing::servicebus_server().connection_string;
  options.token_lifetime = 3s;
  options.log = {};
  auto short_lived = open({}, &options);
  ASSERT_TRUE(short_lived);
  const std::string queue = bq::testing::unique_queue("refresh");
  const auto until = std::chrono::steady_clock::now() + 9s;
  int round = 0;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(short_lived->publish(queue, fixture("order-created.json"))) << "round " << round;
    auto got = short_lived->receive(queue, 1, 5s);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_EQ(got->size(), 1U) << "round " << round;
    ASSERT_TRUE(short_lived->ack(got->front())) << "round " << round;
    std::this_thread::sleep_for(1s);
    ++round;
  }
  short_lived->close(2s);
}

TEST(ServiceBusErrors, AWrongKeyIsAnAuthErrorWithTheServicesReasonAndNoSecret) {
  const auto& server = bq::testing::servicebus_server();
  sb::Options options;
  options.connection_string = "Endpoint=sb://127.0.0.1:" + server.port + ";SharedAccessKeyName=" + server.key_name +
                              ";SharedAccessKey=wrong-s3cr3t;UseDevelopmentEmulator=true";
  options.log = {};
  auto opened = sb::Transport::open(options);
  ASSERT_TRUE(opened) << opened.error().message();
  auto published = (*opened)->publish(bq::testing::unique_queue("wrong-key"), "{}");
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code(), bq::Errc::auth) << published.error().message();
  EXPECT_NE(published.error().message().find("refused the token"), std::string::npos) << published.error().message();
  EXPECT_NE(published.error().message().find("401"), std::string::npos) << published.error().message();
  EXPECT_NE(published.error().message().find("signature does not match"), std::string::npos)
      << published.error().message();
  EXPECT_EQ(published.error().message().find("wrong-s3cr3t"), std::string::npos);
  auto received = (*opened)->receive(bq::testing::unique_queue("wrong-key"), 1, 2s);
  ASSERT_FALSE(received);
  EXPECT_EQ(received.error().code(), bq::Errc::auth) << received.error().message();
}

TEST(ServiceBusErrors, ASignatureThatExpiresIsAnAuthErrorNamingTheTime) {
  const auto& server = bq::testing::servicebus_server();
  const auto expiry =
      std::chrono::duration_cast<std::chrono::seconds>((std::chrono::system_clock::now() + 2s).time_since_epoch())
          .count();
  sb::Options options;
  options.connection_string =
      "Endpoint=sb://127.0.0.1:" + server.port + ";SharedAccessSignature=" +
      sb::sign_sas_token("sb://127.0.0.1:" + server.port + "/", server.key_name, server.key, expiry) +
      ";UseDevelopmentEmulator=true";
  options.log = {};
  auto opened = sb::Transport::open(options);
  ASSERT_TRUE(opened) << opened.error().message();
  const std::string queue = bq::testing::unique_queue("sas");
  ASSERT_TRUE((*opened)->publish(queue, "{}")) << "the signature is valid for two seconds";
  (*opened)->close();
  std::this_thread::sleep_for(3s);
  auto late = sb::Transport::open(options);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code(), bq::Errc::auth);
  EXPECT_NE(late.error().message().find("SharedAccessSignature expired at"), std::string::npos)
      << late.error().message();
  EXPECT_EQ(late.error().message().find("sig="), std::string::npos);
}

TEST(ServiceBusErrors, ABadConnectionStringIsRefusedBeforeAnyConnection) {
  sb::Options options;
  options.connection_string = "Endpoint=sb://127.0.0.1:1;SharedAccessKey=s3cr3t";
  auto opened = sb::Transport::open(options);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(opened.error().message().find("SharedAccessKeyName"), std::string::npos) << opened.error().message();
  EXPECT_EQ(opened.error().message().find("s3cr3t"), std::string::npos);
}

TEST(ServiceBusErrors, AnUnreachableNamespaceIsAConnectionError) {
  sb::Options options;
  const int port = free_port();
  options.connection_string = "Endpoint=sb://127.0.0.1:" + std::to_string(port) +
                              ";SharedAccessKeyName=n;SharedAccessKey=k;UseDevelopmentEmulator=true";
  options.connect_timeout = 2s;
  options.log = {};
  const auto started = std::chrono::steady_clock::now();
  auto opened = sb::Transport::open(options);
  ASSERT_FALSE(opened);
  EXPECT_TRUE(opened.error().code() == bq::Errc::connection || opened.error().code() == bq::Errc::timeout)
      << opened.error().message();
  EXPECT_NE(opened.error().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << opened.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

}  // namespace

// The service announces its message size limit on the link (256 KiB on the
// Standard tier, as the test server does): a larger message is refused
// before it is sent, naming both sizes, and the link stays usable; in a
// batch the others are published. A lower limit of the transport's own
// holds too.
TEST_F(ServiceBusIntegration, AMessageAboveTheSizeLimitIsRefusedUnsentNamingBothSizes) {
  const std::string queue = bq::testing::unique_queue("big");
  const std::string big(300 * 1024, 'x');
  auto refused = transport_->publish(queue, big);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(refused.error().message().find("the broker takes at most 262144 bytes (the link's max-message-size)"),
            std::string::npos)
      << refused.error().message();

  std::vector<bq::OutgoingMessage> batch(3);
  for (auto& message : batch) message.queue = queue;
  batch[0].body = fixture("order-created.json");
  batch[1].body = big;
  batch[2].body = fixture("order-created.json");
  ASSERT_FALSE(transport_->publish_batch(batch));
  auto got = receive_n(*transport_, queue, 3, 3s);
  EXPECT_EQ(got.size(), 2U);
  for (const auto& d : got) EXPECT_TRUE(transport_->ack(d));

  auto limited = open("max_message_size=1000");
  ASSERT_TRUE(limited);
  auto own = limited->publish(queue, std::string(1001, 'x'));
  ASSERT_FALSE(own);
  EXPECT_NE(own.error().message().find("bytes; this transport takes at most 1000 bytes (max_message_size)"),
            std::string::npos)
      << own.error().message();
  limited->close(2s);
}
