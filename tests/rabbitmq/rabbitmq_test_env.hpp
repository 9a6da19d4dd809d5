// SPDX-License-Identifier: Apache-2.0
// Where the test broker is, and a few helpers shared by the RabbitMQ tests.
#pragma once

#include "broker_env.hpp"

#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <string>

namespace babelqueue::rabbitmq::testing {

inline std::string url() { return babelqueue::testing::broker_url("rabbitmq"); }

inline std::string info(const std::string& key) { return babelqueue::testing::broker_info("rabbitmq").at(key); }

// amqps:// with the test CA, so the broker's certificate is verified. The
// host is "localhost", the DNS name in the certificate: rabbitmq-c checks
// host names against DNS names only, not IP addresses.
inline std::string tls_url(const std::string& query = {}) {
  std::string url = info("tls_url");
  if (const auto at = url.find("@127.0.0.1:"); at != std::string::npos) url.replace(at + 1, 9, "localhost");
  return url + "?cacert=" + info("tls_ca") + (query.empty() ? "" : "&" + query);
}

// Runs rabbitmqctl against the test node.
inline std::string rabbitmqctl(const std::string& arguments) {
  return babelqueue::testing::run_command_output(info("rabbitmqctl") + " " + arguments + " 2>&1");
}

// Closes the broker-side connections whose connection_name is name (only
// those: other tests share the broker), as a network failure would.
inline void close_connections_named(const std::string& name) {
  const std::string listing = rabbitmqctl("list_connections pid client_properties --no-table-headers --quiet");
  std::size_t start = 0;
  int closed = 0;
  while (start < listing.size()) {
    std::size_t end = listing.find('\n', start);
    if (end == std::string::npos) end = listing.size();
    const std::string line = listing.substr(start, end - start);
    if (line.find("\"" + name + "\"") != std::string::npos) {
      rabbitmqctl("close_connection '" + line.substr(0, line.find('\t')) + "' 'test: dropped on purpose'");
      ++closed;
    }
    start = end + 1;
  }
  if (closed == 0) throw std::runtime_error("no broker connection named " + name + " in:\n" + listing);
}

inline std::string unique_queue(const std::string& role) { return "bq-test-" + role + "-" + uuid_v4().substr(0, 8); }

inline std::unique_ptr<rabbitmq::Transport> open_url(const std::string& text) {
  auto parsed = Url::parse(text);
  if (!parsed) throw Error(parsed.error());
  auto options = rabbitmq::Transport::options_from_url(*parsed);
  if (!options) throw Error(options.error());
  auto transport = rabbitmq::Transport::open(*options);
  if (!transport) throw Error(transport.error());
  return std::move(*transport);
}

}  // namespace babelqueue::rabbitmq::testing
