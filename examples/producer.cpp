// SPDX-License-Identifier: Apache-2.0
// producer: publishes orders to a queue, as a web shop's checkout would.
//
//   producer [URL] [--orders N] [--queue NAME]
//
// URL defaults to sqlite://babelqueue-demo.db: a queue in one SQLite file, no
// broker needed. Any URL the program was built with works the same way
// (memory://, and the broker transports where they are linked in).
//
// It publishes N OrderCreated messages with a Publisher (no Worker needed:
// each publish returns once the broker confirmed it, retried under a backoff
// when the failure is retriable); the third one carries the x-demo-fail-once
// header, which makes the example worker fail its first delivery so the
// retry path can be watched. Then it publishes one body that is not JSON at
// all, straight through Transport::publish, to show how a consumer handles
// poison: it never reaches a handler and lands in the dead-letter queue byte
// for byte.
#include "order_created.hpp"

#include <babelqueue/publisher.hpp>
#include <babelqueue/sqlite/transport.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace bq = babelqueue;

namespace {

struct Args {
  std::string url = "sqlite://babelqueue-demo.db";
  std::string queue = "orders";
  int orders = 8;
};

bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--orders" && has_value) {
      args.orders = std::atoi(argv[++i]);
    } else if (arg == "--queue" && has_value) {
      args.queue = argv[++i];
    } else if (!arg.starts_with("-")) {
      args.url = arg;
    } else {
      return false;
    }
  }
  return args.orders > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr, "usage: producer [URL] [--orders N>0] [--queue NAME]\n");
    return 2;
  }

  // Transports register their URL schemes explicitly (no static
  // initialisers), so a program contains exactly the brokers it links.
  bq::sqlite::register_transport();
  // Broker URLs may hold a password: print them redacted.
  const auto parsed = bq::Url::parse(args.url);
  const std::string shown = parsed ? parsed->redacted() : args.url;
  auto opened = bq::open_transport(args.url);
  if (!opened) {
    std::fprintf(stderr, "producer: cannot open %s: %s\n", shown.c_str(), opened.error().message().c_str());
    return 1;
  }
  bq::PublisherOptions options;
  options.default_queue = args.queue;                    // each envelope's meta.queue is the queue it is sent to
  bq::Publisher publisher(std::move(*opened), options);  // owns the transport, closes it at the end

  const std::array<std::string_view, 5> customers = {"ada@example.com", "grace@example.com", "linus@example.com",
                                                     "barbara@example.com", "ken@example.com"};
  const int flagged = args.orders >= 3 ? 2 : 0;  // the third order, or the only one
  for (int i = 0; i < args.orders; ++i) {
    const shop::OrderCreated order{1001 + i, std::string(customers[static_cast<std::size_t>(i) % customers.size()]),
                                   1250 + 375 * i, "EUR"};
    bq::PublishParams params;
    if (i == flagged) params.headers[std::string(shop::kFailOnceHeader)] = "1";
    // publish() makes the envelope (a fresh meta.id, a new trace_id, the
    // queue, the creation time) and returns once the broker holds it (for
    // SQLite: the transaction committed), so a receipt is never lost.
    auto receipt = publisher.publish(order, params);
    if (!receipt) {
      // retriable() said whether trying later may help; outcome_unknown()
      // whether the broker may hold it anyway (then re-publishing the same
      // meta.id is what consumers deduplicate).
      std::fprintf(stderr, "producer: publishing order %lld failed: %s\n", static_cast<long long>(order.order_id),
                   receipt.error().message().c_str());
      return 1;
    }
    std::printf("producer: order %lld for %s, %s -> %s (meta.id %s)%s\n", static_cast<long long>(order.order_id),
                order.customer.c_str(), order.amount().c_str(), receipt->queue.c_str(), receipt->id.c_str(),
                i == flagged ? "  [flagged: its first delivery will fail]" : "");
  }

  // Poison: bytes no SDK of the family can read as an envelope. Real systems
  // get these from a misconfigured producer or a foreign tool writing to the
  // queue; publishing raw bytes is the only way to make one on purpose.
  constexpr std::string_view kPoison = "ORDER 1999;ada@example.com;12.50;EUR";
  if (auto published = publisher.transport().publish(args.queue, kPoison); !published) {
    std::fprintf(stderr, "producer: publishing the poison body failed: %s\n", published.error().message().c_str());
    return 1;
  }
  std::printf("producer: poison body \"%.*s\" -> %s (not JSON)\n", static_cast<int>(kPoison.size()), kPoison.data(),
              args.queue.c_str());

  std::printf("producer: published %d orders and 1 poison message to %s\n", args.orders, shown.c_str());
  return 0;
}
