// SPDX-License-Identifier: Apache-2.0
// MemoryStore: an idempotency store in the process's memory — for tests,
// for one-process consumers, and as the model the other stores follow. Lost
// when the process exits; not shared between processes.
#pragma once

#include <babelqueue/idempotency/store.hpp>

#include <chrono>
#include <cstddef>
#include <memory>

namespace babelqueue::idempotency {

/// An idempotency store in the process's memory (this header's opening comment
/// says for what).
class MemoryStore final : public Store {
 public:
  /// How long ids are kept and how they are cleaned up.
  struct Options {
    /// How long a remembered id is kept; zero = for ever.
    std::chrono::milliseconds ttl{0};
    /// Every this many writes, at most this many expired entries are removed
    /// (the clean-up is bounded, so no call pays for a large backlog).
    std::size_t cleanup_batch = 256;
  };

  /// An empty store, with the default options or these.
  ///@{
  MemoryStore();
  explicit MemoryStore(Options options);
  ///@}
  ~MemoryStore() override;  ///< forgets everything

  Result<bool> seen(std::string_view id) override;
  Result<void> remember(std::string_view id) override;
  Result<void> forget(std::string_view id) override;
  Result<Claim> claim(std::string_view id, std::chrono::milliseconds lease) override;
  Result<bool> renew(std::string_view id, std::string_view token, std::chrono::milliseconds lease) override;
  Result<void> complete(std::string_view id, std::string_view token) override;
  Result<void> abandon(std::string_view id, std::string_view token) override;
  Result<std::size_t> purge_expired(std::size_t max) override;

  /// Entries held (remembered and claimed, expired ones not yet removed).
  std::size_t size() const;

 private:
  class State;
  std::unique_ptr<State> state_;
};

}  // namespace babelqueue::idempotency
