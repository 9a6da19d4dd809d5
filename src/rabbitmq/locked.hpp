// SPDX-License-Identifier: Apache-2.0
// Locked: a held lock of the transport's one mutex, and the only way to
// reach what API threads and the I/O thread share (Guarded, in
// shared_state.hpp). Functions that touch shared state take one, so calling
// them without the lock does not compile.
#pragma once

#include <mutex>

namespace babelqueue::rabbitmq::detail {

class SharedState;
struct Guarded;

// Used by API threads and the I/O thread, one per critical section.
class Locked {
 public:
  explicit Locked(SharedState& state);
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

  Guarded* operator->() const { return guarded_; }
  Guarded& operator*() const { return *guarded_; }
  // For waiting on the condition variables of SharedState and Consumer.
  std::unique_lock<std::mutex>& lock() { return lock_; }
  // Wakes the I/O thread if it sleeps. One write per sleep: the requests
  // that follow before it wakes are all taken in its next turn.
  void wake_io() const;

 private:
  SharedState* state_;
  Guarded* guarded_;
  std::unique_lock<std::mutex> lock_;
};

}  // namespace babelqueue::rabbitmq::detail
