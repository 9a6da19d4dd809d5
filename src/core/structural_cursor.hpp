// SPDX-License-Identifier: Apache-2.0
// Internal: simdjson's tape (the DOM parser's output: one 64-bit word a
// value, its type in the top byte, strings in a side buffer; simdjson's
// doc/tape.md), and a cursor over the structural indexes the parser leaves
// behind (where each token of the text starts: brackets, ':', ',', strings,
// numbers and literals), used next to the DOM tree to find the bytes of the
// values the tree describes. Only for a text the parser accepted: the cursor
// trusts its structure.
#pragma once

#include "json_walk.hpp"

#include <simdjson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace babelqueue::detail {

// The parsed document as the DOM parser left it.
class Tape {
 public:
  explicit Tape(const simdjson::dom::document& doc) noexcept : words_(doc.tape.get()), strings_(doc.string_buf.get()) {}

  char type(std::size_t i) const noexcept { return static_cast<char>(words_[i] >> 56U); }
  // The text of the string (or key) at i, unescaped.
  std::string_view string(std::size_t i) const noexcept {
    const std::uint8_t* at = strings_ + (words_[i] & kPayload);
    std::uint32_t size = 0;
    std::memcpy(&size, at, sizeof size);
    return {reinterpret_cast<const char*>(at + sizeof size), size};
  }
  // The int64 at i, when the value there is one (the parser stores an
  // integer token that fits int64, and only such a token, as one).
  std::optional<std::int64_t> int64(std::size_t i) const noexcept {
    if (type(i) != 'l') return std::nullopt;
    return number<std::int64_t>(i);
  }
  // The number stored after the word at i ('u': uint64, 'd': double).
  template <class T>
  T number(std::size_t i) const noexcept {
    T value{};
    std::memcpy(&value, &words_[i + 1], sizeof value);
    return value;
  }
  // The index of the value after the one at i.
  std::size_t after(std::size_t i) const noexcept {
    switch (type(i)) {
      case '{':
      case '[': return static_cast<std::uint32_t>(words_[i]);  // one past its closing word
      case 'l':
      case 'u':
      case 'd': return i + 2;
      default: return i + 1;
    }
  }

 private:
  static constexpr std::uint64_t kPayload = (std::uint64_t{1} << 56U) - 1;
  const std::uint64_t* words_;
  const std::uint8_t* strings_;
};

class StructuralCursor {
 public:
  // At the first token of the text the parser last accepted.
  StructuralCursor(const char* text, const simdjson::dom::parser& parser) noexcept
      : base_(text), at_(parser.implementation->structural_indexes.get()) {}

  const char* base() const noexcept { return base_; }
  // Where the current token starts, and its first byte.
  const char* here() const noexcept { return base_ + *at_; }
  char byte() const noexcept { return *here(); }
  void advance(std::size_t tokens = 1) noexcept { at_ += tokens; }
  // Steps over a ',' between members or elements.
  void skip_comma() noexcept {
    if (byte() == ',') ++at_;
  }

  // The scalar token at the cursor, without the white space after it; the
  // cursor moves past it.
  std::string_view scalar() noexcept {
    const char* begin = here();
    ++at_;
    return {begin, static_cast<std::size_t>(trim_end(begin, here()) - begin)};
  }

  // The key token at the cursor (quotes included); the cursor moves past it
  // and the ':' after it, to the value.
  std::string_view key() noexcept {
    const char* begin = here();
    const char* colon = base_ + at_[1];
    at_ += 2;
    return {begin, static_cast<std::size_t>(trim_end(begin, colon) - begin)};
  }

  // The array or object at the cursor, brackets included; the cursor moves
  // past it. deepest: how many levels it nests (1 for [] or [1]).
  std::string_view container(std::size_t& deepest) noexcept {
    const char* begin = here();
    int level = 0;
    int most = 0;
    for (;; ++at_) {
      level += kNesting[static_cast<unsigned char>(byte())];
      most = level > most ? level : most;
      if (level == 0) break;
    }
    ++at_;
    deepest = static_cast<std::size_t>(most);
    return {begin, static_cast<std::size_t>(base_ + at_[-1] + 1 - begin)};
  }

 private:
  // +1 for a byte that opens a container, -1 for one that closes it.
  static constexpr std::array<std::int8_t, 256> kNesting = [] {
    std::array<std::int8_t, 256> t{};
    t['{'] = 1;
    t['['] = 1;
    t['}'] = -1;
    t[']'] = -1;
    return t;
  }();

  static const char* trim_end(const char* begin, const char* end) noexcept {
    while (end > begin && is_json_space(end[-1])) --end;
    return end;
  }

  const char* base_;
  const std::uint32_t* at_;
};

}  // namespace babelqueue::detail
