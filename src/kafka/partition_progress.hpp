// SPDX-License-Identifier: Apache-2.0
// Process-then-commit bookkeeping for one assigned partition.
//
// Records are added in the order they are polled; each is later marked done
// (acked, or released once its copy was confirmed). The committable offset is
// the one after the longest run of done records from the oldest outstanding
// one, so several handler threads finishing out of order never commit past a
// record that is still being handled.
//
// Thread-safety: none; Assignments guards it with its mutex.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace babelqueue::kafka::detail {

class PartitionProgress {
 public:
  // A polled record, not done yet. Offsets grow (a smaller one is ignored).
  void add(std::int64_t offset) {
    if (!records_.empty() && offset <= records_.back().first) return;
    records_.emplace_back(offset, false);
    ++outstanding_;
  }

  // True when offset was polled and is not done yet.
  bool pending(std::int64_t offset) const {
    auto found = find(offset);
    return found != records_.end() && !found->second;
  }

  // Marks offset done; false when it is unknown or already done.
  bool done(std::int64_t offset) {
    auto found = find(offset);
    if (found == records_.end() || found->second) return false;
    found->second = true;
    --outstanding_;
    while (!records_.empty() && records_.front().second) {
      commit_ = records_.front().first + 1;
      records_.pop_front();
      dirty_ = true;
    }
    return true;
  }

  // The offset to commit (the next record to read) when it moved since the
  // last call.
  std::optional<std::int64_t> take_commit() {
    if (!dirty_) return std::nullopt;
    dirty_ = false;
    return commit_;
  }

  // A commit of offset failed: offer it again (unless a later one replaced it).
  void restore_commit(std::int64_t offset) {
    if (offset == commit_) dirty_ = true;
  }

  // Records polled and not done.
  std::size_t outstanding() const { return outstanding_; }

 private:
  using Records = std::deque<std::pair<std::int64_t, bool>>;  // offset, done; oldest first

  Records::iterator find(std::int64_t offset) {
    auto it = std::lower_bound(records_.begin(), records_.end(), offset,
                               [](const auto& record, std::int64_t value) { return record.first < value; });
    return it != records_.end() && it->first == offset ? it : records_.end();
  }
  Records::const_iterator find(std::int64_t offset) const {
    auto it = std::lower_bound(records_.begin(), records_.end(), offset,
                               [](const auto& record, std::int64_t value) { return record.first < value; });
    return it != records_.end() && it->first == offset ? it : records_.end();
  }

  Records records_;
  std::size_t outstanding_ = 0;
  std::int64_t commit_ = -1;
  bool dirty_ = false;
};

}  // namespace babelqueue::kafka::detail
