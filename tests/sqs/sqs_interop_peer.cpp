// SPDX-License-Identifier: Apache-2.0
// The C++ side of the Python interop test (interop.sh): publishes envelopes
// to, or consumes them from, an SQS queue through babelqueue::sqs, writing
// one JSON line per message so the other side can compare byte for byte.
//
//   sqs_interop_peer produce URL QUEUE COUNT OUT   bodies published: {"body": ...}
//   sqs_interop_peer consume URL QUEUE COUNT OUT   {"body", "headers", "native_attempts"}
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/sqs/transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

int fail(const std::string& what) {
  std::cerr << "sqs_interop_peer: " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return fail("usage: sqs_interop_peer produce|consume URL QUEUE COUNT OUT");
  const std::string mode = argv[1];
  const std::string queue = argv[3];
  const auto count = static_cast<std::size_t>(std::stoul(argv[4]));
  std::ofstream out(argv[5]);
  bq::sqs::register_transport();
  auto transport = bq::open_transport(argv[2]);
  if (!transport) return fail(transport.error().message());

  if (mode == "produce") {
    for (std::size_t i = 0; i < count; ++i) {
      bq::MakeOptions make;
      make.queue = queue;
      auto env = bq::Envelope::make(
          "urn:interop:cpp", bq::Value::object({{"i", i}, {"text", "h\u00e9llo \u4e2d\u6587 \"q\" \\"}, {"x", 0.1}}),
          make);
      if (!env) return fail(env.error().message());
      bq::PublishOptions options;
      options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
      if (auto r = (*transport)->publish(queue, env->body(), options); !r) return fail(r.error().message());
      out << bq::to_json(bq::Value::object({{"body", std::string(env->body())}})).value() << "\n";
    }
    return 0;
  }
  if (mode == "consume") {
    std::size_t received = 0;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (received < count && std::chrono::steady_clock::now() < deadline) {
      auto batch = (*transport)->receive(queue, count - received, 2s);
      if (!batch) return fail(batch.error().message());
      for (const bq::Delivery& d : *batch) {
        bq::Object headers;
        for (const auto& [name, value] : d.headers) headers.set(name, value);
        out << bq::to_json(bq::Value::object({{"body", d.body},
                                              {"headers", bq::Value(std::move(headers))},
                                              {"native_attempts", d.native_attempts.value_or(-1)}}))
                   .value()
            << "\n";
        if (auto r = (*transport)->ack(d); !r) return fail(r.error().message());
        ++received;
      }
    }
    return received == count ? 0 : fail("received " + std::to_string(received) + " of " + std::to_string(count));
  }
  return fail("unknown mode " + mode);
}
