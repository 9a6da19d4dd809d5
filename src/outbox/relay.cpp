// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/outbox/relay.hpp>

#include <algorithm>
#include <thread>

namespace babelqueue::outbox {

bool valid_table_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 63) return false;
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!letter(name.front())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

Result<void> Store::wait_for_rows(std::chrono::milliseconds timeout) {
  std::this_thread::sleep_for(timeout);
  return {};
}

Relay::Relay(Transport& transport, Store& store, RelayOptions options)
    : transport_(transport), store_(store), options_(options) {
  options_.batch_size = std::max<std::size_t>(options_.batch_size, 1);
}

Result<RelayResult> Relay::flush() {
  auto rows = store_.claim(options_.batch_size, options_.lease);
  if (!rows) return unexpected(rows.error());
  RelayResult result;
  std::vector<std::int64_t> confirmed;
  confirmed.reserve(rows->size());
  for (const Record& row : *rows) {
    // The stored bytes, verbatim: the transport reads the contract fields
    // from them itself.
    auto sent = transport_.publish(row.queue, row.body);
    if (sent) {
      confirmed.push_back(row.id);
      continue;
    }
    ++result.failed;
    const auto wait = std::min(options_.backoff_step * (row.attempts + 1), options_.backoff_cap);
    if (auto marked = store_.mark_failed(row.id, sent.error().message(), wait); !marked) {
      // Keep what was confirmed: marking it saves a republish.
      if (!confirmed.empty()) (void)store_.mark_published(confirmed);
      return unexpected(marked.error());
    }
  }
  if (!confirmed.empty()) {
    if (auto marked = store_.mark_published(confirmed); !marked) return unexpected(marked.error());
  }
  result.published = confirmed.size();
  return result;
}

Result<RelayResult> Relay::drain(std::size_t max_passes) {
  RelayResult total;
  for (std::size_t pass = 0; pass < max_passes; ++pass) {
    auto result = flush();
    if (!result) return unexpected(result.error());
    total += *result;
    if (result->published == 0 && result->failed == 0) break;
    // A pass of failures only: the rows wait for their backoff; stop here
    // rather than spin on them.
    if (result->published == 0) break;
  }
  return total;
}

Result<RelayResult> Relay::run(const std::atomic<bool>& stop,
                               const std::function<void(const RelayResult&, const ErrorInfo*)>& on_pass) {
  RelayResult total;
  while (!stop.load()) {
    auto result = flush();
    if (!result) {
      if (on_pass) on_pass(RelayResult{}, &result.error());
      std::this_thread::sleep_for(options_.idle_wait);
      continue;
    }
    total += *result;
    if (on_pass) on_pass(*result, nullptr);
    if (result->published == 0 && !stop.load()) {
      // Nothing went out: wait for a new row (or a backoff to end).
      if (auto waited = store_.wait_for_rows(options_.idle_wait); !waited && on_pass) {
        on_pass(RelayResult{}, &waited.error());
      }
    }
  }
  return total;
}

}  // namespace babelqueue::outbox
