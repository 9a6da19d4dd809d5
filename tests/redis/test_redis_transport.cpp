// SPDX-License-Identifier: Apache-2.0
// The Redis transport against the real redis-server of scripts/broker: the
// transport contract (plain and TLS), the wire layout other SDKs rely on,
// crash safety, dead-lettering and bad input, TLS and AUTH refusals.
#include "redis_frame.hpp"
#include "redis_test_support.hpp"
#include "reply_dropping_proxy.hpp"
#include "transport_contract.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/publisher.hpp>
#include <babelqueue/redis/transport.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace bq = babelqueue;
using bq::Delivery;
using bq::Errc;
namespace redis = bq::redis;
using bq::redis_test::fresh_queue;
using bq::redis_test::open_or_die;
using bq::redis_test::Raw;
using bq::redis_test::with_param;
using bq::test_support::ContractTarget;
using namespace std::chrono_literals;

namespace {

ContractTarget plain_target() {
  bq::redis::register_transport();
  return ContractTarget::from_url("plain", with_param(bq::redis_test::plain_url(), "visibility_timeout=1"))
      .with_visibility_timeout(1s);
}

ContractTarget tls_target() {
  bq::redis::register_transport();
  return ContractTarget::from_url(
             "tls", with_param(bq::redis_test::tls_url(), "visibility_timeout=1&tls_ca=" + bq::redis_test::tls_ca()))
      .with_visibility_timeout(1s);
}

std::string envelope_body(std::string_view urn, const bq::Value& data, const std::string& queue) {
  bq::MakeOptions make;
  make.queue = queue;
  auto envelope = bq::Envelope::make(urn, data, make);
  if (!envelope) throw std::runtime_error(envelope.error().message());
  return std::string(envelope->body());
}

bq::WorkerOptions quiet_options() {
  bq::WorkerOptions options;
  options.log = [](bq::LogLevel, std::string_view) {};
  options.poll_timeout = 200ms;
  return options;
}

std::vector<Delivery> receive_n(bq::Transport& transport, const std::string& queue, std::size_t n,
                                std::chrono::milliseconds wait = 5s) {
  std::vector<Delivery> all;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto batch = transport.receive(queue, n - all.size(), 200ms);
    if (!batch) throw std::runtime_error(batch.error().message());
    for (auto& d : *batch) all.push_back(std::move(d));
  }
  return all;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Redis, TransportContract, ::testing::Values(plain_target(), tls_target()),
                         ContractTarget::name_of);

// ---- URL ----

TEST(RedisUrl, ReadsHostPortDatabaseCredentialsAndOptions) {
  auto url = bq::Url::parse(
      "rediss://app:s%40cret@cache.example:6380/3?visibility_timeout=2.5&tls_ca=/etc/ca.pem"
      "&processing_suffix=:inflight&max_connections=4");
  ASSERT_TRUE(url);
  auto options = redis::Transport::options_from_url(*url);
  ASSERT_TRUE(options) << options.error().message();
  EXPECT_EQ(options->host, "cache.example");
  EXPECT_EQ(options->port, 6380);
  EXPECT_EQ(options->database, 3);
  EXPECT_EQ(options->user, "app");
  EXPECT_EQ(options->password, "s@cret");
  EXPECT_TRUE(options->tls.enabled);
  EXPECT_TRUE(options->tls.verify);
  EXPECT_EQ(options->tls.ca_file, "/etc/ca.pem");
  EXPECT_EQ(options->visibility_timeout, 2500ms);
  EXPECT_EQ(options->processing_suffix, ":inflight");
  EXPECT_EQ(options->max_connections, 4U);

  auto defaults = redis::Transport::options_from_url(*bq::Url::parse("redis://localhost"));
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->port, 6379);
  EXPECT_EQ(defaults->database, 0);
  EXPECT_EQ(defaults->visibility_timeout, 30s);
  EXPECT_EQ(defaults->processing_suffix, ":processing");
  EXPECT_FALSE(defaults->tls.enabled);
}

TEST(RedisUrl, RefusesWhatItDoesNotUnderstand) {
  for (const char* text : {"redis://h?visibility_timeot=1", "redis://h/abc", "redis://h?visibility_timeout=0",
                           "redis://h?tls_ca=/x", "redis://h?max_connections=0", "redis://a:1,b:2"}) {
    auto url = bq::Url::parse(text);
    ASSERT_TRUE(url) << text;
    auto options = redis::Transport::options_from_url(*url);
    ASSERT_FALSE(options) << text;
    EXPECT_EQ(options.error().code(), Errc::invalid_argument) << text;
  }
  auto unknown = redis::Transport::options_from_url(*bq::Url::parse("redis://h?visibility_timeot=1"));
  EXPECT_NE(unknown.error().message().find("visibility_timeot"), std::string::npos);
}

