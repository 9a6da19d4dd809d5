// SPDX-License-Identifier: Apache-2.0
// Internal: what both envelope decoders (the tape walk of
// envelope_decode_dom.cpp and the On-Demand pass of envelope_decode.cpp) know
// about the keys of the frame and of meta.
#pragma once

#include <babelqueue/detail/envelope_layout.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::detail {

inline bool is_forbidden_top(std::string_view key) noexcept { return key == "timestamp"; }
inline bool is_forbidden_meta(std::string_view key) noexcept {
  return key == "max_retries" || key == "attempts" || key == "source" || key == "ts";
}

// "/meta/ts" for ("/meta/", "ts"). Built by append: GCC 12 misreports
// `const char* + std::string` with -Wrestrict (GCC bug 105329).
inline std::string json_pointer(std::string_view parent, std::string_view key) {
  std::string pointer(parent);
  pointer.append(key);
  return pointer;
}

// The index of key among names, or -1.
template <std::size_t N>
int index_of(const std::array<std::string_view, N>& names, std::string_view key) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == key) return static_cast<int>(i);
  }
  return -1;
}

// Whether key, of the length of name, is name: a comparison of known length
// the compiler unrolls.
template <std::size_t N>
bool same_as(std::string_view key, const char (&name)[N]) noexcept {
  return std::memcmp(key.data(), name, N - 1) == 0;
}

// index_of for the frame's and meta's names, one length check and one
// comparison a key.
inline int top_key_index(std::string_view key) noexcept {
  switch (key.size()) {
    case 3:
      if (same_as(key, "job")) return static_cast<int>(TopKey::job);
      if (same_as(key, "urn")) return static_cast<int>(TopKey::urn);
      return -1;
    case 4:
      if (same_as(key, "data")) return static_cast<int>(TopKey::data);
      if (same_as(key, "meta")) return static_cast<int>(TopKey::meta);
      return -1;
    case 8:
      if (same_as(key, "trace_id")) return static_cast<int>(TopKey::trace_id);
      if (same_as(key, "attempts")) return static_cast<int>(TopKey::attempts);
      return -1;
    case 11: return same_as(key, "dead_letter") ? static_cast<int>(TopKey::dead_letter) : -1;
    default: return -1;
  }
}

inline int meta_key_index(std::string_view key) noexcept {
  switch (key.size()) {
    case 2: return same_as(key, "id") ? static_cast<int>(MetaKey::id) : -1;
    case 4: return same_as(key, "lang") ? static_cast<int>(MetaKey::lang) : -1;
    case 5: return same_as(key, "queue") ? static_cast<int>(MetaKey::queue) : -1;
    case 10: return same_as(key, "created_at") ? static_cast<int>(MetaKey::created_at) : -1;
    case 14: return same_as(key, "schema_version") ? static_cast<int>(MetaKey::schema_version) : -1;
    default: return -1;
  }
}

// The keys of one object seen so far, to reject duplicates. Known keys are
// bits of a mask (most envelopes have nothing else); other keys are compared
// against each other in an inline array that spills into a vector only for
// unusually wide objects.
class KeySet {
 public:
  // False when the key was already present. known: its index among the known
  // keys of the object, or -1.
  bool insert(std::string_view key, int known) {
    if (known >= 0) {
      const std::uint32_t bit = 1U << static_cast<unsigned>(known);
      if ((known_ & bit) != 0) return false;
      known_ |= bit;
      return true;
    }
    for (std::size_t i = 0; i < inline_count_; ++i) {
      if (std::string_view(inline_[i].data, inline_[i].size) == key) return false;
    }
    for (const auto& k : spill_) {
      if (k == key) return false;
    }
    if (inline_count_ < inline_.size()) {
      inline_[inline_count_++] = Key{key.data(), key.size()};
    } else {
      spill_.push_back(key);
    }
    return true;
  }

 private:
  std::uint32_t known_ = 0;
  // Trivial, so that the array is not filled when a KeySet is made: only the
  // first inline_count_ are read, and most objects never write one.
  struct Key {
    const char* data;
    std::size_t size;
  };
  std::array<Key, 8> inline_;
  std::size_t inline_count_ = 0;
  std::vector<std::string_view> spill_;
};

}  // namespace babelqueue::detail
