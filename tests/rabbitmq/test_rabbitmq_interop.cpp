// SPDX-License-Identifier: Apache-2.0
// Interop with the published Python SDK (babelqueue[amqp], pika) on the same
// RabbitMQ queues, both ways, bodies compared byte for byte; and the AMQP
// projection of a body published by each SDK compared as the broker holds it.
#include "rabbitmq_raw.hpp"
#include "rabbitmq_test_env.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/value.hpp>

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace bq = babelqueue;
namespace rmq = babelqueue::rabbitmq::testing;
using namespace std::chrono_literals;

namespace {

std::vector<bq::Value> run_python(const std::string& mode, const std::string& queue, int count) {
  const std::string source = BQ_SOURCE_DIR;
  const std::string command = source + "/scripts/python-sdk run " + source + "/tests/rabbitmq/python_peer.py " + mode +
                              " '" + rmq::url() + "' '" + queue + "' " + std::to_string(count);
  std::istringstream lines(bq::testing::run_command_output(command));
  std::vector<bq::Value> out;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    auto value = bq::parse_json(line);
    if (!value) throw bq::Error(value.error());
    out.push_back(std::move(*value));
  }
  return out;
}

TEST(RabbitmqInterop, PythonPublishesAndCppConsumes) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("py-to-cpp");
  const auto sent = run_python("publish", queue, 5);
  ASSERT_EQ(sent.size(), 5U);
  std::multiset<std::string> expected;
  for (const bq::Value& body : sent) expected.insert(body.as_string());
  std::multiset<std::string> received;
  for (int round = 0; round < 20 && received.size() < 5; ++round) {
    auto batch = transport->receive(queue, 5, 1s);
    ASSERT_TRUE(batch) << batch.error().message();
    for (const bq::Delivery& delivery : *batch) {
      received.insert(delivery.body);
      EXPECT_TRUE(delivery.headers.contains("traceparent")) << "the Python SDK's out-of-band header was lost";
      auto envelope = bq::Envelope::decode(delivery.body);
      ASSERT_TRUE(envelope) << "the C++ SDK cannot decode the Python SDK's envelope";
      EXPECT_EQ(envelope->lang(), "python");
      ASSERT_TRUE(transport->ack(delivery));
    }
  }
  EXPECT_EQ(received, expected) << "bodies differ from what the Python SDK published";
}

TEST(RabbitmqInterop, CppPublishesAndPythonConsumes) {
  auto transport = rmq::open_url(rmq::url());
  const std::string queue = rmq::unique_queue("cpp-to-py");
  std::multiset<std::string> sent;
  for (int i = 0; i < 5; ++i) {
    bq::MakeOptions options;
    options.queue = queue;
    auto envelope = bq::Envelope::make(
        "urn:interop:cpp:sent", bq::Value::object({{"index", i}, {"text", "h\xc3\xa9llo \xe4\xb8\xad"}}), options);
    ASSERT_TRUE(envelope);
    bq::PublishOptions publish;
    publish.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
    ASSERT_TRUE(transport->publish(queue, envelope->body(), publish));
    sent.insert(std::string(envelope->body()));
  }
  const auto got = run_python("consume", queue, 5);
  ASSERT_EQ(got.size(), 5U);
  std::multiset<std::string> received;
  for (const bq::Value& message : got) {
    received.insert(message.find("body")->as_string());
    const bq::Value* headers = message.find("headers");
    ASSERT_NE(headers, nullptr);
    EXPECT_EQ(headers->find("traceparent")->as_string(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    EXPECT_EQ(headers->find("x-source-lang")->as_string(), "cpp");
    EXPECT_EQ(headers->find("x-attempts")->as_string(), "0");
  }
  EXPECT_EQ(received, sent) << "the Python SDK did not receive the C++ SDK's bytes";
}

TEST(RabbitmqInterop, BothSdksProjectTheSameBodyOntoTheSameProperties) {
  const std::string python_queue = rmq::unique_queue("py-props");
  const std::string cpp_queue = rmq::unique_queue("cpp-props");
  const auto sent = run_python("publish", python_queue, 1);
  ASSERT_EQ(sent.size(), 1U);
  const std::string body = sent[0].as_string();
  auto transport = rmq::open_url(rmq::url());
  bq::PublishOptions publish;
  publish.headers = {{"traceparent", std::string("00-") + std::string(32, 'a') + "-0000000000000000-01"}};
  ASSERT_TRUE(transport->publish(cpp_queue, body, publish));
  auto client = bq::rabbitmq::raw::Client::connect(rmq::url());
  ASSERT_TRUE(client);
  auto from_python = client->get(python_queue);
  auto from_cpp = client->get(cpp_queue);
  ASSERT_TRUE(from_python && from_python->has_value());
  ASSERT_TRUE(from_cpp && from_cpp->has_value());
  EXPECT_EQ((*from_cpp)->body, (*from_python)->body);
  EXPECT_EQ((*from_cpp)->properties, (*from_python)->properties);
  EXPECT_EQ((*from_cpp)->delivery_mode, (*from_python)->delivery_mode);
  EXPECT_EQ((*from_cpp)->headers, (*from_python)->headers);
  EXPECT_EQ((*from_cpp)->header_kinds, (*from_python)->header_kinds) << "header value types differ";
  ASSERT_TRUE(client->delete_queue(python_queue));
  ASSERT_TRUE(client->delete_queue(cpp_queue));
}

}  // namespace
