// SPDX-License-Identifier: Apache-2.0
// RecordingTransport: a Transport decorator that records what the runtime asks
// of a transport — every publish with its options, every ack and ack_batch —
// so tests can check what the Worker sends.
//
//   RecordingTransport recorded(memory, /*batch_ack=*/true);
//   Worker worker(recorded, options);
//   ... worker.drain() ...
//   EXPECT_EQ(recorded.publishes()[1].options.ordering_key, "group-A");
//
// With batch_ack it claims Capabilities::batch_ack for a wrapped transport
// that has none; its ack_batch() then settles through the wrapped
// transport's ack(), one delivery at a time, and counts as one call here.
// fail_in_next_ack_batch() makes one delivery of the next batch fail without
// reaching the wrapped transport (which keeps it reserved).
// hold_ack_batches() makes every ack_batch() wait (as for a slow broker)
// until release_ack_batches(). Everything else is forwarded unchanged.
//
// Thread-safety: as thread-safe as the wrapped transport; the records have
// their own mutex.
#pragma once

#include <babelqueue/transport.hpp>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace babelqueue::test_support {

class RecordingTransport : public Transport {
 public:
  struct Publish {
    std::string queue;
    std::string body;
    PublishOptions options;
  };

  // Borrows inner: the caller keeps it alive longer than this object.
  explicit RecordingTransport(Transport& inner, bool batch_ack = false) : inner_(inner), batch_ack_(batch_ack) {}

  std::vector<Publish> publishes() const {
    const std::lock_guard lock(mutex_);
    return publishes_;
  }
  // How many ack() calls reached this transport.
  std::size_t single_acks() const {
    const std::lock_guard lock(mutex_);
    return single_acks_;
  }
  // The size of each ack_batch() call, in order.
  std::vector<std::size_t> ack_batches() const {
    const std::lock_guard lock(mutex_);
    return ack_batches_;
  }
  void fail_in_next_ack_batch(std::size_t index, Errc code = Errc::not_found) {
    const std::lock_guard lock(mutex_);
    batch_fault_ = Fault{index, code};
  }

  void hold_ack_batches() {
    const std::lock_guard lock(mutex_);
    held_ = true;
  }
  void release_ack_batches() {
    {
      const std::lock_guard lock(mutex_);
      held_ = false;
    }
    released_.notify_all();
  }
  // How many ack_batch() calls wait for release_ack_batches().
  std::size_t ack_batches_held() const {
    const std::lock_guard lock(mutex_);
    return waiting_;
  }

  Capabilities capabilities() const override {
    Capabilities caps = inner_.capabilities();
    if (batch_ack_) caps.batch_ack = true;
    return caps;
  }

  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override {
    {
      const std::lock_guard lock(mutex_);
      publishes_.push_back(Publish{std::string(queue), std::string(body), options});
    }
    return inner_.publish(queue, body, options);
  }

  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override {
    return inner_.receive(queue, max, wait);
  }

  Result<void> ack(const Delivery& delivery) override {
    {
      const std::lock_guard lock(mutex_);
      ++single_acks_;
    }
    return inner_.ack(delivery);
  }

  using Transport::ack_batch;
  Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) override {
    std::optional<Fault> fault;
    {
      std::unique_lock lock(mutex_);
      ack_batches_.push_back(deliveries.size());
      fault = std::exchange(batch_fault_, std::nullopt);
      ++waiting_;
      released_.wait(lock, [&] { return !held_; });
      --waiting_;
    }
    const std::size_t before = failures.size();
    for (std::size_t i = 0; i < deliveries.size(); ++i) {
      if (fault && fault->index == i) {
        failures.push_back(AckFailure{i, ErrorInfo(fault->code, "injected fault: one delivery of a batch ack")});
        continue;
      }
      if (auto acked = inner_.ack(deliveries[i]); !acked) failures.push_back(AckFailure{i, acked.error()});
    }
    if (failures.size() == before) return {};
    return unexpected(failures[before].error);
  }

  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override {
    return inner_.release(delivery, delay);
  }
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override {
    return inner_.extend(delivery, lease);
  }
  Result<void> dead_letter_natively(const Delivery& delivery, std::string_view reason,
                                    std::string_view description) override {
    return inner_.dead_letter_natively(delivery, reason, description);
  }
  std::string dead_letter_queue(std::string_view queue) const override { return inner_.dead_letter_queue(queue); }
  Result<QueueStats> stats(std::string_view queue) override { return inner_.stats(queue); }
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override { inner_.close(deadline); }

 private:
  struct Fault {
    std::size_t index;
    Errc code;
  };

  Transport& inner_;
  const bool batch_ack_;
  mutable std::mutex mutex_;
  std::vector<Publish> publishes_;
  std::size_t single_acks_ = 0;
  std::vector<std::size_t> ack_batches_;
  std::optional<Fault> batch_fault_;
  bool held_ = false;
  std::size_t waiting_ = 0;
  std::condition_variable released_;
};

}  // namespace babelqueue::test_support
