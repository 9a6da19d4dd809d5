// SPDX-License-Identifier: Apache-2.0
// Internal: what both envelope decoders (the walk over structural indexes of
// envelope_decode_indexes.cpp and the On-Demand pass of envelope_decode.cpp) know
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

// a[0..n) == b[0..n) for sizeof(Word) <= n <= 2 * sizeof(Word): its first
// and last Word.
template <class Word>
bool equal_ends(const char* a, const char* b, std::size_t n) noexcept {
  Word a0{}, b0{}, a1{}, b1{};
  std::memcpy(&a0, a, sizeof(Word));
  std::memcpy(&b0, b, sizeof(Word));
  std::memcpy(&a1, a + n - sizeof(Word), sizeof(Word));
  std::memcpy(&b1, b + n - sizeof(Word), sizeof(Word));
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

// a[0..n) == b[0..n) for n <= 16, in a few loads and no call: the keys
// of the frame and meta are that short.
inline bool equal_short(const char* a, const char* b, std::size_t n) noexcept {
  if (n >= 8) return equal_ends<std::uint64_t>(a, b, n);
  if (n >= 4) return equal_ends<std::uint32_t>(a, b, n);
  // n <= 3: the first, middle and last byte are all of them.
  return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
}

// Finds known keys that arrive in canonical order (what every SDK writes)
// with one comparison each: the key is first compared with the one expected
// after the previous known key, then looked up among all of them.
template <std::size_t N>
class KeyLookup {
 public:
  // expect: the index of the key expected first (the first name unless the
  // object's first members were read another way).
  KeyLookup(const std::array<std::string_view, N>& names, const std::array<int, N>& next, int expect = 0) noexcept
      : names_(names), next_(next), expect_(expect) {}

  // The index of key among the names, or -1.
  int find(std::string_view key) noexcept {
    if (expect_ >= 0) {
      const std::string_view name = names_[static_cast<std::size_t>(expect_)];
      if (key.size() == name.size() && equal_short(key.data(), name.data(), name.size())) return found(expect_);
    }
    for (std::size_t i = 0; i < N; ++i) {
      if (names_[i] == key) return found(static_cast<int>(i));
    }
    return -1;
  }

 private:
  int found(int index) noexcept {
    expect_ = next_[static_cast<std::size_t>(index)];
    return index;
  }

  const std::array<std::string_view, N>& names_;
  const std::array<int, N>& next_;
  int expect_;
};

// The key expected after each known key of the frame (job or its urn alias,
// trace_id, data, meta, attempts, dead_letter) and of meta (id, queue, lang,
// schema_version, created_at); -1 after the last.
inline constexpr std::array<int, kTopKeyNames.size()> kTopKeyNext{2, 2, 3, 4, 5, 6, -1};
inline constexpr std::array<int, kMetaKeyNames.size()> kMetaKeyNext{1, 2, 3, 4, -1};

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
