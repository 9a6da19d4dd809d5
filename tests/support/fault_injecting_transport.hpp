// SPDX-License-Identifier: Apache-2.0
// FaultInjectingTransport: a Transport decorator that fails chosen operations
// on request, so tests can prove that a failed publish, ack or release loses
// nothing (e.g. the runtime's retry or dead-letter publish failing).
//
//   FaultInjectingTransport faulty(std::make_unique<memory::Transport>());
//   faulty.fail_next_publishes(1, Errc::connection, "orders.dlq");  // only that queue
//   ... run the worker; the dead-letter publish fails once ...
//
// Everything not failed is forwarded to the wrapped transport unchanged.
// Capabilities are the wrapped transport's.
//
// Thread-safety: as thread-safe as the wrapped transport; the fault plan has
// its own mutex, so faults may be armed while other threads use the transport.
#pragma once

#include "forwarding_transport.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue::test_support {

class FaultInjectingTransport final : public ForwardingTransport {
 public:
  // Owns the wrapped transport, or borrows it (the caller keeps it alive
  // longer than this object).
  using ForwardingTransport::ForwardingTransport;

  // The next count publishes (to queue only, when it is not empty) fail with
  // code without reaching the wrapped transport. A batch counts each message.
  void fail_next_publishes(std::size_t count, Errc code = Errc::connection, std::string queue = {}) {
    const std::lock_guard lock(mutex_);
    publish_fault_ = Fault{count, code, std::move(queue)};
  }
  void fail_next_acks(std::size_t count, Errc code = Errc::connection) {
    const std::lock_guard lock(mutex_);
    ack_fault_ = Fault{count, code, {}};
  }
  void fail_next_releases(std::size_t count, Errc code = Errc::connection) {
    const std::lock_guard lock(mutex_);
    release_fault_ = Fault{count, code, {}};
  }
  void fail_next_receives(std::size_t count, Errc code = Errc::connection) {
    const std::lock_guard lock(mutex_);
    receive_fault_ = Fault{count, code, {}};
  }
  // A lease that cannot be extended (a broker unreachable, a process paused
  // past its leases).
  void fail_next_extends(std::size_t count, Errc code = Errc::connection) {
    const std::lock_guard lock(mutex_);
    extend_fault_ = Fault{count, code, {}};
  }
  // Disarms every fault.
  void heal() {
    const std::lock_guard lock(mutex_);
    publish_fault_ = ack_fault_ = release_fault_ = receive_fault_ = extend_fault_ = Fault{};
  }

  // How many operations were failed on purpose so far.
  std::size_t injected_failures() const {
    const std::lock_guard lock(mutex_);
    return injected_;
  }
  // The queues of the publishes that were failed, in order.
  std::vector<std::string> failed_publish_queues() const {
    const std::lock_guard lock(mutex_);
    return failed_publish_queues_;
  }

  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override {
    if (auto fault = take(publish_fault_, queue)) return failure(*fault, "publish", queue);
    return inner().publish(queue, body, options);
  }

  // Publishes the messages before the first faulted one (as one batch), then
  // fails, as a broker that dropped the connection mid-batch would.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override {
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (auto fault = take(publish_fault_, messages[i].queue)) {
        if (i > 0) {
          if (auto prefix = inner().publish_batch(messages.first(i)); !prefix) return prefix;
        }
        return unexpected(fault->code, "batch publish stopped after " + std::to_string(i) + " of " +
                                           std::to_string(messages.size()) + " messages: injected fault (publish to '" +
                                           messages[i].queue + "')");
      }
    }
    return inner().publish_batch(messages);
  }

  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override {
    if (auto fault = take(receive_fault_, queue)) return failure(*fault, "receive", queue);
    return inner().receive(queue, max, wait);
  }

  Result<void> ack(const Delivery& delivery) override {
    if (auto fault = take(ack_fault_, delivery.queue)) return failure(*fault, "ack", delivery.queue);
    return inner().ack(delivery);
  }

  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override {
    if (auto fault = take(release_fault_, delivery.queue)) return failure(*fault, "release", delivery.queue);
    return inner().release(delivery, delay);
  }

  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override {
    if (auto fault = take(extend_fault_, delivery.queue)) return failure(*fault, "extend", delivery.queue);
    return inner().extend(delivery, lease);
  }

 private:
  struct Fault {
    std::size_t remaining = 0;
    Errc code = Errc::connection;
    std::string queue;  // empty: any queue
  };

  // Consumes one failure of fault when it applies to queue.
  std::optional<Fault> take(Fault& fault, std::string_view queue) {
    const std::lock_guard lock(mutex_);
    if (fault.remaining == 0 || (!fault.queue.empty() && fault.queue != queue)) return std::nullopt;
    --fault.remaining;
    ++injected_;
    if (&fault == &publish_fault_) failed_publish_queues_.emplace_back(queue);
    return fault;
  }

  static Unexpected<ErrorInfo> failure(const Fault& fault, std::string_view operation, std::string_view queue) {
    return unexpected(fault.code,
                      "injected fault: " + std::string(operation) + " on queue '" + std::string(queue) + "' failed");
  }

  mutable std::mutex mutex_;
  Fault publish_fault_;
  Fault ack_fault_;
  Fault release_fault_;
  Fault receive_fault_;
  Fault extend_fault_;
  std::size_t injected_ = 0;
  std::vector<std::string> failed_publish_queues_;
};

}  // namespace babelqueue::test_support
