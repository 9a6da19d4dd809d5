// SPDX-License-Identifier: Apache-2.0
#include "assignments.hpp"

#include <cstring>

namespace babelqueue::kafka::detail {

DeliveryToken make_token(std::uint64_t generation, std::int64_t offset) {
  DeliveryToken token;
  token.id = static_cast<std::uint64_t>(offset);
  token.text.resize(sizeof generation);
  std::memcpy(token.text.data(), &generation, sizeof generation);
  return token;
}

std::optional<TokenParts> parse_token(const Delivery& delivery) {
  const std::string& text = delivery.token.text;
  TokenParts parts;
  if (text.size() != sizeof parts.generation) return std::nullopt;
  std::memcpy(&parts.generation, text.data(), sizeof parts.generation);
  parts.offset = static_cast<std::int64_t>(delivery.token.id);
  return parts;
}

void Assignments::assign(const std::vector<PartitionKey>& partitions) {
  std::lock_guard lock(mutex_);
  for (const PartitionKey& key : partitions) {
    Track& track = tracks_[key];
    by_generation_.erase(track.generation);
    track = Track{};
    track.generation = ++generation_;
    track.topic = key.first;
    track.partition = key.second;
    by_generation_[track.generation] = &track;
  }
}

std::vector<Commit> Assignments::revoke(const std::set<PartitionKey>& revoked,
                                        std::map<PartitionKey, std::size_t> dropped, std::chrono::milliseconds grace) {
  std::unique_lock lock(mutex_);
  // Records fetched but not handed out are dropped: not done, so the commit
  // stops before them and the next owner reads them again.
  for (auto& [queue, records] : ready_) {
    records.erase_if([&](const Delivery& d) {
      auto parts = parse_token(d);
      auto track = parts ? by_generation_.find(parts->generation) : by_generation_.end();
      if (track == by_generation_.end()) return true;  // of an earlier assignment
      PartitionKey key{track->second->topic, track->second->partition};
      if (!revoked.contains(key)) return false;
      ++dropped[key];
      return true;
    });
  }
  auto outstanding = [&] {
    std::size_t count = 0;
    for (const PartitionKey& key : revoked) {
      auto found = tracks_.find(key);
      if (found != tracks_.end()) count += found->second.progress.outstanding() - dropped[key];
    }
    return count;
  };
  if (grace.count() > 0) settled_.wait_for(lock, grace, [&] { return outstanding() == 0; });
  std::vector<Commit> commits;
  for (const PartitionKey& key : revoked) {
    auto found = tracks_.find(key);
    if (found == tracks_.end()) continue;
    if (auto offset = found->second.progress.take_commit()) commits.push_back({key, *offset, found->second.generation});
    by_generation_.erase(found->second.generation);
    tracks_.erase(found);
  }
  return commits;
}

void Assignments::done(const PartitionKey& partition, std::int64_t offset) {
  std::lock_guard lock(mutex_);
  auto track = tracks_.find(partition);
  if (track != tracks_.end()) track->second.progress.done(offset);
}

bool Assignments::take_ready(std::string_view queue, std::size_t max, std::vector<Delivery>& out) {
  std::lock_guard lock(mutex_);
  auto found = ready_.find(queue);
  if (found == ready_.end() || found->second.empty()) return false;
  found->second.take(max, out);
  return true;
}

bool Assignments::has_ready(std::string_view queue) {
  std::lock_guard lock(mutex_);
  auto found = ready_.find(queue);
  return found != ready_.end() && !found->second.empty();
}

void Assignments::clear_ready() {
  std::lock_guard lock(mutex_);
  for (auto& [queue, records] : ready_) records.clear();  // the nodes stay: tracks point at them
}

bool Assignments::settle(std::uint64_t generation, std::int64_t offset) {
  std::lock_guard lock(mutex_);
  auto track = by_generation_.find(generation);
  if (track == by_generation_.end() || !track->second->progress.done(offset)) return false;
  settled_.notify_all();
  return true;
}

bool Assignments::pending(std::uint64_t generation, std::int64_t offset) {
  std::lock_guard lock(mutex_);
  auto track = by_generation_.find(generation);
  return track != by_generation_.end() && track->second->progress.pending(offset);
}

std::int64_t Assignments::reserved(std::string_view topic, std::string_view queue) {
  std::lock_guard lock(mutex_);
  std::int64_t reserved = 0;
  for (auto it = tracks_.lower_bound(std::pair<std::string_view, std::int32_t>(topic, 0));
       it != tracks_.end() && it->first.first == topic; ++it) {
    reserved += static_cast<std::int64_t>(it->second.progress.outstanding());
  }
  if (auto buffered = ready_.find(queue); buffered != ready_.end()) {
    reserved -= static_cast<std::int64_t>(buffered->second.size());
  }
  return reserved;
}

std::vector<Commit> Assignments::take_commits() {
  std::lock_guard lock(mutex_);
  std::vector<Commit> commits;
  for (auto& [key, track] : tracks_) {
    if (auto offset = track.progress.take_commit()) commits.push_back({key, *offset, track.generation});
  }
  return commits;
}

void Assignments::restore(const std::vector<Commit>& failed) {
  std::lock_guard lock(mutex_);
  for (const Commit& commit : failed) {
    auto found = tracks_.find(commit.partition);
    if (found != tracks_.end() && found->second.generation == commit.generation) {
      found->second.progress.restore_commit(commit.offset);
    }
  }
}

}  // namespace babelqueue::kafka::detail
