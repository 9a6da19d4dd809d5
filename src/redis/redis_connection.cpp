// SPDX-License-Identifier: Apache-2.0
#include "redis_connection.hpp"

#include <babelqueue/detail/plain_port_probe.hpp>

#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <utility>

namespace babelqueue::redis_detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// How long a TLS handshake may wait for the server's first answer before the
// port is asked whether it speaks plain Redis (a TLS server answers at once).
constexpr std::chrono::milliseconds kTlsSilence{500};

std::string ms_text(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

// The time a command may take beyond command_timeout for the bytes it moves:
// 1 s per MiB, as if the link carried no more than 1 MiB/s. A big message
// gets the time it needs (100 MB: 100 s more) instead of timing out on every
// try while its reservation brings it back; a link that barely moves (a
// trickle) earns next to nothing, so a stalled call still ends.
std::chrono::milliseconds transfer_allowance(std::size_t bytes) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(bytes / 1024 * 1000 / 1024));
}

Reply convert(const redisReply& raw) {
  Reply reply;
  switch (raw.type) {
    case REDIS_REPLY_STRING:
      reply.type = Reply::Type::string;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_STATUS:
      reply.type = Reply::Type::status;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_ERROR:
      reply.type = Reply::Type::error;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_INTEGER:
      reply.type = Reply::Type::integer;
      reply.integer = raw.integer;
      break;
    case REDIS_REPLY_ARRAY:
      reply.type = Reply::Type::array;
      reply.elements.reserve(raw.elements);
      for (std::size_t i = 0; i < raw.elements; ++i) reply.elements.push_back(convert(*raw.element[i]));
      break;
    default: reply.type = Reply::Type::nil; break;
  }
  return reply;
}

bool is_ip_literal(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

std::string openssl_error_text() {
  const unsigned long code = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's type
  if (code == 0) return "unknown OpenSSL error";
  std::array<char, 256> text{};
  ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

}  // namespace

void append_command(std::string& out, std::span<const std::string_view> args) {
  // RESP: *<argc>\r\n then $<length>\r\n<bytes>\r\n per argument.
  const auto number = [&](char kind, std::size_t value) {
    std::array<char, 24> digits{};
    auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), value);
    (void)ec;
    out.push_back(kind);
    out.append(digits.data(), end);
    out.append("\r\n");
  };
  number('*', args.size());
  for (std::string_view arg : args) {
    number('$', arg.size());
    out.append(arg);
    out.append("\r\n");
  }
}

