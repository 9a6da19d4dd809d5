// SPDX-License-Identifier: Apache-2.0
// The partitions assigned to the transport's consumer: per partition its
// process-then-commit progress (PartitionProgress) and the generation its
// delivery tokens carry, so a token of an earlier assignment settles nothing;
// per queue the records fetched and not handed out yet.
//
// Threads: the receiving thread files records and follows rebalances, any
// thread takes fetched records and settles them, the committer takes the
// commits: everything is behind one mutex of its own.
#pragma once

#include "partition_progress.hpp"
#include "ready_records.hpp"
#include "retry_tiers.hpp"  // PartitionKey

#include <babelqueue/transport.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace babelqueue::kafka::detail {

// The token of a received record: the offset (DeliveryToken::id) and, as the
// text's 8 bytes, the partition assignment's generation. (The record key is
// Delivery::ordering_key, which a release republishes with.)
struct TokenParts {
  std::uint64_t generation = 0;
  std::int64_t offset = 0;
};

DeliveryToken make_token(std::uint64_t generation, std::int64_t offset);
std::optional<TokenParts> parse_token(const Delivery& delivery);

// Orders partitions by topic then number, and finds them by a topic view (no
// string built per record).
struct PartitionOrder {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    const int c = std::string_view(a.first).compare(std::string_view(b.first));
    return c < 0 || (c == 0 && a.second < b.second);
  }
};

// One assigned partition. Reached only through Assignments (under its mutex).
struct Track {
  std::uint64_t generation = 0;
  std::string topic;
  std::int32_t partition = 0;
  PartitionProgress progress;
  // Where its records wait to be handed out, and the queue name they report
  // (nodes of Assignments' ready map, found once).
  ReadyRecords* ready = nullptr;
  const std::string* queue = nullptr;
};

// An offset to commit: the next record to read on partition.
struct Commit {
  PartitionKey partition;
  std::int64_t offset = 0;
  std::uint64_t generation = 0;  // of the assignment it was taken from
};

class Assignments {
 public:
  // ---- the receiving thread ----

  // The partitions were assigned: each starts afresh under a new generation.
  void assign(const std::vector<PartitionKey>& partitions);

  // The partitions were revoked. Drops their fetched records (and any of an
  // earlier assignment), waits up to grace for the handlers of the records
  // handed out to settle them, then forgets the partitions and returns what
  // they finished, to be committed. dropped: records of theirs the caller
  // dropped already (parked ones), which will never be settled here.
  std::vector<Commit> revoke(const std::set<PartitionKey>& revoked, std::map<PartitionKey, std::size_t> dropped,
                             std::chrono::milliseconds grace);

  // A polled record that was dealt with without being handed out (a parked
  // record whose copy was confirmed) is done.
  void done(const PartitionKey& partition, std::int64_t offset);

  // Files a batch of polled records under one lock (held while it lives).
  // Threads: the receiving thread.
  class Filing {
   public:
    Filing(const Filing&) = delete;
    Filing& operator=(const Filing&) = delete;

    // Enters a polled record at offset of topic[partition] as outstanding
    // and returns its partition's track; nullptr when the partition is not
    // assigned (any more): the record will be fetched again. last: the
    // previous record's track (most records are of the same partition).
    Track* add(std::string_view topic, std::int32_t partition, std::int64_t offset, Track* last) {
      Track* track = last;
      if (track == nullptr || track->partition != partition || track->topic != topic) {
        auto found = owner_.tracks_.find(std::pair<std::string_view, std::int32_t>(topic, partition));
        if (found == owner_.tracks_.end()) return nullptr;
        track = &found->second;
      }
      track->progress.add(offset);
      return track;
    }

    // A new fetched record of track's partition, at the back of its queue's
    // records, to be filled in place; queue_of() names the queue, asked once
    // per assignment.
    template <class QueueOf>
    Delivery& emplace(Track& track, QueueOf&& queue_of) {
      if (track.ready == nullptr) {
        auto [node, added] = owner_.ready_.try_emplace(std::string(queue_of()));
        track.ready = &node->second;
        track.queue = &node->first;
      }
      Delivery& delivery = track.ready->emplace_back();
      delivery.queue = *track.queue;
      return delivery;
    }

   private:
    friend class Assignments;
    explicit Filing(Assignments& owner) : owner_(owner), lock_(owner.mutex_) {}

    Assignments& owner_;
    std::lock_guard<std::mutex> lock_;
  };
  Filing filing() { return Filing(*this); }

  // ---- any thread ----

  // Moves up to max fetched records of queue to out; false when there are none.
  bool take_ready(std::string_view queue, std::size_t max, std::vector<Delivery>& out);
  bool has_ready(std::string_view queue);
  // Drops every fetched record (closing: they are not done, so they come back).
  void clear_ready();

  // Marks the record at offset of the generation's assignment done; false
  // when it is no longer held (settled already, or its partition moved).
  bool settle(std::uint64_t generation, std::int64_t offset);
  // True when the record is held and not settled.
  bool pending(std::uint64_t generation, std::int64_t offset);

  // Records of topic received and not settled: handed out to queue's
  // handlers or parked, not waiting in queue's fetched records.
  std::int64_t reserved(std::string_view topic, std::string_view queue);

  // ---- the committer ----

  // Every partition's finished prefix moved since the last call.
  std::vector<Commit> take_commits();
  // Those commits failed: offer them again, unless their partition moved on
  // or away meanwhile.
  void restore(const std::vector<Commit>& failed);

 private:
  std::mutex mutex_;  // guards what follows
  std::condition_variable settled_;
  std::uint64_t generation_ = 0;
  std::map<PartitionKey, Track, PartitionOrder> tracks_;
  std::unordered_map<std::uint64_t, Track*> by_generation_;  // into tracks_
  std::map<std::string, ReadyRecords, std::less<>> ready_;
};

}  // namespace babelqueue::kafka::detail
