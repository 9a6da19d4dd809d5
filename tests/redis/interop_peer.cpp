// SPDX-License-Identifier: Apache-2.0
// The C++ side of the Python interop test (interop_test.sh):
//   interop_peer publish URL QUEUE COUNT OUTFILE   publishes COUNT envelopes (every odd one with a
//                                                 traceparent header), one JSON line per message
//                                                 {"body":...,"headers":{...}} to OUTFILE
//   interop_peer consume URL QUEUE COUNT OUTFILE [WAIT]
//                                                 receives and acks COUNT messages (WAIT seconds at
//                                                 most, default 20),
//                                                 writing the same lines plus "reencoded": whether
//                                                 this SDK re-encodes the body to the same bytes
// Exit status 0 on success.
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/redis/transport.hpp>
#include <babelqueue/transport_registry.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

std::string line_for(const std::string& body, const bq::Headers& headers, const char* extra = nullptr) {
  bq::Object header_object;
  for (const auto& [name, value] : headers) header_object.set(name, bq::Value(value));
  bq::Object line;
  line.set("body", bq::Value(body));
  line.set("headers", bq::Value(std::move(header_object)));
  auto text = bq::to_json(bq::Value(std::move(line)));
  if (!text) throw std::runtime_error("cannot write a line: " + text.error().message());
  if (extra != nullptr) text->insert(text->size() - 1, extra);
  return *text;
}

int publish(bq::Transport& transport, const std::string& queue, int count, std::ofstream& out) {
  for (int i = 0; i < count; ++i) {
    bq::Value data = bq::Value::object({{"i", i},
                                        {"text", "h\u00e9llo <&> \u4e2d\u6587 \"q\" \\"},
                                        {"nested", bq::Value::object({{"b", true}, {"a", nullptr}})},
                                        {"list", bq::Value::array({1, -2, "x"})}});
    bq::MakeOptions make;
    make.queue = queue;
    auto envelope = bq::Envelope::make("urn:interop:cpp", data, make);
    if (!envelope) throw std::runtime_error(envelope.error().message());
    bq::PublishOptions options;
    if (i % 2 == 1) options.headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
    const std::string body(envelope->body());
    if (auto sent = transport.publish(queue, body, options); !sent) {
      std::cerr << "publish failed: " << sent.error().message() << "\n";
      return 1;
    }
    out << line_for(body, options.headers) << "\n";
  }
  return 0;
}

int consume(bq::Transport& transport, const std::string& queue, int count, std::ofstream& out,
            std::chrono::seconds wait) {
  int got = 0;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (got < count && std::chrono::steady_clock::now() < deadline) {
    auto batch = transport.receive(queue, static_cast<std::size_t>(count - got), 500ms);
    if (!batch) {
      std::cerr << "receive failed: " << batch.error().message() << "\n";
      return 1;
    }
    for (const bq::Delivery& delivery : *batch) {
      auto decoded = bq::Envelope::decode(delivery.body);
      const bool same = decoded && decoded->encode() && *decoded->encode() == delivery.body;
      out << line_for(delivery.body, delivery.headers, same ? R"(,"reencoded":true)" : R"(,"reencoded":false)") << "\n";
      if (auto acked = transport.ack(delivery); !acked) {
        std::cerr << "ack failed: " << acked.error().message() << "\n";
        return 1;
      }
      ++got;
    }
  }
  if (got != count) {
    std::cerr << "received " << got << " of " << count << " messages\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::cerr << "usage: interop_peer publish|consume URL QUEUE COUNT OUTFILE [WAIT]\n";
    return 2;
  }
  const std::string mode = argv[1];
  bq::redis::register_transport();
  auto transport = bq::open_transport(argv[2]);
  if (!transport) {
    std::cerr << "open failed: " << transport.error().message() << "\n";
    return 1;
  }
  std::ofstream out(argv[5], std::ios::binary);
  const int count = std::stoi(argv[4]);
  try {
    if (mode == "publish") return publish(**transport, argv[3], count, out);
    const std::chrono::seconds wait(argc == 7 ? std::stoi(argv[6]) : 20);
    if (mode == "consume") return consume(**transport, argv[3], count, out, wait);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