std::string Endpoint::address() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Result<std::shared_ptr<asio::ssl::context>> make_tls_context(const std::string& ca_file, const std::string& cert_file,
                                                             const std::string& key_file, bool verify) {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  error_code ec;
  if (!ca_file.empty()) {
    context->load_verify_file(ca_file, ec);
    if (ec) return unexpected(Errc::invalid_argument, "tls_ca " + ca_file + " cannot be loaded: " + ec.message());
  } else {
    context->set_default_verify_paths(ec);
    if (ec) return unexpected(Errc::invalid_argument, "the system's trusted CAs cannot be loaded: " + ec.message());
  }
  if (!cert_file.empty()) {
    context->use_certificate_chain_file(cert_file, ec);
    if (ec) return unexpected(Errc::invalid_argument, "tls_cert " + cert_file + " cannot be loaded: " + ec.message());
    context->use_private_key_file(key_file, asio::ssl::context::pem, ec);
    if (ec) return unexpected(Errc::invalid_argument, "tls_key " + key_file + " cannot be loaded: " + ec.message());
  }
  context->set_verify_mode(verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return context;
}

// The socket, its TLS session and the RESP reader.
//
// Boost.Asio resolves and connects (with a deadline). Commands then go
// straight through the non-blocking socket — send/recv for redis://,
// OpenSSL's SSL_write/SSL_read on the same socket for rediss:// — waiting in
// poll(2) with the deadline and an eventfd that interrupt() signals. One code
// path for both schemes, and no event-loop turn per command: a command costs
// about what it costs hiredis's own client.
class Connection::Io {
 public:
  enum class Outcome { done, timed_out, interrupted };

  explicit Io(Endpoint endpoint)
      : endpoint_(std::move(endpoint)),
        socket_(context_),
        reader_(redisReaderCreate(), redisReaderFree),
        wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

  ~Io() {
    if (wake_ >= 0) ::close(wake_);
  }

  Io(const Io&) = delete;
  Io& operator=(const Io&) = delete;

  bool usable() const noexcept { return wake_ >= 0 && reader_ != nullptr; }

  void interrupt() noexcept {
    interrupted_.store(true);
    context_.stop();
    if (wake_ >= 0) {
      const std::uint64_t one = 1;
      (void)!::write(wake_, &one, sizeof one);
    }
  }

  bool interrupted() const noexcept { return interrupted_.load(); }

  Result<void> connect(Clock::time_point deadline) {
    const std::string where = endpoint_.address();
    std::vector<tcp::endpoint> targets;
    error_code ec;
    const auto address = asio::ip::make_address(endpoint_.host, ec);
    if (!ec) {
      targets.emplace_back(address, endpoint_.port);
    } else {
      tcp::resolver resolver(context_);
      bool done = false;
      resolver.async_resolve(endpoint_.host, std::to_string(endpoint_.port),
                             [&](const error_code& e, const tcp::resolver::results_type& results) {
                               ec = e;
                               for (const auto& entry : results) targets.push_back(entry.endpoint());
                               done = true;
                             });
      if (auto status = run(done, deadline); status != Outcome::done) return failure(status, "resolving " + where);
      if (ec) return unexpected(Errc::connection, "cannot resolve Redis host " + endpoint_.host + ": " + ec.message());
    }
    bool done = false;
    asio::async_connect(socket_, targets, [&](const error_code& e, const tcp::endpoint&) {
      ec = e;
      done = true;
    });
    if (auto status = run(done, deadline); status != Outcome::done) return failure(status, "connecting to " + where);
    if (ec) return unexpected(Errc::connection, "cannot connect to Redis at " + where + ": " + ec.message());
    socket_.set_option(tcp::no_delay(true), ec);
    socket_.non_blocking(true, ec);
    if (ec) return unexpected(Errc::connection, "cannot configure the socket to " + where + ": " + ec.message());
    if (endpoint_.tls) return handshake(deadline);
    return {};
  }

  Result<void> write(const std::string& bytes, Clock::time_point deadline) {
    const int fd = socket_.native_handle();
    std::size_t offset = 0;
    while (offset < bytes.size()) {
      const char* data = bytes.data() + offset;
      const std::size_t left = bytes.size() - offset;
      short wait_for = POLLOUT;
      if (ssl_) {
        const int n = SSL_write(ssl_.get(), data, static_cast<int>(std::min<std::size_t>(left, 1U << 30U)));
        if (n > 0) {
          offset += static_cast<std::size_t>(n);
          continue;
        }
        const int error = SSL_get_error(ssl_.get(), n);
        if (error == SSL_ERROR_WANT_READ) {
          wait_for = POLLIN;
        } else if (error != SSL_ERROR_WANT_WRITE) {
          return tls_lost(error);
        }
      } else {
        const ssize_t n = ::send(fd, data, left, MSG_NOSIGNAL);
        if (n > 0) {
          offset += static_cast<std::size_t>(n);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return lost(errno);
      }
      if (auto status = wait(wait_for, deadline); status != Outcome::done) return failure(status, "sending to");
    }
    return {};
  }

  // Reads until count replies arrived; deadline grows by transfer_allowance()
  // of the bytes received so far.
  Result<std::vector<Reply>> read_replies(std::size_t count, Clock::time_point deadline) {
    std::vector<Reply> replies;
    replies.reserve(count);
    bool first_read = true;
    std::size_t received_bytes = 0;
    while (replies.size() < count) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
        return unexpected(Errc::broker, "unreadable reply from Redis at " + endpoint_.address() + ": " +
                                            std::string(reader_->errstr));
      }
      if (raw != nullptr) {
        replies.push_back(convert(*static_cast<redisReply*>(raw)));
        freeReplyObject(raw);
        continue;
      }
      auto received = read_some(deadline + transfer_allowance(received_bytes), first_read);
      first_read = false;
      if (!received) return unexpected(received.error());
      received_bytes += *received;
      if (redisReaderFeed(reader_.get(), buffer_.data(), *received) != REDIS_OK) {
        return unexpected(Errc::broker, "unreadable reply from Redis at " + endpoint_.address());
      }
    }
    return replies;
  }

 private:
  // Runs the io_context (resolve and connect only) until done is set, the
  // deadline passes or interrupt() is called; on the last two the socket is
  // closed and the operation's handler has run before this returns.
  Outcome run(const bool& done, Clock::time_point deadline) {
    context_.restart();
    while (!done) {
      if (interrupted_.load() || context_.run_one_until(deadline) == 0) {
        if (done) break;
        const bool interrupted = interrupted_.load();
        error_code ignored;
        socket_.close(ignored);
        context_.restart();
        context_.run();
        return interrupted ? Outcome::interrupted : Outcome::timed_out;
      }
    }
    return Outcome::done;
  }

  // Waits until the socket is ready for events, the deadline or interrupt().
  Outcome wait(short events, Clock::time_point deadline) {
    for (;;) {
      if (interrupted_.load()) return Outcome::interrupted;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Outcome::timed_out;
      std::array<pollfd, 2> fds{pollfd{socket_.native_handle(), events, 0}, pollfd{wake_, POLLIN, 0}};
      const int timeout = static_cast<int>(std::min<std::int64_t>(left.count() + 1, 60'000));
      const int ready = ::poll(fds.data(), fds.size(), timeout);
      if (ready < 0 && errno != EINTR) return Outcome::timed_out;
      if (ready > 0 && fds[1].revents != 0) return Outcome::interrupted;
      if (ready > 0 && fds[0].revents != 0) return Outcome::done;  // ready, or an error the next call reports
    }
  }

  // poll_first: the reply cannot be there yet (the command was just sent),
  // so wait before reading rather than spend a read on EAGAIN.
  Result<std::size_t> read_some(Clock::time_point deadline, bool poll_first) {
    if (poll_first && (!ssl_ || SSL_pending(ssl_.get()) == 0)) {
      if (auto status = wait(POLLIN, deadline); status != Outcome::done) {
        return failure(status, "waiting for a reply from");
      }
    }
    for (;;) {
      short wait_for = POLLIN;
      if (ssl_) {
        const int n = SSL_read(ssl_.get(), buffer_.data(), static_cast<int>(buffer_.size()));
        if (n > 0) return static_cast<std::size_t>(n);
        const int error = SSL_get_error(ssl_.get(), n);
        if (error == SSL_ERROR_WANT_WRITE) {
          wait_for = POLLOUT;
        } else if (error != SSL_ERROR_WANT_READ) {
          return tls_lost(error);
        }
      } else {
        const ssize_t n = ::recv(socket_.native_handle(), buffer_.data(), buffer_.size(), 0);
        if (n > 0) return static_cast<std::size_t>(n);
        if (n == 0) return unexpected(Errc::connection, "Redis at " + endpoint_.address() + " closed the connection");
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return lost(errno);
      }
      if (auto status = wait(wait_for, deadline); status != Outcome::done) {
        return failure(status, "waiting for a reply from");
      }
    }
  }

  Result<void> handshake(Clock::time_point deadline) {
    const std::string name = endpoint_.tls_server_name.empty() ? endpoint_.host : endpoint_.tls_server_name;
    ssl_.reset(SSL_new(endpoint_.tls->native_handle()));
    if (!ssl_ || SSL_set_fd(ssl_.get(), socket_.native_handle()) != 1) {
      return unexpected(Errc::internal, "cannot start a TLS session: " + openssl_error_text());
    }
    SSL_set_mode(ssl_.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    const bool ip = is_ip_literal(name);
    // SSL_set_tlsext_host_name, without the macro's C cast.
    if (!ip && SSL_ctrl(ssl_.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                        const_cast<char*>(name.c_str())) != 1) {
      return unexpected(Errc::invalid_argument, "TLS server name " + name + " refused: " + openssl_error_text());
    }
    if (endpoint_.tls_verify) {
      SSL_set_verify(ssl_.get(), SSL_VERIFY_PEER, nullptr);
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_.get());
      const int named = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                           : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      if (named != 1) return unexpected(Errc::invalid_argument, "cannot check the TLS certificate against " + name);
    } else {
      SSL_set_verify(ssl_.get(), SSL_VERIFY_NONE, nullptr);
    }
    const auto started = Clock::now();
    bool probed = false;
    for (;;) {
      ERR_clear_error();
      const int result = SSL_connect(ssl_.get());
      if (result == 1) return {};
      const int error = SSL_get_error(ssl_.get(), result);
      short wait_for = 0;
      if (error == SSL_ERROR_WANT_READ) wait_for = POLLIN;
      if (error == SSL_ERROR_WANT_WRITE) wait_for = POLLOUT;
      if (wait_for == 0) {
        const long verdict = SSL_get_verify_result(ssl_.get());  // NOLINT(google-runtime-int): OpenSSL's type
        if (endpoint_.tls_verify && verdict != X509_V_OK) {
          const std::string ca =
              endpoint_.tls_ca_file.empty() ? "the system's trusted CAs" : "tls_ca " + endpoint_.tls_ca_file;
          return unexpected(Errc::auth, "the TLS certificate of Redis at " + endpoint_.address() +
                                            " was not accepted: " + X509_verify_cert_error_string(verdict) +
                                            " (checked against " + ca + " for the name " + name + ")");
        }
        const std::string reason = openssl_error_text();
        if (answers_plain_redis(deadline)) return not_a_tls_port();
        return unexpected(Errc::connection,
                          "TLS handshake with Redis at " + endpoint_.address() + " failed: " + reason);
      }
      // A plain Redis port reads the ClientHello as the start of a command
      // and waits, silently, for its end: when the answer is late, ask the
      // port in plain RESP whether that is what is going on.
      if (wait_for == POLLIN && !probed) {
        const auto probe_at = std::min(deadline, started + kTlsSilence);
        if (auto status = wait(wait_for, probe_at); status == Outcome::interrupted) return failure(status, "");
        if (Clock::now() < probe_at) continue;  // an answer came: carry on with the handshake
        probed = true;
        if (answers_plain_redis(deadline)) return not_a_tls_port();
        continue;
      }
      if (auto status = wait(wait_for, deadline); status != Outcome::done) {
        return failure(status, "in the TLS handshake with");
      }
    }
  }

  // Whether the port answers a plain PING (on a new connection), before
  // deadline and within a second.
  bool answers_plain_redis(Clock::time_point deadline) const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const auto timeout = std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(1000));
    return detail::answers_in_plain_text(endpoint_.host, endpoint_.port, "PING\r\n", timeout);
  }

  Unexpected<ErrorInfo> not_a_tls_port() const {
    return unexpected(Errc::connection, std::string(detail::kNotATlsPort) + " (Redis at " + endpoint_.address() +
                                            " answers plain redis://, not rediss://)");
  }

  Unexpected<ErrorInfo> failure(Outcome outcome, const std::string& what) const {
    if (outcome == Outcome::interrupted) return unexpected(Errc::closed, "the Redis transport is closed");
    return unexpected(Errc::timeout, "timed out " + what + " Redis at " + endpoint_.address());
  }

  Unexpected<ErrorInfo> lost(int error) const {
    return unexpected(Errc::connection,
                      "connection to Redis at " + endpoint_.address() + " lost: " + std::strerror(error));
  }

  Unexpected<ErrorInfo> tls_lost(int ssl_error) const {
    if (ssl_error == SSL_ERROR_ZERO_RETURN) {
      return unexpected(Errc::connection, "Redis at " + endpoint_.address() + " closed the TLS connection");
    }
    if (ssl_error == SSL_ERROR_SYSCALL) {
      return errno != 0 ? lost(errno)
                        : unexpected(Errc::connection, "Redis at " + endpoint_.address() + " closed the connection");
    }
    return unexpected(Errc::connection,
                      "TLS connection to Redis at " + endpoint_.address() + " failed: " + openssl_error_text());
  }

  Endpoint endpoint_;
  asio::io_context context_{1};
  tcp::socket socket_;
  std::unique_ptr<SSL, void (*)(SSL*)> ssl_{nullptr, SSL_free};
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader_;
  std::array<char, 64 * 1024> buffer_{};
  int wake_;
  std::atomic<bool> interrupted_{false};
};