TEST(RedisUrl, ReadsTheSharedVocabulary) {
  auto options = redis::Transport::options_from_url(
      *bq::Url::parse("rediss://h?visibility_timeout=1500ms&connect_timeout=2s&command_timeout=1m&reconnect_min=50ms"
                      "&reconnect_max=3&cacert=/etc/ca.pem&verify=false&tls_server_name=cache"));
  ASSERT_TRUE(options) << options.error().message();
  EXPECT_EQ(options->visibility_timeout, 1500ms);
  EXPECT_EQ(options->connect_timeout, 2s);
  EXPECT_EQ(options->command_timeout, 1min);
  EXPECT_EQ(options->reconnect_backoff.initial, 50ms);
  EXPECT_EQ(options->reconnect_backoff.max, 3s);
  EXPECT_GT(options->reconnect_backoff.jitter, 0.0);
  EXPECT_EQ(options->tls.ca_file, "/etc/ca.pem");
  EXPECT_FALSE(options->tls.verify);
  EXPECT_EQ(options->tls.server_name, "cache");
  // The older spelling of reconnect_max.
  auto old = redis::Transport::options_from_url(*bq::Url::parse("redis://h?reconnect_backoff_max=0.5"));
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_EQ(old->reconnect_backoff.max, 500ms);
  auto bad = redis::Transport::options_from_url(*bq::Url::parse("redis://u:hunter2@h?connect_timeout=abc"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(),
            "redis:// URL: parameter 'connect_timeout' is 'abc', expected a duration (500ms, 5s, 2m, or a number of "
            "seconds) between 1ms and 1h");
}

// ---- the header frame ----

TEST(RedisFrame, IsTheSharedFrameOnlyWhenHeadersRemain) {
  const std::string body = R"({"job":"urn:a","data":{"t":"<a&b> \"q\" é"}})";
  auto bare = bq::redis_detail::frame(body, {{"empty", ""}, {"", "x"}});
  ASSERT_TRUE(bare);
  EXPECT_EQ(*bare, body);
  auto framed = bq::redis_detail::frame(body, {{"traceparent", "00-ab-cd-01"}, {"b", "2"}});
  ASSERT_TRUE(framed);
  EXPECT_EQ(
      *framed,
      R"({"__bq_frame":1,"headers":{"b":"2","traceparent":"00-ab-cd-01"},"body":"{\"job\":\"urn:a\",\"data\":{\"t\":\"<a&b> \\\"q\\\" é\"}}"})");
  auto back = bq::redis_detail::unframe(*framed);
  EXPECT_TRUE(back.framed);
  EXPECT_EQ(back.body, body);
  EXPECT_EQ(back.headers.at("traceparent"), "00-ab-cd-01");
}

TEST(RedisFrame, ReadsGoFramesWithHtmlEscapes) {
  // Go's json.Marshal escapes <, > and & inside the embedded body.
  const std::string go = R"({"__bq_frame":1,"headers":{"traceparent":"t"},"body":"{\"x\":\"\u003ca\u0026b\u003e\"}"})";
  auto back = bq::redis_detail::unframe(go);
  EXPECT_TRUE(back.framed);
  EXPECT_EQ(back.body, R"({"x":"<a&b>"})");
}

TEST(RedisFrame, AnythingElseIsReturnedVerbatim) {
  for (const std::string& element :
       {std::string(R"({"job":"urn:a","trace_id":"t"})"), std::string("not json"), std::string(),
        std::string(R"({"headers":{"a":"b"},"body":"x"})"), std::string(R"({"__bq_frame":0,"body":"x"})"),
        std::string(R"({"__bq_frame":1,"headers":{"a":"b"},"body":42})"),
        std::string(R"({"__bq_frame":1,"body":"trunc)"), std::string("{\"__bq_frame\":1,\"body\":\"\xff\"}")}) {
    auto back = bq::redis_detail::unframe(element);
    EXPECT_FALSE(back.framed) << element;
    EXPECT_EQ(back.body, element);
    EXPECT_TRUE(back.headers.empty());
  }
}

// ---- the wire layout other SDKs rely on ----

TEST(RedisTransportWire, ThePublishedElementIsTheEnvelopeByteForByte) {
  auto transport = open_or_die(bq::redis_test::plain_url());
  Raw raw;
  const std::string queue = fresh_queue("wire");
  const std::string body = envelope_body("urn:test:wire", bq::Value::object({{"n", 1}, {"s", "é <&>"}}), queue);
  ASSERT_TRUE(transport->publish(queue, body));
  EXPECT_EQ(raw.list(queue), std::vector<std::string>{body});
  ASSERT_TRUE(transport->publish(queue, body, {.headers = {{"traceparent", "00-1-2-01"}}}));
  const auto stored = raw.list(queue);
  ASSERT_EQ(stored.size(), 2U);
  EXPECT_EQ(stored[1], *bq::redis_detail::frame(body, {{"traceparent", "00-1-2-01"}}));
  auto received = receive_n(*transport, queue, 2);
  ASSERT_EQ(received.size(), 2U);
  for (const Delivery& d : received) {
    EXPECT_EQ(d.body, body);
    ASSERT_TRUE(transport->ack(d));
  }
  EXPECT_TRUE(raw.list(queue).empty());
  EXPECT_EQ(raw.number({"ZCARD", queue + ":bq:leases"}), 0);
}

