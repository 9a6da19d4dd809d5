// SPDX-License-Identifier: Apache-2.0
// Records fetched and waiting to be handed out by receive(), oldest first. A
// vector with a read index, not a std::deque: a Delivery is big enough that a
// deque would allocate a block for every two of them.
//
// Threads: none of its own; Assignments guards it with its mutex.
#pragma once

#include <babelqueue/transport.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace babelqueue::kafka::detail {

class ReadyRecords {
 public:
  bool empty() const noexcept { return head_ == records_.size(); }
  std::size_t size() const noexcept { return records_.size() - head_; }

  // A new record at the back, to be filled in place.
  Delivery& emplace_back() {
    if (empty()) clear();  // reuses the storage
    return records_.emplace_back();
  }

  // Moves up to max records, oldest first, to the back of out.
  void take(std::size_t max, std::vector<Delivery>& out) {
    out.reserve(out.size() + std::min(max, size()));
    for (std::size_t n = 0; n < max && !empty(); ++n) out.push_back(std::move(records_[head_++]));
    if (empty()) {
      clear();
    } else if (head_ >= 1024 && head_ * 2 >= records_.size()) {
      compact();  // a reader that never catches up does not grow it forever
    }
  }

  // Removes the waiting records for which drop(record) is true.
  template <class Drop>
  void erase_if(Drop&& drop) {
    compact();
    std::erase_if(records_, std::forward<Drop>(drop));
  }

  void clear() noexcept {
    records_.clear();
    head_ = 0;
  }

 private:
  void compact() {
    records_.erase(records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }

  std::vector<Delivery> records_;
  std::size_t head_ = 0;  // the oldest waiting record
};

}  // namespace babelqueue::kafka::detail
