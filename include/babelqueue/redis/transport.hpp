// SPDX-License-Identifier: Apache-2.0
// Transport: the Redis binding (library babelqueue::redis), shared with
// the Go and Python SDKs on the same queues.
//
// URL: redis://[user:password@]host[:port][/db][?options]    plain TCP (port 6379)
//      rediss://[user:password@]host[:port][/db][?options]   TLS, certificate verified
// Options (url_options.hpp: unknown ones are errors, so a misspelt one is never
// ignored; durations are 500ms, 5s, 2m, 1h or a bare number of seconds):
//   visibility_timeout=DURATION  lease of a received message (default 30s; 1ms to 1 year)
//   connect_timeout=DURATION     TCP connect + TLS handshake + AUTH (default 5s; 1ms to 1h)
//   command_timeout=DURATION     wait for a reply, on top of a blocking wait (default 5s; 1ms to 1h)
//   max_connections=N            connection pool size (default 16; 1 to 1024)
//   max_message_size=BYTES     the largest element a publish stores (default 536870912,
//                              Redis's proto-max-bulk-len); larger ones are refused
//   processing_suffix=TEXT       the Go/Python reservation list suffix (default :processing)
//   reconnect_min=DURATION       first pause before reconnecting (default 100ms; 1ms to 1h)
//   reconnect_max=DURATION       longest pause, also spelt reconnect_backoff_max (default 2s)
//   tls_ca=PATH tls_cert=PATH tls_key=PATH tls_server_name=NAME tls_verify=true|false
//                                (tls_options.hpp; rediss:// only)
//
// Wire binding (docs/transports/redis.md explains why it is safe):
//   - A queue is the Redis list named exactly as the queue. publish() RPUSHes
//     the envelope bytes unchanged; with out-of-band headers it RPUSHes the
//     transport frame {"__bq_frame":1,"headers":{...},"body":"<envelope>"}
//     that the Go and Python SDKs read and write.
//   - A received message leaves the list and is held in the sorted set
//     <queue>:bq:leases as the member "<32-hex token>:<element bytes>" scored
//     with its lease deadline (server time, ms). Each reservation has its own
//     token, so identical elements stay distinct. ack removes the member;
//     release and an expired lease push the element back to the list; extend
//     moves the deadline. Every step is one atomic Redis command or script.
//   - The Go and Python SDKs park their reservations in <queue>:processing
//     (processing_suffix): this transport never moves anything out of it.
//   - A delayed publish or release waits in the sorted set <queue>:bq:delayed
//     until a receive's script moves it to the list when due.
//
// Thread-safety: all methods are thread-safe. Operations borrow a connection
// from a bounded pool (a blocking receive holds one for its wait); connections
// broken by a server restart are replaced with back-off on later calls.
// Options::log hears of connects, lost connections, failed connect attempts
// and reconnects, from the thread that made the call; never with credentials.
#pragma once

#include <babelqueue/backoff.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/tls_options.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/url.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

/// The Redis transport and idempotency store (library babelqueue::redis).
namespace babelqueue::redis {

/// The Redis transport: redis:// and rediss:// (this header's opening comment
/// gives the URL and the key layout shared with the Go and Python SDKs).
class Transport final : public babelqueue::Transport {
 public:
  /// The one TlsOptions of every transport (enabled = rediss://).
  using TlsOptions = babelqueue::TlsOptions;

  /// The connections and their behaviour; the URL parameters of the same names set them.
  struct Options {
    std::string host = "127.0.0.1";  ///< the server's host
    std::uint16_t port = 6379;       ///< its port
    std::string user;                ///< ACL user; empty = "default"
    std::string password;            ///< empty: no AUTH. Never logged
    int database = 0;                ///< the database SELECTed
    TlsOptions tls;                  ///< enabled: rediss://
    /// A received message not settled (or extended) within this time goes back
    /// to its queue, for this or any other worker. Must be positive.
    std::chrono::milliseconds visibility_timeout{std::chrono::seconds(30)};
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};  ///< TCP connect, TLS handshake and AUTH
    /// How long a reply may take; a blocking wait adds its own length, so a
    /// socket read never times out before the server's wait ends, and the
    /// bytes a command moves add 1 s per MiB (sent, and received so far), so
    /// a big message is not timed out on its way.
    std::chrono::milliseconds command_timeout{std::chrono::seconds(5)};
    std::size_t max_connections = 16;  ///< the connection pool's size
    /// The largest element a publish stores (the body, framed with its
    /// headers when it has any); a larger one fails with
    /// Errc::invalid_argument naming both sizes, before anything is sent.
    /// Default: Redis's own limit on one string (proto-max-bulk-len,
    /// 512 MiB); set it to what the server is configured with, or lower.
    /// Must be at least 1.
    std::size_t max_message_size = std::size_t{512} << 20U;
    /// The list where Go and Python workers keep their reservations:
    /// the queue's name + processing_suffix. Never touched by this transport's recovery;
    /// counted as reserved by stats().
    std::string processing_suffix = ":processing";
    /// Pause before the next connect after failed ones: failure n waits
    /// reconnect_backoff.delay_for(n), jittered so that many clients do not
    /// return together; reset by a successful connect. initial and max must
    /// be positive.
    BackoffPolicy reconnect_backoff{std::chrono::milliseconds(100), 2.0, std::chrono::seconds(2), 0.2};
    /// Where connects, lost connections, failed connect attempts and
    /// reconnects are logged; an empty function silences them.
    LogSink log = stderr_log_sink();
  };

  /// Connects (TCP, TLS, AUTH, SELECT) once to report bad settings at once.
  /// Errors: Errc::auth for refused credentials or a certificate that does not
  /// verify, Errc::connection when the server cannot be reached,
  /// Errc::invalid_argument for bad options or unreadable TLS files.
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from a redis:// or rediss:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// One pipelined round trip. Redis runs each command on its own: on a
  /// failure the message says which message failed and how many were
  /// published before it.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override;
  /// ready: LLEN of the list; reserved: this SDK's leases plus the Go/Python
  /// processing list; delayed: messages waiting for their due time.
  Result<QueueStats> stats(std::string_view queue) override;
  /// The head of the list (LRANGE), at most 1000 elements; delayed and
  /// reserved messages are not shown.
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  /// "redis", and the connections made again after one was lost or a
  /// connect failed.
  ConnectionStats connection_stats() const noexcept override;
  /// Interrupts blocked receive() calls (they answer Errc::closed) and closes
  /// every connection. Leased messages come back after their lease.
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

 private:
  class State;
  explicit Transport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers redis:// and rediss:// with open_transport(). Call it once, from
/// any thread; calling it again is harmless.
void register_transport();

/// The options by their short name: babelqueue::redis::Options.
using Options = Transport::Options;

}  // namespace babelqueue::redis