TEST(RedisTransportWire, ElementsOfOtherProducersAreConsumedVerbatim) {
  auto transport = open_or_die(bq::redis_test::plain_url());
  Raw raw;
  const std::string queue = fresh_queue("foreign");
  const std::string bare = envelope_body("urn:test:foreign", bq::Value::object({{"k", "v"}}), queue);
  std::string go_frame = R"({"__bq_frame":1,"headers":{"traceparent":"00-aa-bb-01"},"body":)";
  ASSERT_TRUE(bq::write_json_string(go_frame, bare));
  go_frame += "}";
  raw.run({"RPUSH", queue, bare, go_frame});
  auto received = receive_n(*transport, queue, 2);
  ASSERT_EQ(received.size(), 2U);
  EXPECT_EQ(received[0].body, bare);
  EXPECT_TRUE(received[0].headers.empty());
  EXPECT_EQ(received[1].body, bare);
  EXPECT_EQ(received[1].headers.at("traceparent"), "00-aa-bb-01");
  for (const Delivery& d : received) ASSERT_TRUE(transport->ack(d));
}

TEST(RedisTransportWire, IdenticalElementsAreReservedAndSettledSeparately) {
  auto transport = open_or_die(with_param(bq::redis_test::plain_url(), "visibility_timeout=0.5"));
  Raw raw;
  const std::string queue = fresh_queue("twins");
  const std::string body = envelope_body("urn:test:twin", bq::Value::object({{"same", true}}), queue);
  ASSERT_TRUE(transport->publish(queue, body));
  ASSERT_TRUE(transport->publish(queue, body));
  auto both = receive_n(*transport, queue, 2);
  ASSERT_EQ(both.size(), 2U);
  EXPECT_NE(both[0].token.text, both[1].token.text);
  EXPECT_EQ(raw.number({"ZCARD", queue + ":bq:leases"}), 2);
  ASSERT_TRUE(transport->ack(both[0]));
  auto again = transport->ack(both[0]);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), Errc::not_found);
  // The twin's lease expires: exactly one copy comes back.
  auto back = receive_n(*transport, queue, 1, 2500ms);
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(back[0].body, body);
  ASSERT_TRUE(transport->ack(back[0]));
  auto stale = transport->ack(both[1]);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), Errc::not_found);
  EXPECT_TRUE(transport->receive(queue, 10, 800ms)->empty());
  EXPECT_TRUE(raw.list(queue).empty());
  EXPECT_EQ(raw.number({"ZCARD", queue + ":bq:leases"}), 0);
}

// A Go or Python worker keeps its reservation in <queue>:processing (or the
// suffix it was given); however long it holds it, this transport never moves
// it back, and stats() counts it as reserved.
TEST(RedisTransportWire, NeverRequeuesTheReservationsOfGoAndPythonWorkers) {
  Raw raw;
  for (const std::string suffix : {":processing", ":inflight"}) {
    auto transport =
        open_or_die(with_param(bq::redis_test::plain_url(), "visibility_timeout=0.2&processing_suffix=" + suffix));
    const std::string queue = fresh_queue("foreign-reservation");
    const std::string held = envelope_body("urn:test:held-by-go", bq::Value::object({{"go", 1}}), queue);
    raw.run({"RPUSH", queue + suffix, held});
    ASSERT_TRUE(transport->publish(queue, envelope_body("urn:test:ours", bq::Value::object(), queue)));
    auto ours = receive_n(*transport, queue, 1);
    ASSERT_EQ(ours.size(), 1U);
    // Several receives well past the visibility timeout: our own unsettled
    // lease comes back, the foreign reservation never does.
    auto back = receive_n(*transport, queue, 1, 2s);
    ASSERT_EQ(back.size(), 1U);
    EXPECT_EQ(back[0].body, ours[0].body);
    auto stats = transport->stats(queue);
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->ready, 0);
    EXPECT_EQ(stats->reserved, 2);  // ours + the foreign one
    ASSERT_TRUE(transport->ack(back[0]));
    EXPECT_TRUE(transport->receive(queue, 10, 600ms)->empty());
    EXPECT_EQ(raw.list(queue + suffix), std::vector<std::string>{held}) << suffix;
    raw.run({"DEL", queue + suffix});
  }
}

// A blocking wait longer than command_timeout: the socket read waits for the
// whole wait plus command_timeout, so it never gives up before the server.
TEST(RedisTransportWire, AWaitLongerThanTheCommandTimeoutIsNoTimeout) {
  auto transport = open_or_die(with_param(bq::redis_test::plain_url(), "command_timeout=0.3"));
  const std::string queue = fresh_queue("long-wait");
  const auto start = std::chrono::steady_clock::now();
  auto received = transport->receive(queue, 1, 1500ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(received) << received.error().message();
  EXPECT_TRUE(received->empty());
  EXPECT_GE(elapsed, 1450ms);
  EXPECT_LE(elapsed, 2500ms);
  // And the connection is still good for the next call.
  ASSERT_TRUE(transport->publish(queue, "x"));
  auto got = transport->receive(queue, 1, 1s);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), 1U);
  ASSERT_TRUE(transport->ack(got->front()));
}

