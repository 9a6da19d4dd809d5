// SPDX-License-Identifier: Apache-2.0
// Ring<T>: a first-in first-out queue on one array that keeps its storage.
//
// A receiver's buffer is filled on the connection's thread and emptied on
// the receiving threads. A std::deque there allocates a block on one thread
// every few messages and frees it on the other, and memory freed on another
// thread than the one that allocated it is the allocator's slow path (its
// shared lists and their lock). The ring allocates only when it grows past
// the most it ever held; a slot taken out keeps its moved-from element until
// the next one is moved over it.
//
// Thread-safety: none; its owner guards it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace babelqueue::amqp10 {

template <typename T>
class Ring {
 public:
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }

  // The i-th element from the front (i < size()).
  T& operator[](std::size_t i) noexcept { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  T& front() noexcept { return slots_[head_]; }

  void push_back(T&& value) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(value);
    ++size_;
  }

  // Drops the front element (size() > 0); its slot keeps what is left in it.
  void pop_front() noexcept {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }

  // Drops every element, giving each slot a fresh T (what the elements held
  // is released now, not when the slot is next used).
  void clear() {
    for (T& slot : slots_) slot = T();
    head_ = 0;
    size_ = 0;
  }

 private:
  // Twice the slots (a power of two, so an index wraps with a mask), the
  // elements moved to the front of the new array.
  void grow() {
    std::vector<T> bigger(std::max<std::size_t>(16, slots_.size() * 2));
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace babelqueue::amqp10
