// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/idempotency/memory_store.hpp>
#include <babelqueue/uuid.hpp>

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace babelqueue::idempotency {

namespace {
using Clock = std::chrono::steady_clock;
constexpr Clock::time_point kNever = Clock::time_point::max();

struct Entry {
  bool done = false;
  std::string token;  // the claim's, while not done
  Clock::time_point expires = kNever;
  bool live(Clock::time_point now) const { return expires > now; }
};
}  // namespace

class MemoryStore::State {
 public:
  explicit State(Options o) : options(o) {}

  Options options;
  mutable std::mutex mutex;
  std::unordered_map<std::string, Entry> entries;
  // Every expiry set, in the order set: the clean-up reads from the front.
  // An entry changed since is recognised by its expiry no longer matching.
  std::deque<std::pair<Clock::time_point, std::string>> expiries;
  std::size_t writes = 0;

  Clock::time_point done_expiry(Clock::time_point now) const {
    return options.ttl.count() > 0 ? now + options.ttl : kNever;
  }

  void set(std::string_view id, Entry entry) {
    if (entry.expires != kNever) expiries.emplace_back(entry.expires, std::string(id));
    auto it = entries.find(std::string(id));
    if (it == entries.end()) {
      entries.emplace(std::string(id), std::move(entry));
    } else {
      it->second = std::move(entry);
    }
    if (options.cleanup_batch > 0 && ++writes % options.cleanup_batch == 0) purge(Clock::now(), options.cleanup_batch);
  }

  std::size_t purge(Clock::time_point now, std::size_t max) {
    std::size_t removed = 0;
    std::size_t looked = 0;
    while (!expiries.empty() && looked < max && expiries.front().first <= now) {
      auto [when, id] = std::move(expiries.front());
      expiries.pop_front();
      ++looked;
      auto it = entries.find(id);
      if (it != entries.end() && it->second.expires == when) {
        entries.erase(it);
        ++removed;
      }
    }
    return removed;
  }
};

MemoryStore::MemoryStore() : MemoryStore(Options{}) {}
MemoryStore::MemoryStore(Options options) : state_(std::make_unique<State>(options)) {}
MemoryStore::~MemoryStore() = default;

Result<bool> MemoryStore::seen(std::string_view id) {
  std::lock_guard lock(state_->mutex);
  auto it = state_->entries.find(std::string(id));
  return it != state_->entries.end() && it->second.done && it->second.live(Clock::now());
}

Result<void> MemoryStore::remember(std::string_view id) {
  std::lock_guard lock(state_->mutex);
  state_->set(id, Entry{true, {}, state_->done_expiry(Clock::now())});
  return {};
}

Result<void> MemoryStore::forget(std::string_view id) {
  std::lock_guard lock(state_->mutex);
  state_->entries.erase(std::string(id));
  return {};
}

Result<Claim> MemoryStore::claim(std::string_view id, std::chrono::milliseconds lease) {
  const auto now = Clock::now();
  std::lock_guard lock(state_->mutex);
  auto it = state_->entries.find(std::string(id));
  if (it != state_->entries.end() && it->second.live(now)) {
    if (it->second.done) return Claim{ClaimState::done, {}, {}};
    return Claim{
        ClaimState::in_flight, {}, std::chrono::duration_cast<std::chrono::milliseconds>(it->second.expires - now)};
  }
  Claim claim{ClaimState::acquired, uuid_v4(), {}};
  state_->set(id, Entry{false, claim.token, now + lease});
  return claim;
}

Result<bool> MemoryStore::renew(std::string_view id, std::string_view token, std::chrono::milliseconds lease) {
  const auto now = Clock::now();
  std::lock_guard lock(state_->mutex);
  auto it = state_->entries.find(std::string(id));
  if (it == state_->entries.end() || it->second.done || it->second.token != token || !it->second.live(now)) {
    return false;
  }
  state_->set(id, Entry{false, std::string(token), now + lease});
  return true;
}

Result<void> MemoryStore::complete(std::string_view id, std::string_view /*token*/) { return remember(id); }

Result<void> MemoryStore::abandon(std::string_view id, std::string_view token) {
  std::lock_guard lock(state_->mutex);
  auto it = state_->entries.find(std::string(id));
  if (it != state_->entries.end() && !it->second.done && it->second.token == token) state_->entries.erase(it);
  return {};
}

Result<std::size_t> MemoryStore::purge_expired(std::size_t max) {
  std::lock_guard lock(state_->mutex);
  return state_->purge(Clock::now(), max);
}

std::size_t MemoryStore::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->entries.size();
}

}  // namespace babelqueue::idempotency