// ---- bodies at the limits ----

// A body that takes longer to send than command_timeout: the time a command
// may take grows with the bytes it moves (1 s per MiB), so a big publish is
// not timed out on its way (before, it failed with "timed out sending to
// Redis" and, retried, never got through).
TEST(RedisTransportLimits, ABigBodyIsPublishedAlthoughSendingItTakesLongerThanTheCommandTimeout) {
  auto transport = open_or_die(with_param(bq::redis_test::plain_url(), "command_timeout=20ms"));
  const std::string queue = fresh_queue("big-body");
  const std::string body(64U << 20U, 'b');
  const auto published = transport->publish(queue, body);
  ASSERT_TRUE(published) << published.error().message();
  std::vector<bq::OutgoingMessage> batch{{queue, body, {}}};
  const auto batched = transport->publish_batch(batch);
  ASSERT_TRUE(batched) << batched.error().message();
  bq::redis_test::Raw raw;
  EXPECT_EQ(raw.run({"LLEN", queue}), std::vector<std::string>{"2"});
  EXPECT_EQ(raw.run({"EVAL", "return string.len(redis.call('LINDEX', KEYS[1], 0))", "1", queue}),
            std::vector<std::string>{std::to_string(body.size())});
  raw.run({"DEL", queue});
}

// Above max_message_size a publish fails before anything is sent, naming
// both sizes; at the limit it goes through. The limit counts the element
// Redis stores: the body framed with its headers.
TEST(RedisTransportLimits, APublishAboveTheLimitFailsNamingBothSizes) {
  auto transport = open_or_die(with_param(bq::redis_test::plain_url(), "max_message_size=1000"));
  const std::string queue = fresh_queue("limit");
  const auto too_big = transport->publish(queue, std::string(1001, 'x'));
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(too_big.error().message().find("is 1001 bytes"), std::string::npos) << too_big.error().message();
  EXPECT_NE(too_big.error().message().find("at most 1000 bytes (max_message_size)"), std::string::npos);
  EXPECT_TRUE(transport->publish(queue, std::string(1000, 'x')));
  bq::PublishOptions with_headers;
  with_headers.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  EXPECT_FALSE(transport->publish(queue, std::string(1000, 'x'), with_headers));
  std::vector<bq::OutgoingMessage> batch{{queue, "small", {}}, {queue, std::string(2000, 'x'), {}}};
  const auto batched = transport->publish_batch(batch);
  ASSERT_FALSE(batched);
  EXPECT_NE(batched.error().message().find("message 1 of the batch"), std::string::npos) << batched.error().message();
  bq::redis_test::Raw raw;
  EXPECT_EQ(raw.run({"LLEN", queue}), std::vector<std::string>{"1"});
  raw.run({"DEL", queue});
}

// A big element is slow to claim on the server (its bytes are copied into
// the lease before the first byte of the reply comes back), longer than a
// short command timeout: a receive that timed out after the claim was sent
// grows the queue's allowance, the element comes back when its lease ends,
// and a later receive takes it. Before, every claim of it timed out, for ever.
TEST(RedisTransportLimits, ABigElementSlowerToClaimThanTheCommandTimeoutIsReceived) {
  auto transport =
      open_or_die(with_param(with_param(bq::redis_test::plain_url(), "command_timeout=5ms"), "visibility_timeout=2"));
  const std::string queue = fresh_queue("slowclaim");
  const std::string big(24 * 1024 * 1024, 'x');
  ASSERT_TRUE(transport->publish(queue, big));
  std::optional<bq::Delivery> got;
  int failures = 0;
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
       !got && std::chrono::steady_clock::now() < deadline;) {
    auto received = transport->receive(queue, 1, std::chrono::milliseconds(500));
    if (!received) {
      ++failures;
      EXPECT_EQ(received.error().code(), bq::Errc::outcome_unknown) << received.error().message();
      continue;
    }
    if (!received->empty()) got = std::move(received->front());
  }
  ASSERT_TRUE(got) << "never received after " << failures << " failed receives";
  EXPECT_EQ(got->body.size(), big.size());
  EXPECT_TRUE(transport->ack(*got));
  bq::redis_test::Raw raw;
  raw.run({"DEL", queue});
}

// ---- crash safety ----

