// SPDX-License-Identifier: Apache-2.0
// Shared by the Service Bus tests: the test server's URL, connection string
// and lock duration (scripts/broker info servicebus), the connection string
// exported as AZURE_SERVICEBUS_CONNECTION_STRING (where the transport reads
// it, as the Python SDK does), and a raw AMQP client on the same namespace
// for what the transport's own API does not show.
#pragma once

#include "../../src/servicebus/servicebus_connection.hpp"
#include "broker_env.hpp"
#include "client.hpp"

#include <babelqueue/servicebus/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

namespace babelqueue::testing {

struct ServiceBusServer {
  std::string url;                // sb://127.0.0.1:PORT
  std::string connection_string;  // ...;UseDevelopmentEmulator=true
  std::string key_name;
  std::string key;
  std::string port;
  std::chrono::milliseconds lock_duration{0};
  int max_delivery_count = 0;
};

// The test server's settings; the connection string is exported too.
inline const ServiceBusServer& servicebus_server() {
  static const ServiceBusServer server = [] {
    auto info = broker_info("servicebus");
    ServiceBusServer s;
    s.url = info.at("url");
    s.connection_string = info.at("connection_string");
    s.key_name = info.at("key_name");
    s.key = info.at("key");
    s.port = info.at("port");
    s.lock_duration = std::chrono::milliseconds(static_cast<long>(std::stod(info.at("lock_duration")) * 1000));
    s.max_delivery_count = std::stoi(info.at("max_delivery_count"));
    ::setenv(servicebus::kConnectionStringVariable, s.connection_string.c_str(), 1);
    return s;
  }();
  return server;
}

// The URL with lock_duration set to the server's, and query appended.
inline std::string servicebus_url(const std::string& query = {}) {
  const auto& s = servicebus_server();
  std::string url = s.url + "?lock_duration=" + std::to_string(s.lock_duration.count()) + "ms";
  return query.empty() ? url : url + "&" + query;
}

inline std::string unique_queue(const std::string& role) { return "bq-test-" + role + "-" + uuid_v4().substr(0, 8); }

// A plain amqp10::Client on the test server, with the transport's claims
// (a SAS token per entity): reads and settles what the transport sent.
inline std::unique_ptr<amqp10::Client> raw_client(std::uint32_t credit = 10) {
  servicebus::Transport::Options options;
  options.connection_string = servicebus_server().connection_string;
  auto connection = servicebus::connection_options(options);
  if (!connection) throw std::runtime_error(connection.error().message());
  connection->credit_window = credit;
  auto client = amqp10::Client::connect(std::move(*connection));
  if (!client) throw std::runtime_error(client.error().message());
  return std::move(*client);
}

}  // namespace babelqueue::testing
