// SPDX-License-Identifier: Apache-2.0
// One connection to a Redis server: Boost.Asio resolves and connects, the
// bytes go through the socket itself or an OpenSSL session on it, and
// hiredis's RESP reader parses the replies, so redis:// and rediss:// share
// one code path (docs/adr/0010). Internal to babelqueue::redis.
//
// Thread-safety: a Connection is used by one thread at a time (the pool hands
// it out); only interrupt() may be called from another thread.
#pragma once

#include <babelqueue/redis/transport.hpp>
#include <babelqueue/result.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio::ssl {
class context;
}

namespace babelqueue::redis_detail {

// A RESP2 reply, owned.
struct Reply {
  enum class Type { string, array, integer, nil, status, error };
  Type type = Type::nil;
  std::string text;  // string, status and error replies
  long long integer = 0;
  std::vector<Reply> elements;

  bool is_error() const noexcept { return type == Type::error; }
};

// A command's arguments; the views must outlive the call that sends it.
using Command = std::vector<std::string_view>;

// Appends a command in the RESP wire form (an array of bulk strings).
void append_command(std::string& out, std::span<const std::string_view> args);

struct Endpoint {
  std::string host;
  std::uint16_t port = 6379;
  std::string user;
  std::string password;
  int database = 0;
  // Set for rediss://: verification mode and files are already loaded.
  std::shared_ptr<boost::asio::ssl::context> tls;
  std::string tls_server_name;  // empty = host
  bool tls_verify = true;
  std::string tls_ca_file;  // for error messages only

  std::string address() const;  // host:port
};

// The endpoint of a transport's options, its TLS context loaded when TLS is
// on (errors as make_tls_context's).
Result<Endpoint> endpoint_of(const redis::Transport::Options& options);

// Loads the TLS settings into an OpenSSL context. Errc::invalid_argument
// naming the file that cannot be read.
Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const std::string& ca_file,
                                                                    const std::string& cert_file,
                                                                    const std::string& key_file, bool verify);

class Connection {
 public:
  // Connects, handshakes (TLS), authenticates and selects the database, all
  // within timeout.
  static Result<std::unique_ptr<Connection>> open(const Endpoint& endpoint, std::chrono::milliseconds timeout);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends every command in one write and reads one reply per command (error
  // replies included), all within timeout. Any failure to talk (timeout,
  // reset, interrupt) breaks the connection: broken() is then true.
  Result<std::vector<Reply>> execute(std::span<const Command> commands, std::chrono::milliseconds timeout);
  Result<Reply> execute(const Command& command, std::chrono::milliseconds timeout);
  // Sends commands already in the wire form (append_command) and reads
  // replies replies.
  Result<std::vector<Reply>> execute_formatted(const std::string& bytes, std::size_t replies,
                                               std::chrono::milliseconds timeout);

  // Makes a call in progress (or the next one) fail at once with
  // Errc::closed. Thread-safe.
  void interrupt() noexcept;

  bool broken() const noexcept { return broken_; }

 private:
  class Io;
  explicit Connection(std::unique_ptr<Io> io);
  std::unique_ptr<Io> io_;
  bool broken_ = false;
};

}  // namespace babelqueue::redis_detail