// A process that received a message and was killed -9 before settling it:
// the message comes back after the visibility timeout.
TEST(RedisTransportCrash, AKilledProcessesReservationComesBack) {
  const std::string url = with_param(bq::redis_test::plain_url(), "visibility_timeout=1");
  const std::string queue = fresh_queue("killed");
  const std::string body = envelope_body("urn:test:killed", bq::Value::object({{"i", 7}}), queue);
  {
    auto producer = open_or_die(url);
    ASSERT_TRUE(producer->publish(queue, body));
  }
  std::array<int, 2> pipe_fds{};
  ASSERT_EQ(::pipe(pipe_fds.data()), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    auto transport = open_or_die(url);
    auto got = transport->receive(queue, 1, 5s);
    const char ok = got && got->size() == 1 ? 'y' : 'n';
    (void)!::write(pipe_fds[1], &ok, 1);
    ::pause();  // holds the message until killed
    std::_Exit(0);
  }
  ::close(pipe_fds[1]);
  char got = 0;
  ASSERT_EQ(::read(pipe_fds[0], &got, 1), 1);
  ::close(pipe_fds[0]);
  ASSERT_EQ(got, 'y');
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto transport = open_or_die(url);
  auto back = receive_n(*transport, queue, 1, 5s);
  ASSERT_EQ(back.size(), 1U);
  EXPECT_EQ(back[0].body, body);
  EXPECT_LE(std::chrono::steady_clock::now() - killed_at, 3s);
  ASSERT_TRUE(transport->ack(back[0]));
}

// A live worker whose handler runs far past the visibility timeout keeps its
// message (the runtime extends the lease): nobody else receives it.
TEST(RedisTransportCrash, ALongHandlerKeepsItsMessage) {
  // The handler runs for 3 visibility timeouts; the runtime extends the
  // lease every third of one.
  const std::string url = with_param(bq::redis_test::plain_url(), "visibility_timeout=1.5");
  const std::string queue = fresh_queue("long");
  auto transport = open_or_die(url);
  auto rival = open_or_die(url);
  ASSERT_TRUE(transport->publish(queue, envelope_body("urn:test:long", bq::Value::object(), queue)));
  std::atomic<int> runs{0};
  bq::Worker worker(*transport, quiet_options());
  worker.handle("urn:test:long", [&](const bq::Message&) {
    ++runs;
    std::this_thread::sleep_for(4500ms);
  });
  std::thread rival_thread([&] {
    // From the moment the handler runs, for longer than it runs.
    while (runs.load() == 0) std::this_thread::sleep_for(5ms);
    const auto until = std::chrono::steady_clock::now() + 4s;
    while (std::chrono::steady_clock::now() < until) {
      auto stolen = rival->receive(queue, 1, 200ms);
      ASSERT_TRUE(stolen);
      EXPECT_TRUE(stolen->empty()) << "a live worker's message was handed to another consumer";
      for (const Delivery& d : *stolen) (void)rival->release(d);
    }
  });
  auto summary = worker.run({queue}, {.max_messages = 1});
  rival_thread.join();
  ASSERT_TRUE(summary);
  EXPECT_EQ(runs.load(), 1);
  auto stats = transport->stats(queue);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->ready + stats->reserved + stats->delayed, 0);
}

// ---- dead-lettering and bad input ----

