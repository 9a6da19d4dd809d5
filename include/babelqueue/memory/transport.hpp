// SPDX-License-Identifier: Apache-2.0
// Transport: an in-process broker with real reserve / ack / release
// semantics, for tests, benchmarks and single-process pipelines.
//
// Messages live as long as the Broker that holds them. Several
// Transport objects opened on the same broker share its queues; the URL
// memory://NAME[?visibility_timeout=DURATION] opens a transport on the
// process-wide broker NAME, which lives until the process exits (a duration:
// 500ms, 5s, 2m, 1h or a bare number of seconds, up to a year; duration.hpp).
//
// Semantics (docs/transports/memory.md has the whole picture):
//   - Each queue is first in, first out. A message published with a delay, or
//     released with one, joins the tail of the queue when the delay has passed;
//     a released message without a delay joins the tail at once.
//   - receive() moves messages to a reserved set and blocks on a condition
//     variable (no polling) until at least one message is ready, the wait has
//     passed, or the transport is closed (then Errc::closed).
//   - With a visibility timeout, a reservation not settled in time goes back
//     to the tail of its queue; its old token then settles nothing:
//     ack/release/extend answer Errc::not_found, as for a token settled twice.
//   - Delivery::native_attempts is the number of earlier deliveries of the
//     same stored message (releases and expired reservations count), so the
//     runtime can bound a release loop; a republished retry is a new message.
//   - PublishOptions::ordering_key is kept and read back as
//     Delivery::ordering_key (Capabilities::ordering_key); dedup_id is
//     ignored.
//
// Thread-safety: all methods are thread-safe; a Delivery may be settled from
// any thread, through any Transport on the same broker.
#pragma once

#include <babelqueue/transport.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

/// The in-process transport (part of babelqueue::core).
namespace babelqueue::memory {

class Broker;

/// The in-process transport: memory://NAME (this header's opening comment
/// gives the semantics).
class Transport final : public babelqueue::Transport {
 public:
  /// Its one setting.
  struct Options {
    /// A received message not settled within this time is delivered again,
    /// like a broker's visibility timeout. Zero disables it (and with it
    /// Capabilities::redelivers_unsettled).
    std::chrono::milliseconds visibility_timeout{0};
  };

  /// A transport on a broker of its own.
  ///@{
  Transport();
  explicit Transport(Options options);
  ///@}
  /// A transport on a shared broker. Throws Error (Errc::invalid_argument)
  /// when broker is null.
  Transport(std::shared_ptr<Broker> broker, Options options);
  ~Transport() override;

  /// The process-wide broker called name (created on first use, never
  /// destroyed before the process exits).
  static std::shared_ptr<Broker> shared_broker(std::string_view name);

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override;
  Result<QueueStats> stats(std::string_view queue) override;
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  /// Wakes this transport's blocked receive() calls (they answer
  /// Errc::closed); every later call answers Errc::closed. The broker and its
  /// messages, reserved ones included, stay.
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

 private:
  std::shared_ptr<Broker> broker_;
  Options options_;
  std::atomic<bool> closed_{false};
};

/// The options by their short name: babelqueue::memory::Options.
using Options = Transport::Options;

}  // namespace babelqueue::memory
