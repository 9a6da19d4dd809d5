// SPDX-License-Identifier: Apache-2.0
// typed_message: an OrderCreated through the envelope and back, no broker.
//
//   typed_message
//
// Shows what every message on the wire looks like (the canonical envelope
// bytes all SDKs of the family agree on), how a struct becomes one
// (Envelope::make) and comes back (Envelope::decode + data_as<T>), and a round
// trip through the in-process memory::Transport. Exits 1 if any step does not
// give back what went in, so it doubles as a test.
#include "order_created.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/memory/transport.hpp>

#include <cstdio>
#include <string>
#include <string_view>

namespace bq = babelqueue;
using namespace std::chrono_literals;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

void show(const char* label, std::string_view bytes) {
  std::printf("%s\n  %.*s\n", label, static_cast<int>(bytes.size()), bytes.data());
}

}  // namespace

int main() {
  const shop::OrderCreated order{1042, "ada@example.com", 1250, "EUR"};

  // 1. Struct -> envelope. In production leave MakeOptions' id, trace_id and
  //    created_at empty: make() then stamps a fresh UUID, a new trace and the
  //    current time. Fixed values make the bytes below reproducible.
  const bq::MakeOptions fixed{.queue = "orders",
                              .trace_id = "0af76519-16cd-43dd-8448-eb211c80319c",
                              .id = "6f1c1a52-8d2e-4f0b-9a7e-0c5d2b1e3a49",
                              .created_at = 1767225600000};
  const bq::Envelope envelope = bq::Envelope::make(order, fixed).value();
  show("canonical envelope (what is published, byte for byte):", envelope.body());

  // These bytes are the wire contract: keys in canonical order (job,
  // trace_id, data, meta, attempts), data's keys in the order write_data()
  // (and to_value()) wrote them, no insignificant whitespace. Every SDK of the family produces
  // the same bytes for the same message.
  constexpr std::string_view kExpected =
      R"({"job":"urn:babel:orders:created","trace_id":"0af76519-16cd-43dd-8448-eb211c80319c",)"
      R"("data":{"order_id":1042,"customer":"ada@example.com","amount_cents":1250,"currency":"EUR"},)"
      R"("meta":{"id":"6f1c1a52-8d2e-4f0b-9a7e-0c5d2b1e3a49","queue":"orders","lang":"cpp",)"
      R"("schema_version":1,"created_at":1767225600000},"attempts":0})";
  check(envelope.body() == kExpected, "make() wrote the canonical bytes");
  // make() took write_data(); the Value from to_value() gives the same bytes.
  check(bq::Envelope::make(shop::OrderCreated::urn, order.to_value(), fixed).value().body() == kExpected,
        "to_value() gives the bytes write_data() wrote");

  // 2. Bytes -> struct, as a consumer does.
  const bq::Envelope decoded = bq::Envelope::decode(envelope.body()).value();
  check(static_cast<bool>(bq::accepts(decoded)), "the envelope is acceptable (SPEC section 2)");
  check(decoded.urn() == shop::OrderCreated::urn, "urn() routes it to OrderCreated");
  check(decoded.data_as<shop::OrderCreated>() == order, "data_as<OrderCreated>() gives the order back");
  check(decoded.encode().value() == envelope.body(), "re-encoding canonical bytes changes nothing");

  // 3. A failure republishes the same bytes with attempts+1: data is spliced
  //    back untouched, never re-printed.
  const std::string retry = decoded.encode_with_attempts(1).value();
  show("the same message republished after one failure:", retry);
  check(bq::Envelope::decode(retry).value().attempts() == 1, "the retry carries attempts 1");

  // 4. Another SDK's spelling of the same message (whitespace, other key
  //    order) is read as is and re-emitted canonically.
  constexpr std::string_view kForeign = R"({ "meta": {"schema_version": 1, "id": "6f1c1a52-8d2e-4f0b-9a7e-0c5d2b1e3a49",
      "queue": "orders", "lang": "python", "created_at": 1767225600000},
    "attempts": 0, "trace_id": "0af76519-16cd-43dd-8448-eb211c80319c",
    "data": {"order_id": 1042, "customer": "ada@example.com", "amount_cents": 1250, "currency": "EUR"},
    "job": "urn:babel:orders:created" })";
  const bq::Envelope foreign = bq::Envelope::decode(kForeign).value();
  show("a Python producer's spelling, re-emitted canonically:", foreign.encode().value());
  check(foreign.data_as<shop::OrderCreated>() == order, "a foreign spelling reads as the same order");

  // 5. Through a transport: publish the bytes, receive them, settle them.
  bq::memory::Transport transport;
  transport.publish("orders", envelope.body()).value();
  auto deliveries = transport.receive("orders", 10, 100ms).value();
  check(deliveries.size() == 1, "receive() reserved the message");
  if (deliveries.size() == 1) {
    const bq::Envelope received = bq::Envelope::decode(deliveries[0].body).value();
    check(received.id() == envelope.id(), "meta.id survives the trip");
    check(received.data_as<shop::OrderCreated>() == order, "so does the order");
    transport.ack(deliveries[0]).value();  // done: the broker forgets it
  }
  check(transport.receive("orders", 10, 0ms).value().empty(), "the acked message is gone");

  std::printf("%s\n", failures == 0 ? "typed_message: all checks passed" : "typed_message: some checks FAILED");
  return failures == 0 ? 0 : 1;
}