TEST(RedisTransportDeadLetter, AFailingMessageIsDeadLetteredWithItsHeaders) {
  auto transport = open_or_die(bq::redis_test::plain_url());
  const std::string queue = fresh_queue("failing");
  ASSERT_TRUE(
      transport->publish(queue, envelope_body("urn:test:fails", bq::Value::object({{"x", 1}}), queue),
                         {.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}));
  auto options = quiet_options();
  options.dead_letter = true;
  options.max_attempts = 2;
  bq::Worker worker(*transport, options);
  worker.handle("urn:test:fails", [](const bq::Message&) { throw std::runtime_error("always"); });
  ASSERT_TRUE(worker.run({queue}, {.idle_exit = 500ms}));
  auto dead = receive_n(*transport, queue + ".dlq", 1);
  ASSERT_EQ(dead.size(), 1U);
  auto envelope = bq::Envelope::decode(dead[0].body);
  ASSERT_TRUE(envelope) << dead[0].body;
  ASSERT_TRUE(envelope->dead_letter());
  EXPECT_EQ(envelope->dead_letter()->reason, "failed");
  EXPECT_EQ(envelope->attempts(), 2);
  EXPECT_EQ(dead[0].headers.at("traceparent"), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  ASSERT_TRUE(transport->ack(dead[0]));
  EXPECT_TRUE(transport->receive(queue, 1, 100ms)->empty());
}

TEST(RedisTransportDeadLetter, PoisonAndBrokenFramesAreDeadLetteredWithTheirBytes) {
  auto transport = open_or_die(bq::redis_test::plain_url());
  Raw raw;
  const std::string queue = fresh_queue("poison");
  const std::vector<std::string> bad = {
      "not an envelope <&>",                                                           // not JSON
      std::string("\xff\xfe raw bytes \x01", 15),                                      // not UTF-8
      R"({"__bq_frame":1,"headers":{"a":"b"},"body":42})",                             // frame, body not a string
      R"({"__bq_frame":1,"headers":{"a":"b"},"body":"{\"jo)",                          // frame cut short
      R"({"__bq_frame":1,"headers":{"traceparent":"00-1-2-01"},"body":"{\"job\":"})",  // body not an envelope
  };
  for (const std::string& element : bad) raw.run({"RPUSH", queue, element});
  const std::string good = envelope_body("urn:test:good", bq::Value::object({{"ok", true}}), queue);
  raw.run({"RPUSH", queue, good});

  auto options = quiet_options();
  options.dead_letter = true;
  bq::Worker worker(*transport, options);
  std::atomic<int> handled{0};
  worker.handle("urn:test:good", [&](const bq::Message&) { ++handled; });
  auto summary = worker.run({queue}, {.idle_exit = 500ms});
  ASSERT_TRUE(summary);
  EXPECT_EQ(handled.load(), 1) << "the worker must go on after bad input";

  auto dead = receive_n(*transport, queue + ".dlq", bad.size());
  ASSERT_EQ(dead.size(), bad.size());
  std::multiset<std::string> bodies;
  for (const Delivery& d : dead) {
    bodies.insert(d.body);
    ASSERT_TRUE(transport->ack(d));
  }
  // Bytes that are not a JSON object are kept exactly.
  EXPECT_EQ(bodies.count(bad[0]), 1U);
  EXPECT_EQ(bodies.count(bad[1]), 1U);
  EXPECT_EQ(bodies.count(R"({"job":)"), 1U);  // the frame's body, unwrapped
  // The JSON-object frames keep every byte and gain the dead_letter block.
  for (const std::string& frame : {bad[2]}) {
    const std::string prefix = frame.substr(0, frame.size() - 1);
    EXPECT_TRUE(std::any_of(bodies.begin(), bodies.end(), [&](const std::string& b) {
      return b.rfind(prefix, 0) == 0;
    })) << frame;
  }
  EXPECT_EQ(bodies.count(bad[3]), 1U);
  for (const Delivery& d : dead) {
    if (d.body == bad[0]) {
      EXPECT_EQ(d.headers.at(std::string(bq::kDeadLetterReasonHeader)), "poison");
    }
  }
}

// ---- batches and delays ----

TEST(RedisTransportBatch, APipelinedBatchKeepsOrderHeadersAndDelays) {
  auto transport = open_or_die(bq::redis_test::plain_url());
  Raw raw;
  const std::string queue = fresh_queue("batch");
  std::vector<bq::OutgoingMessage> batch;
  for (int i = 0; i < 2500; ++i) {
    bq::OutgoingMessage m;
    m.queue = queue;
    m.body = "m" + std::to_string(i);
    if (i % 500 == 1) m.options.headers = {{"x-i", std::to_string(i)}};
    if (i % 1000 == 2) m.options.delay = 400ms;
    batch.push_back(std::move(m));
  }
  ASSERT_TRUE(transport->publish_batch(batch));
  EXPECT_EQ(raw.number({"LLEN", queue}), 2497);
  EXPECT_EQ(raw.number({"ZCARD", queue + ":bq:delayed"}), 3);
  auto stats = transport->stats(queue);
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->delayed, 3);
  auto all = receive_n(*transport, queue, 2500, 10s);
  ASSERT_EQ(all.size(), 2500U);
  std::vector<std::string> order;
  for (const Delivery& d : all) {
    order.push_back(d.body);
    if (d.body == "m501") {
      EXPECT_EQ(d.headers.at("x-i"), "501");
    }
  }
  EXPECT_EQ(order[0], "m0");
  EXPECT_EQ(order[1], "m1");
  EXPECT_EQ(order[2], "m3");  // m2 was delayed
  std::set<std::string> unique(order.begin(), order.end());
  EXPECT_EQ(unique.size(), 2500U);
  std::vector<bq::OutgoingMessage> acks;
  for (const Delivery& d : all) ASSERT_TRUE(transport->ack(d));
}

TEST(RedisTransportBatch, AFailedMessageIsNamed) {
  auto transport = open_or_die(bq::redis_test::plain_url());
  Raw raw;
  const std::string queue = fresh_queue("wrongtype");
  raw.run({"SET", queue, "a string, not a list"});
  std::vector<bq::OutgoingMessage> batch(3);
  batch[0].queue = fresh_queue("fine");
  batch[0].body = "a";
  batch[1].queue = queue;
  batch[1].body = "b";
  batch[2].queue = batch[0].queue;
  batch[2].body = "c";
  auto published = transport->publish_batch(batch);
  ASSERT_FALSE(published);
  EXPECT_EQ(published.error().code(), Errc::broker);
  EXPECT_NE(published.error().message().find("message 1"), std::string::npos) << published.error().message();
  EXPECT_NE(published.error().message().find("WRONGTYPE"), std::string::npos);
  EXPECT_NE(published.error().message().find(queue), std::string::npos);
  raw.run({"DEL", queue, batch[0].queue});
}

// ---- refusals and unknown outcomes, through the Publisher ----

