// SPDX-License-Identifier: Apache-2.0
// The inline part of DataWriter (data_writer.hpp, which includes this file at
// its end; not meant to be included on its own). A payload's write_data
// makes a call per token: as calls into the library, each loaded and stored
// the write position and the state, and cost more than the token's bytes.
// Here they compile into the payload's own code; what is rare (a mistake, a
// grown buffer or stack, a string that needs escapes or a UTF-8 check, a
// double, an integer of three digits or more, a key whose bit another key of
// its object took) is a call into src/core/data_writer.cpp. Not part of the
// stable API.
#pragma once

#include <babelqueue/data_writer.hpp>
#include <babelqueue/detail/json_block.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace babelqueue {

// Each call below is always inlined: left to its own judgement, the compiler
// kept the larger ones (a key, opening a container) as calls, the cost this
// file is here to remove.

namespace detail {

// Mixes a key's size and first and last bytes into 64 bits, the top ones the
// best mixed: its bit in the open object's mask. Of a key written as a
// literal, the compiler works it out at compile time.
constexpr std::uint64_t key_fingerprint(std::string_view name) noexcept {
  const std::uint64_t ends = name.empty() ? 0
                                          : (std::uint64_t{static_cast<unsigned char>(name.front())} << 8U) |
                                                static_cast<unsigned char>(name.back());
  return ((std::uint64_t{name.size()} << 16U) | ends) * 0x9E3779B97F4A7C15ULL;
}

}  // namespace detail

[[gnu::always_inline]] inline char* DataWriter::room_at(char* p, std::size_t n) {
  if (static_cast<std::size_t>(limit_ - p) < n) [[unlikely]] {
    return grow_at(p, n);
  }
  return p;
}

[[gnu::always_inline]] inline int DataWriter::before_value(std::string_view kind) {
  switch (state_) {
    case State::value: state_ = State::next_key; return 0;
    case State::first_item: state_ = State::next_item; return 0;
    case State::next_item: return ',';
    default: misplaced_value(kind); return -1;
  }
}

// Inline for the common string, shorter than a block and with nothing to
// escape or check: one load, one test and one store (keys and most values of
// a payload), as the library's writer does it (json_out.hpp).
[[gnu::always_inline]] inline char* DataWriter::string_at(char* p, std::string_view text, char lead, char trail) {
  const std::size_t n = text.size();
#if defined(__GNUC__)
  // A string literal (most keys): its size is known where the call is
  // inlined, and so are its bytes, so the compiler settles the test below
  // and leaves only the stores of the token.
  if (__builtin_constant_p(n) && n < detail::kBlock) {
    bool plain = true;
    for (std::size_t i = 0; i < n; ++i) plain = plain && !detail::needs_attention(text[i]);
    if (plain) {
      p = room_at(p, n + 4);
      *p = lead;
      p += lead != 0 ? 1 : 0;
      *p++ = '"';
      std::memcpy(p, text.data(), n);
      p += n;
      *p++ = '"';
      *p = trail;
      return p + (trail != 0 ? 1 : 0);
    }
  }
#endif
#if defined(__SSE2__)
  if (n < detail::kBlock && detail::within_page(text.data())) {
    const __m128i block = detail::load_block_in_page(text.data());
    if ((detail::attention_mask(block) & ((1U << n) - 1U)) == 0) {
      p = room_at(p, n + detail::kStringSlack + 2);
      *p = lead;
      p += lead != 0 ? 1 : 0;
      *p++ = '"';
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), block);
      p += n;
      *p++ = '"';
      *p = trail;
      return p + (trail != 0 ? 1 : 0);
    }
  }
#endif
  return string_slow_at(p, text, lead, trail);
}

// One or two digits (counts, quantities, small indexes: most integers of a
// payload) are written here.
[[gnu::always_inline]] inline char* DataWriter::integer_at(char* p, std::int64_t number, char lead) {
  const auto bits = static_cast<std::uint64_t>(number);
  const std::uint64_t magnitude = number < 0 ? 0 - bits : bits;
  if (magnitude >= 100) return integer_slow_at(p, number, lead);
  p = room_at(p, 4);
  *p = lead;
  p += lead != 0 ? 1 : 0;
  *p = '-';
  p += number < 0 ? 1 : 0;
  if (magnitude >= 10) *p++ = static_cast<char>('0' + magnitude / 10);
  *p = static_cast<char>('0' + magnitude % 10);
  return p + 1;
}

[[gnu::always_inline]] inline char* DataWriter::unsigned_at(char* p, std::uint64_t number, char lead) {
  if (number >= 100) return unsigned_slow_at(p, number, lead);
  return integer_at(p, static_cast<std::int64_t>(number), lead);
}

