// SPDX-License-Identifier: Apache-2.0
// Retry tiers (ADR 0008, 0012): which retry topic a delayed record is parked
// on, and when a parked record is due to go back to its topic. Pure: no I/O
// and no librdkafka, so it is tested without a broker; RetryParking
// (retry_parking.hpp) reads, pauses and produces around it.
//
// Threads: a RetryTiers is immutable once built (any thread); a RetrySchedule
// has no lock and belongs to the receiving thread (the consumer's lock holder).
#pragma once

#include "kafka_record.hpp"  // RecordHeaders

#include <babelqueue/result.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue::kafka::detail {

// The configured tiers: ascending delays and the retry topic naming pattern
// ({topic}, {n} the 1-based tier, {delay_ms}).
class RetryTiers {
 public:
  RetryTiers(std::vector<std::chrono::milliseconds> delays, std::string pattern)
      : delays_(std::move(delays)), pattern_(std::move(pattern)) {}

  bool empty() const noexcept { return delays_.empty(); }
  std::size_t size() const noexcept { return delays_.size(); }
  std::chrono::milliseconds delay(std::size_t tier) const { return delays_[tier]; }
  // The largest tier; zero without tiers.
  std::chrono::milliseconds longest() const noexcept {
    return delays_.empty() ? std::chrono::milliseconds(0) : delays_.back();
  }

  // The retry topic of tier (0-based) for topic.
  std::string topic(std::string_view topic, std::size_t tier) const {
    std::string out;
    for (std::size_t i = 0; i < pattern_.size();) {
      auto replace = [&](std::string_view placeholder, const std::string& value) {
        if (pattern_.compare(i, placeholder.size(), placeholder) != 0) return false;
        out += value;
        i += placeholder.size();
        return true;
      };
      if (replace("{topic}", std::string(topic)) || replace("{n}", std::to_string(tier + 1)) ||
          replace("{delay_ms}", std::to_string(delays_[tier].count()))) {
        continue;
      }
      out += pattern_[i++];
    }
    return out;
  }

  // The tier for a delay on topic: the smallest one at least as long.
  // Errc::unsupported without tiers, Errc::invalid_argument when the delay is
  // longer than every tier (never shortened).
  Result<std::size_t> tier_for(std::string_view topic, std::chrono::milliseconds delay) const {
    if (delays_.empty()) {
      return unexpected(Errc::unsupported, "a delay on Kafka topic " + std::string(topic) +
                                               " needs retry tiers (kafka://...?retry_tiers=5s,30s,5m); "
                                               "nothing was published");
    }
    for (std::size_t i = 0; i < delays_.size(); ++i) {
      if (delays_[i] >= delay) return i;
    }
    return unexpected(Errc::invalid_argument, "a delay of " + std::to_string(delay.count()) +
                                                  " ms is longer than the largest retry tier (" +
                                                  std::to_string(delays_.back().count()) + " ms)");
  }

 private:
  std::vector<std::chrono::milliseconds> delays_;
  std::string pattern_;
};

// How long a record read from a tier still waits before it is due: its
// timestamp (Unix ms; the broker's append time on the topics this SDK
// creates) plus the tier delay, held within [0, tier] from now_ms so that a
// skewed clock neither re-injects it early nor holds it past its tier. A
// record without a timestamp waits the whole tier.
inline std::chrono::milliseconds wait_before_due(std::optional<std::int64_t> timestamp_ms, std::int64_t now_ms,
                                                 std::chrono::milliseconds tier) {
  const std::int64_t delay = tier.count();
  const std::int64_t due = timestamp_ms ? std::clamp(*timestamp_ms + delay, now_ms, now_ms + delay) : now_ms + delay;
  return std::chrono::milliseconds(due - now_ms);
}

// A partition: topic and number.
using PartitionKey = std::pair<std::string, std::int32_t>;

// A record of a retry topic waiting to be re-injected into its queue's topic.
struct ParkedRecord {
  std::int64_t offset = 0;  // on the retry topic: settled once the copy is confirmed
  std::string value;
  std::optional<std::string> key;
  RecordHeaders headers;  // without bq-delay and bq-original-topic
  std::string original_topic;
  std::chrono::steady_clock::time_point due;
};

// The records parked per retry-topic partition, oldest first, and which of
// those partitions are paused. A partition leaves its records in order: a due
// record waits behind an earlier one that is not due, and a partition stays
// paused (no more fetching) while anything of it waits.
class RetrySchedule {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Due = std::map<PartitionKey, std::deque<ParkedRecord>>;

  // Parks record, read from the retry-topic partition where. True when where
  // must be paused now: the record is the only one waiting, it is not due at
  // now, and where is not paused already (it is then counted as paused).
  bool park(const PartitionKey& where, ParkedRecord record, TimePoint now) {
    auto& waiting = parked_[where];
    waiting.push_back(std::move(record));
    if (waiting.size() == 1 && waiting.front().due > now && !paused_.contains(where)) {
      paused_.insert(where);
      return true;
    }
    return false;
  }

  // Takes out the records due at now, per partition, oldest first.
  Due take_due(TimePoint now) {
    Due due;
    for (auto& [where, waiting] : parked_) {
      while (!waiting.empty() && waiting.front().due <= now) {
        due[where].push_back(std::move(waiting.front()));
        waiting.pop_front();
      }
    }
    return due;
  }

  // A due record could not be re-injected: it (the front of rest) and the
  // records taken out after it go back ahead of what where holds; it is due
  // again at retry_at, the others keep their due times (behind it).
  void put_back(const PartitionKey& where, std::deque<ParkedRecord> rest, TimePoint retry_at) {
    if (rest.empty()) return;
    rest.front().due = retry_at;
    auto& waiting = parked_[where];
    waiting.insert(waiting.begin(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  }

  // Pause changes after a round of re-injection.
  struct Pauses {
    std::vector<PartitionKey> pause;   // records wait and it is not paused yet
    std::vector<PartitionKey> resume;  // paused and nothing waits any more
  };

  // The partitions to pause and to resume now (counted as done), in
  // partition order; partitions with nothing waiting are forgotten.
  Pauses update_pauses() {
    Pauses changes;
    for (auto it = parked_.begin(); it != parked_.end();) {
      const PartitionKey& where = it->first;
      const bool waiting = !it->second.empty();
      if (!waiting && paused_.erase(where) > 0) changes.resume.push_back(where);
      if (waiting && paused_.insert(where).second) changes.pause.push_back(where);
      it = waiting ? std::next(it) : parked_.erase(it);
    }
    return changes;
  }

  // where was revoked: forgets its parked records (the next owner reads them
  // again) and returns how many there were.
  std::size_t drop(const PartitionKey& where) {
    auto found = parked_.find(where);
    if (found == parked_.end()) return 0;
    const std::size_t count = found->second.size();
    parked_.erase(found);
    return count;
  }

  // The consumer gave up its whole assignment, and with it every pause.
  void forget_pauses() noexcept { paused_.clear(); }

  // Records of where waiting.
  std::size_t waiting(const PartitionKey& where) const {
    auto found = parked_.find(where);
    return found == parked_.end() ? 0 : found->second.size();
  }

  bool paused(const PartitionKey& where) const { return paused_.contains(where); }

 private:
  std::map<PartitionKey, std::deque<ParkedRecord>> parked_;
  std::set<PartitionKey> paused_;
};

}  // namespace babelqueue::kafka::detail