// A publish Redis refuses is reported, synchronously and through the
// callback, with Redis's own code; a key of the wrong type stays so, so it is
// not retried (retriability decided where the refusal arose).
TEST(RedisPublisher, ARefusedPublishIsReportedSynchronouslyAndThroughTheCallback) {
  Raw raw;
  const std::string queue = fresh_queue("refused");
  raw.run({"SET", queue, "a string, not a list"});
  bq::PublisherOptions options;
  options.default_queue = queue;
  options.log = {};
  bq::Publisher publisher(open_or_die(bq::redis_test::plain_url()), options);

  auto refused = publisher.publish("urn:babel:orders:created", bq::Value::object({{"order_id", 1}}));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), Errc::broker);
  EXPECT_FALSE(refused.error().retriable());
  EXPECT_EQ(refused.error().native_code(), "WRONGTYPE");
  EXPECT_NE(refused.error().native_message().find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(refused.error().message().find("tries"), std::string::npos) << "sent once: " << refused.error().message();

  std::promise<bq::Result<bq::PublishReceipt>> called;
  publisher.publish_async("urn:babel:orders:created", bq::Value::object({{"order_id", 2}}),
                          [&](bq::Result<bq::PublishReceipt> outcome) { called.set_value(std::move(outcome)); });
  auto through_callback = called.get_future().get();
  ASSERT_FALSE(through_callback);
  EXPECT_EQ(through_callback.error().native_code(), "WRONGTYPE");

  auto future = publisher.publish_async("urn:babel:orders:created", bq::Value::object({{"order_id", 3}})).get();
  ASSERT_FALSE(future);
  EXPECT_EQ(future.error().code(), Errc::broker);
  EXPECT_EQ(raw.run({"TYPE", queue}), std::vector<std::string>{"string"});
  raw.run({"DEL", queue});
}

// A publish whose reply does not come: Redis ran it, so the error must say
// the outcome is unknown, not that it timed out (which reads "not sent").
TEST(RedisPublisher, APublishWhoseReplyDidNotArriveIsOutcomeUnknown) {
  Raw raw;
  const std::string queue = fresh_queue("unknown");
  bq::test_support::ReplyDroppingProxy proxy(bq::redis_test::plain_port());
  auto transport =
      open_or_die("redis://127.0.0.1:" + std::to_string(proxy.port()) + "/0?command_timeout=300ms&max_connections=1");
  ASSERT_TRUE(transport->publish(queue, "confirmed"));
  proxy.drop_replies();
  auto unknown = transport->publish(queue, "unconfirmed");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), Errc::outcome_unknown) << unknown.error().message();
  EXPECT_TRUE(unknown.error().retriable());
  EXPECT_EQ(raw.run({"LRANGE", queue, "0", "-1"}), (std::vector<std::string>{"confirmed", "unconfirmed"}))
      << "Redis holds the message whose publish failed";
  raw.run({"DEL", queue});
}

// ---- TLS and AUTH ----

namespace {

std::string make_other_ca(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string ca = (dir / "other-ca.crt").string();
  const std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 1 -keyout '" +
                              (dir / "other-ca.key").string() + "' -out '" + ca +
                              "' -subj '/CN=not the babelqueue test CA' >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("openssl could not make a CA");
  return ca;
}

}  // namespace

TEST(RedisTransportTls, VerifiesTheServerAgainstTheGivenCa) {
  auto good = bq::open_transport(with_param(bq::redis_test::tls_url(), "tls_ca=" + bq::redis_test::tls_ca()));
  ASSERT_TRUE(good) << good.error().message();

  const auto dir = std::filesystem::temp_directory_path() / ("bq-redis-tls-" + bq::uuid_v4().substr(0, 8));
  const std::string other = make_other_ca(dir);
  auto wrong = bq::open_transport(with_param(bq::redis_test::tls_url(), "tls_ca=" + other));
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), Errc::auth);
  const std::string& message = wrong.error().message();
  EXPECT_NE(message.find("TLS certificate"), std::string::npos) << message;
  EXPECT_NE(message.find(other), std::string::npos) << message;
  EXPECT_NE(message.find("127.0.0.1:"), std::string::npos) << message;

  // Without tls_ca the system's CAs do not know the test CA either.
  auto system = bq::open_transport(bq::redis_test::tls_url());
  ASSERT_FALSE(system);
  EXPECT_EQ(system.error().code(), Errc::auth) << system.error().message();
}

