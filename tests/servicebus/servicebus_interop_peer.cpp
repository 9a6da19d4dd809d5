// SPDX-License-Identifier: Apache-2.0
// The C++ side of the Service Bus interop test with the published Python SDK
// (interop.sh): publishes envelopes to, consumes them from, or runs a failing
// Worker on a queue of the Service Bus test server through
// babelqueue::servicebus (credentials in AZURE_SERVICEBUS_CONNECTION_STRING),
// writing JSON lines so the Python side (interop.py) can compare byte for
// byte.
//
//   servicebus_interop_peer produce URL QUEUE COUNT OUT
//       COUNT envelopes (urn:interop:cpp, a traceparent header); OUT: {"body"}
//   servicebus_interop_peer consume URL QUEUE COUNT OUT
//       COUNT deliveries, acked; OUT: {"body", "headers", "native_attempts",
//       "attempts"} (attempts as the runtime reads them: max(body, DeliveryCount - 1))
//   servicebus_interop_peer retry URL QUEUE OUT
//       one message retried both ways this SDK retries, then dead-lettered:
//       received and abandoned (modified{delivery-failed}: DeliveryCount + 1),
//       then a Worker (max_attempts 3, dead-lettering on) whose handler always
//       fails: it republishes with attempts + 1, then publishes to QUEUE.dlq.
//       OUT: one line {"released_at", "handler_attempts", "retried",
//       "dead_lettered", "dead_letter_queue"}
//   servicebus_interop_peer empty URL QUEUE SECONDS
//       exits 0 when nothing arrives on QUEUE within SECONDS
#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/servicebus/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/worker.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

const char* const kTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

int fail(const std::string& what) {
  std::cerr << "servicebus_interop_peer: " << what << "\n";
  return 1;
}

std::string line(const bq::Value& value) { return bq::to_json(value).value() + "\n"; }

// The runtime's attempts for a delivery: max(body, DeliveryCount - 1), -1 when
// the body is not an envelope.
std::int64_t attempts_of(const bq::Delivery& d) {
  auto envelope = bq::Envelope::decode(d.body);
  if (!envelope) return -1;
  return std::max(envelope->attempts(), d.native_attempts.value_or(0));
}

int produce(bq::Transport& transport, const std::string& queue, std::size_t count, std::ofstream& out) {
  for (std::size_t i = 0; i < count; ++i) {
    bq::MakeOptions make;
    make.queue = queue;
    auto env = bq::Envelope::make(
        "urn:interop:cpp", bq::Value::object({{"i", i}, {"text", "h\u00e9llo \u4e2d\u6587 \"q\" \\"}, {"x", 0.1}}),
        make);
    if (!env) return fail(env.error().message());
    bq::PublishOptions options;
    options.headers = {{"traceparent", kTraceparent}};
    if (auto r = transport.publish(queue, env->body(), options); !r) return fail(r.error().message());
    out << line(bq::Value::object({{"body", std::string(env->body())}}));
  }
  return 0;
}

int consume(bq::Transport& transport, const std::string& queue, std::size_t count, std::ofstream& out) {
  std::size_t received = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (received < count && std::chrono::steady_clock::now() < deadline) {
    auto batch = transport.receive(queue, count - received, 2s);
    if (!batch) return fail(batch.error().message());
    for (const bq::Delivery& d : *batch) {
      bq::Object headers;
      for (const auto& [name, value] : d.headers) headers.set(name, value);
      out << line(bq::Value::object({{"body", d.body},
                                     {"headers", bq::Value(std::move(headers))},
                                     {"native_attempts", d.native_attempts.value_or(-1)},
                                     {"attempts", attempts_of(d)}}));
      if (auto r = transport.ack(d); !r) return fail(r.error().message());
      ++received;
    }
  }
  return received == count ? 0 : fail("received " + std::to_string(received) + " of " + std::to_string(count));
}

int retry(bq::Transport& transport, const std::string& queue, std::ofstream& out) {
  auto first = transport.receive(queue, 1, 20s);
  if (!first) return fail(first.error().message());
  if (first->size() != 1) return fail("no message on " + queue);
  const std::int64_t released_at = attempts_of(first->front());
  if (auto r = transport.release(first->front()); !r) return fail("release: " + r.error().message());

  bq::WorkerOptions options;
  options.max_attempts = 3;
  options.dead_letter = true;
  options.default_queue = queue;
  bq::Array seen;
  bq::Worker worker(transport, options);
  worker.handle("urn:interop:py:fail", [&](const bq::Message& m) -> bq::Result<void> {
    seen.emplace_back(m.attempts());
    return bq::unexpected(bq::Errc::io, "the interop handler always fails");
  });
  bq::RunLimits limits;
  limits.idle_exit = 3s;
  if (auto run = worker.run({queue}, limits); !run) return fail("worker: " + run.error().message());
  const auto metrics = worker.metrics().snapshot();
  out << line(bq::Value::object({{"released_at", released_at},
                                 {"handler_attempts", bq::Value(std::move(seen))},
                                 {"retried", metrics.retried},
                                 {"dead_lettered", metrics.dead_lettered},
                                 {"dead_letter_queue", transport.dead_letter_queue(queue)}}));
  return 0;
}

int empty(bq::Transport& transport, const std::string& queue, std::chrono::seconds wait) {
  auto got = transport.receive(queue, 1, wait);
  if (!got) return fail(got.error().message());
  if (!got->empty()) return fail("a message is still on " + queue + ": " + got->front().body);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return fail("usage: servicebus_interop_peer produce|consume|retry|empty URL QUEUE ...");
  const std::string mode = argv[1];
  const std::string queue = argv[3];
  bq::servicebus::register_transport();
  auto transport = bq::open_transport(argv[2]);
  if (!transport) return fail(transport.error().message());

  if (mode == "empty") return empty(**transport, queue, std::chrono::seconds(std::stoi(argv[4])));
  if (mode == "retry") {
    std::ofstream out(argv[4]);
    return retry(**transport, queue, out);
  }
  if (argc != 6) return fail("usage: servicebus_interop_peer produce|consume URL QUEUE COUNT OUT");
  const auto count = static_cast<std::size_t>(std::stoul(argv[4]));
  std::ofstream out(argv[5]);
  if (mode == "produce") return produce(**transport, queue, count, out);
  if (mode == "consume") return consume(**transport, queue, count, out);
  return fail("unknown mode " + mode);
}