Connection::Connection(std::unique_ptr<Io> io) : io_(std::move(io)) {}
Connection::~Connection() = default;

Result<std::unique_ptr<Connection>> Connection::open(const Endpoint& endpoint, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto io = std::make_unique<Io>(endpoint);
  if (!io->usable()) return unexpected(Errc::io, "cannot create a connection: " + std::string(std::strerror(errno)));
  if (auto connected = io->connect(deadline); !connected) {
    if (connected.error().code() == Errc::timeout) {
      return unexpected(Errc::connection, "cannot connect to Redis at " + endpoint.address() + " within " +
                                              ms_text(timeout) + " (" + connected.error().message() + ")");
    }
    return unexpected(connected.error());
  }
  std::unique_ptr<Connection> connection(new Connection(std::move(io)));
  // AUTH and SELECT, then a PING that tells a server wanting a password.
  const std::string database = std::to_string(endpoint.database);
  std::vector<Command> setup;
  if (!endpoint.password.empty()) {
    if (endpoint.user.empty()) {
      setup.push_back({"AUTH", endpoint.password});
    } else {
      setup.push_back({"AUTH", endpoint.user, endpoint.password});
    }
  }
  if (endpoint.database != 0) setup.push_back({"SELECT", database});
  setup.push_back({"PING"});
  auto replies = connection->execute(
      setup, std::max(std::chrono::milliseconds(1),
                      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
  if (!replies) return unexpected(replies.error());
  std::size_t index = 0;
  if (!endpoint.password.empty()) {
    const Reply& auth = (*replies)[index++];
    if (auth.is_error()) {
      const std::string who = endpoint.user.empty() ? "the password" : "user '" + endpoint.user + "' and its password";
      return unexpected(Errc::auth, "Redis at " + endpoint.address() + " refused " + who + ": " + auth.text);
    }
  }
  if (endpoint.database != 0) {
    const Reply& select = (*replies)[index++];
    if (select.is_error()) {
      return unexpected(Errc::invalid_argument,
                        "Redis at " + endpoint.address() + " has no database " + database + ": " + select.text);
    }
  }
  const Reply& ping = (*replies)[index];
  if (ping.is_error()) {
    if (ping.text.rfind("NOAUTH", 0) == 0) {
      return unexpected(Errc::auth, "Redis at " + endpoint.address() +
                                        " requires a password (redis://user:password@host/...): " + ping.text);
    }
    return unexpected(Errc::broker, "Redis at " + endpoint.address() + " answered PING with: " + ping.text);
  }
  return connection;
}

Result<std::vector<Reply>> Connection::execute(std::span<const Command> commands, std::chrono::milliseconds timeout) {
  std::string bytes;
  for (const Command& command : commands) append_command(bytes, command);
  return execute_formatted(bytes, commands.size(), timeout);
}

Result<std::vector<Reply>> Connection::execute_formatted(const std::string& bytes, std::size_t replies,
                                                         std::chrono::milliseconds timeout) {
  if (broken_) return unexpected(Errc::connection, "the connection to Redis is broken");
  if (io_->interrupted()) {
    broken_ = true;
    return unexpected(Errc::closed, "the Redis transport is closed");
  }
  // One deadline for the round trip: the timeout, and more for the bytes
  // sent now and for those the reply brings (read_replies).
  const auto deadline = Clock::now() + timeout + transfer_allowance(bytes.size());
  if (auto written = io_->write(bytes, deadline); !written) {
    broken_ = true;
    return unexpected(written.error());
  }
  auto read = io_->read_replies(replies, deadline);
  if (!read) {
    broken_ = true;
    // The commands were sent: without their replies nobody knows whether
    // Redis ran them (a publish may be in the list already).
    const Errc code = read.error().code();
    if (code == Errc::timeout || code == Errc::connection) {
      return unexpected(
          Errc::outcome_unknown,
          read.error().message() + " after the command was sent (outcome unknown: Redis may have run it)");
    }
  }
  return read;
}

Result<Reply> Connection::execute(const Command& command, std::chrono::milliseconds timeout) {
  auto replies = execute(std::span<const Command>(&command, 1), timeout);
  if (!replies) return unexpected(replies.error());
  return std::move(replies->front());
}

void Connection::interrupt() noexcept { io_->interrupt(); }

Result<Endpoint> endpoint_of(const redis::Transport::Options& options) {
  Endpoint endpoint;
  endpoint.host = options.host;
  endpoint.port = options.port;
  endpoint.user = options.user;
  endpoint.password = options.password;
  endpoint.database = options.database;
  endpoint.tls_server_name = options.tls.server_name;
  endpoint.tls_verify = options.tls.verify;
  endpoint.tls_ca_file = options.tls.ca_file;
  if (options.tls.enabled) {
    if (auto checked = options.tls.check(); !checked) return unexpected(checked.error());
    if (auto usable = options.tls.check_files(); !usable) return unexpected(usable.error());
    auto context =
        make_tls_context(options.tls.ca_file, options.tls.cert_file, options.tls.key_file, options.tls.verify);
    if (!context) return unexpected(context.error());
    endpoint.tls = std::move(*context);
  }
  return endpoint;
}

}  // namespace babelqueue::redis_detail