TEST(RedisTransportTls, MistakesAreNamed) {
  bq::redis::register_transport();
  auto missing = bq::open_transport(with_param(bq::redis_test::tls_url(), "tls_ca=/nonexistent/ca.pem"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Errc::invalid_argument);
  EXPECT_NE(missing.error().message().find("/nonexistent/ca.pem"), std::string::npos);

  // TLS spoken to the plain port: said as such, without waiting out the
  // connect timeout (the server, reading a command, never answers the
  // ClientHello).
  const auto start = std::chrono::steady_clock::now();
  auto tls_to_plain =
      bq::open_transport(with_param("rediss://127.0.0.1:" + std::to_string(bq::redis_test::plain_port()) + "/0",
                                    "connect_timeout=30&tls_ca=" + bq::redis_test::tls_ca()));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(tls_to_plain);
  EXPECT_EQ(tls_to_plain.error().code(), Errc::connection);
  EXPECT_NE(tls_to_plain.error().message().find("the server did not answer TLS: is this a TLS port?"),
            std::string::npos)
      << tls_to_plain.error().message();
  EXPECT_LT(elapsed, std::chrono::seconds(15)) << "waited out the connect timeout";
}

TEST(RedisTransportAuth, AWrongPasswordIsRefusedClearly) {
  bq::redis::register_transport();
  Raw raw;
  const std::string user = "bq-test-" + bq::uuid_v4().substr(0, 8);
  raw.run({"ACL", "SETUSER", user, "on", ">right-password", "~*", "&*", "+@all"});
  const std::string base = "redis://" + user + ":%s@127.0.0.1:" + std::to_string(bq::redis_test::plain_port()) + "/0";
  auto url_with = [&](const std::string& password) {
    std::string url = base;
    url.replace(url.find("%s"), 2, password);
    return url;
  };
  auto wrong = bq::open_transport(url_with("wrong-password"));
  auto right = bq::open_transport(url_with("right-password"));
  auto wrong_tls = bq::open_transport(
      with_param("rediss://" + user + ":wrong-password@127.0.0.1:" + bq::redis_test::info().at("tls_port") + "/0",
                 "tls_ca=" + bq::redis_test::tls_ca()));
  const std::string queue = fresh_queue("auth");
  if (right) {
    EXPECT_TRUE((*right)->publish(queue, "x"));
  }
  raw.run({"ACL", "DELUSER", user});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), Errc::auth);
  EXPECT_NE(wrong.error().message().find("refused user '" + user + "'"), std::string::npos) << wrong.error().message();
  EXPECT_NE(wrong.error().message().find("WRONGPASS"), std::string::npos);
  EXPECT_EQ(wrong.error().message().find("wrong-password"), std::string::npos) << "the password must not be shown";
  ASSERT_TRUE(right) << right.error().message();
  ASSERT_FALSE(wrong_tls);
  EXPECT_EQ(wrong_tls.error().code(), Errc::auth);
  raw.run({"DEL", queue});
}

// ---- logging ----

namespace {

// The lines a transport logged, for the tests below.
struct Captured {
  std::mutex mutex;
  std::vector<std::pair<bq::LogLevel, std::string>> lines;

  bq::LogSink sink() {
    return [this](bq::LogLevel level, std::string_view line) {
      const std::lock_guard lock(mutex);
      lines.emplace_back(level, std::string(line));
    };
  }
  std::string text() {
    const std::lock_guard lock(mutex);
    std::string all;
    for (const auto& line : lines) all += line.second + "\n";
    return all;
  }
};

}  // namespace

TEST(RedisTransportLog, ConnectsLostConnectionsAndReconnectsAreLoggedWithoutCredentials) {
  Raw raw;
  const std::string user = "bq-log-" + bq::uuid_v4().substr(0, 8);
  const std::string password = "log-test-secret-" + bq::uuid_v4().substr(0, 8);
  raw.run({"ACL", "SETUSER", user, "on", ">" + password, "~*", "&*", "+@all"});
  Captured captured;
  redis::Transport::Options options;
  options.port = static_cast<std::uint16_t>(bq::redis_test::plain_port());
  options.user = user;
  options.password = password;
  options.max_connections = 1;
  options.log = captured.sink();
  auto transport = redis::Transport::open(options);
  ASSERT_TRUE(transport) << transport.error().message();
  const std::string queue = fresh_queue("log");
  ASSERT_TRUE((*transport)->publish(queue, "a"));
  const std::string address = "127.0.0.1:" + std::to_string(bq::redis_test::plain_port());
  EXPECT_NE(captured.text().find("redis: connected to " + address + " (database 0)"), std::string::npos)
      << captured.text();

  // The server drops this user's connection: the next call fails or
  // succeeds on a new connection, and the log says what happened.
  raw.run({"CLIENT", "KILL", "USER", user});
  bool published = false;
  for (int i = 0; i < 5 && !published; ++i) published = static_cast<bool>((*transport)->publish(queue, "b"));
  EXPECT_TRUE(published);
  raw.run({"ACL", "DELUSER", user});
  raw.run({"DEL", queue});
  const std::string text = captured.text();
  EXPECT_NE(text.find("redis: connection to " + address + " lost"), std::string::npos) << text;
  EXPECT_NE(text.find("redis: reconnected to " + address), std::string::npos) << text;
  EXPECT_EQ(text.find(password), std::string::npos) << "the password must not be logged";
}

TEST(RedisTransportLog, AFailedConnectAttemptIsLoggedWithTheNextPause) {
  Captured captured;
  redis::Transport::Options options;
  options.port = 1;  // nothing listens there
  options.password = "never-logged-secret";
  options.connect_timeout = 500ms;
  options.log = captured.sink();
  auto transport = redis::Transport::open(options);
  ASSERT_FALSE(transport);
  const std::string text = captured.text();
  EXPECT_NE(text.find("redis: connect attempt 1 to 127.0.0.1:1 failed, next in "), std::string::npos) << text;
  EXPECT_EQ(text.find("never-logged-secret"), std::string::npos) << text;
  ASSERT_FALSE(captured.lines.empty());
  EXPECT_EQ(captured.lines.front().first, bq::LogLevel::warning);
}
