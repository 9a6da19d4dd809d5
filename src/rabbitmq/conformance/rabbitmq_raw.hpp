// SPDX-License-Identifier: Apache-2.0
// A plain rabbitmq-c client that bypasses rabbitmq::Transport, so checks read
// what the broker really holds (properties, typed headers) and can act on the
// broker behind the transport's back (delete a queue, get a message).
// Internal to the conformance section and the tests.
#pragma once

#include <babelqueue/result.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

namespace babelqueue::rabbitmq::raw {

// A header value as the broker holds it: integers stay integers.
using HeaderValue = std::variant<std::int64_t, std::string, bool, double>;

struct Message {
  std::string body;
  std::map<std::string, std::string> properties;  // type, correlation_id, message_id, app_id, content_type, ...
  std::optional<int> delivery_mode;
  std::map<std::string, HeaderValue> headers;
  std::map<std::string, char> header_kinds;  // AMQP field kind: 'I' (I32), 'l' (I64), 'S' (long string), ...
  bool redelivered = false;
};

class Client {
 public:
  // url: amqp:// or amqps:// (its tls_ca and tls_verify, or cacert and verify, are honoured).
  static Result<Client> connect(const std::string& url);
  Client(Client&& other) noexcept;
  Client& operator=(Client&&) = delete;
  Client(const Client&) = delete;
  ~Client();

  // basic.get with an ack: the message is removed. Empty when the queue is.
  Result<std::optional<Message>> get(const std::string& queue);
  // Ready messages (passive declare); Errc::not_found when the queue is gone.
  Result<std::int64_t> count(const std::string& queue);
  Result<void> delete_queue(const std::string& queue);
  // Publishes a body as is, with no properties, to queue (declared durable).
  Result<void> publish_plain(const std::string& queue, const std::string& body);

 private:
  explicit Client(void* connection) : connection_(connection) {}
  void* connection_;
};

}  // namespace babelqueue::rabbitmq::raw