[[gnu::always_inline]] inline char* DataWriter::literal_at(char* p, std::string_view text, char lead) {
  p = room_at(p, text.size() + 1);
  *p = lead;
  p += lead != 0 ? 1 : 0;
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

[[gnu::always_inline]] inline char* DataWriter::key_at(char* p, std::string_view name) {
  const State state = state_;
  if (state != State::first_key && state != State::next_key) [[unlikely]] {
    misplaced_key(name);
    return nullptr;
  }
  const char lead = state == State::next_key ? ',' : 0;
  // The token starts after the ',' and ends before the ':'; offsets, which
  // a grown buffer keeps.
  const auto begin = static_cast<std::uint32_t>(p - base_) + (lead != 0 ? 1U : 0U);
  p = string_at(p, name, lead, ':');
  if (p == nullptr) return nullptr;
  const KeyToken token{begin, static_cast<std::uint32_t>(p - base_) - 1U - begin};
  // A key whose bit (of its size and first and last bytes) no earlier key of
  // the object set is new, without a look at the others; one whose bit is
  // taken is compared with them, out of line.
  const std::uint64_t bit = std::uint64_t{1} << (detail::key_fingerprint(name) >> 58U);
  if ((key_bits_ & bit) != 0) {
    if (!taken_key_is_new(name, token)) return nullptr;
  } else {
    key_bits_ |= bit;
  }
  if (key_ == keys_end_) [[unlikely]] {
    grow_keys();
  }
  *key_++ = token;
  return p;
}

[[gnu::always_inline]] inline void DataWriter::push(char lead, char bracket, State after, State inside) {
  *level_++ = Level{key_bits_, first_key_, after};
  first_key_ = static_cast<std::uint32_t>(key_ - keys_);
  key_bits_ = 0;
  state_ = inside;
  char* p = room_at(cur_, 2);
  *p = lead;
  p += lead != 0 ? 1 : 0;
  *p = bracket;
  cur_ = p + 1;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::open(char bracket, State inside, std::string_view kind) {
  char lead = 0;
  State after = State::next_item;
  switch (state_) {
    case State::value: after = State::next_key; break;
    case State::first_item: break;
    case State::next_item: lead = ','; break;
    default: return open_rare(bracket, inside, kind);  // data's own object, or a mistake
  }
  if (level_ == levels_end_ && !grow_levels()) [[unlikely]] {
    return *this;
  }
  push(lead, bracket, after, inside);
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::close(char bracket, bool object) {
  const State state = state_;
  const bool open_here = object ? (state == State::first_key || state == State::next_key)
                                : (state == State::first_item || state == State::next_item);
  if (!open_here) [[unlikely]] {
    return misplaced_end(object);
  }
  const Level parent = *--level_;
  key_ = keys_ + first_key_;
  first_key_ = parent.first_key;
  key_bits_ = parent.key_bits;
  state_ = parent.state;
  char* p = room_at(cur_, 1);
  *p = bracket;
  cur_ = p + 1;
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::begin_object() { return open('{', State::first_key, "object"); }
[[gnu::always_inline]] inline DataWriter& DataWriter::end_object() { return close('}', true); }
[[gnu::always_inline]] inline DataWriter& DataWriter::begin_array() { return open('[', State::first_item, "array"); }
[[gnu::always_inline]] inline DataWriter& DataWriter::end_array() { return close(']', false); }

[[gnu::always_inline]] inline DataWriter& DataWriter::key(std::string_view name) {
  if (char* p = key_at(cur_, name)) {
    cur_ = p;
    state_ = State::value;
  }
  return *this;
}

// A member's value follows its key at once: no state to check, and one
// position from the key to the value.
[[gnu::always_inline]] inline DataWriter& DataWriter::bool_member(std::string_view name, bool flag) {
  if (char* p = key_at(cur_, name)) {
    cur_ = literal_at(p, flag ? std::string_view("true") : std::string_view("false"), 0);
    state_ = State::next_key;
  }
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::signed_member(std::string_view name, std::int64_t number) {
  if (char* p = key_at(cur_, name)) {
    cur_ = integer_at(p, number, 0);
    state_ = State::next_key;
  }
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::unsigned_member(std::string_view name, std::uint64_t number) {
  if (char* p = key_at(cur_, name)) {
    cur_ = unsigned_at(p, number, 0);
    state_ = State::next_key;
  }
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::double_member(std::string_view name, double number) {
  char* p = key_at(cur_, name);
  if (p != nullptr && (p = double_at(p, number, 0)) != nullptr) {
    cur_ = p;
    state_ = State::next_key;
  }
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::string_member(std::string_view name, std::string_view text) {
  char* p = key_at(cur_, name);
  if (p != nullptr && (p = string_at(p, text, 0, 0)) != nullptr) {
    cur_ = p;
    state_ = State::next_key;
  }
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::value(std::nullptr_t) {
  if (const int lead = before_value("null"); lead >= 0) cur_ = literal_at(cur_, "null", static_cast<char>(lead));
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::boolean(bool flag) {
  if (const int lead = before_value("bool"); lead >= 0) {
    cur_ = literal_at(cur_, flag ? std::string_view("true") : std::string_view("false"), static_cast<char>(lead));
  }
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::signed_integer(std::int64_t number) {
  if (const int lead = before_value("int64"); lead >= 0) cur_ = integer_at(cur_, number, static_cast<char>(lead));
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::unsigned_integer(std::uint64_t number) {
  if (const int lead = before_value("uint64"); lead >= 0) cur_ = unsigned_at(cur_, number, static_cast<char>(lead));
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::value(double number) {
  if (const int lead = before_value("double"); lead >= 0) {
    if (char* p = double_at(cur_, number, static_cast<char>(lead))) cur_ = p;
  }
  return *this;
}

[[gnu::always_inline]] inline DataWriter& DataWriter::value(std::string_view text) {
  if (const int lead = before_value("string"); lead >= 0) {
    if (char* p = string_at(cur_, text, static_cast<char>(lead), 0)) cur_ = p;
  }
  return *this;
}

}  // namespace babelqueue
