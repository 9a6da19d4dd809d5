// SPDX-License-Identifier: Apache-2.0
// JsonOut: the canonical JSON writer (SPEC §3) behind write_json() and
// Envelope::make(). It writes through a raw pointer into a buffer it grows
// ahead of each token, so a token costs one capacity check instead of one per
// byte or per append, and strings are scanned and copied 16 bytes at a time.
#pragma once

#include <babelqueue/detail/json_block.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/value.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace babelqueue::detail {

/// Why a write stopped; the callers turn it into an error (one Result per
/// level of the recursion would cost more than writing the value).
enum class WriteStatus { ok, invalid_utf8, not_finite };

/// The error a failed write reports (status is not ok), in the same words
/// wherever JSON is written.
ErrorInfo write_error(WriteStatus status);

class JsonOut {
 public:
  // Writes into buffer from offset start on. The buffer's size is used as its
  // capacity: bytes past size() are scratch until finish() trims them, so a
  // buffer kept between calls is grown (and zero-filled) only once.
  JsonOut(std::string& buffer, std::size_t start) : buffer_(buffer) {
    if (buffer_.size() < start) buffer_.resize(start);
    cur_ = buffer_.data() + start;
    limit_ = buffer_.data() + buffer_.size();
  }

  // The bytes written so far, from the start of the buffer.
  std::size_t size() const noexcept { return static_cast<std::size_t>(cur_ - buffer_.data()); }
  const char* data() const noexcept { return buffer_.data(); }
  // Cuts the buffer at size().
  void finish() { buffer_.resize(size()); }
  // Forgets everything written after position (a failed write).
  void truncate(std::size_t position) noexcept { cur_ = buffer_.data() + position; }

  // The write position and the buffer's bounds, for a writer that writes
  // through pointers of its own (DataWriter): it takes them, writes, and
  // hands the position back with seek() before this writer goes on.
  char* begin() noexcept { return buffer_.data(); }
  char* position() const noexcept { return cur_; }
  char* end() const noexcept { return limit_; }
  void seek(char* position) noexcept { cur_ = position; }
  // At least n writable bytes at the position (the buffer may move).
  void reserve(std::size_t n) { room(n); }

  void literal(std::string_view text) {
    char* p = room(text.size());
    std::memcpy(p, text.data(), text.size());
    cur_ = p + text.size();
  }
  void put(char c) {
    char* p = room(1);
    *p = c;
    cur_ = p + 1;
  }
  // An integer; one or two digits (counts, quantities, small indexes: most
  // integers of a payload) are written here, without a call.
  void integer(std::int64_t value) {
    const auto bits = static_cast<std::uint64_t>(value);
    const std::uint64_t magnitude = value < 0 ? 0 - bits : bits;
    if (magnitude >= 100) return integer_slow(value);
    char* p = room(3);
    *p = '-';
    p += value < 0 ? 1 : 0;
    if (magnitude >= 10) *p++ = static_cast<char>('0' + magnitude / 10);
    *p = static_cast<char>('0' + magnitude % 10);
    cur_ = p + 1;
  }
  void integer(std::uint64_t value);

  WriteStatus string(std::string_view text) { return quoted(text, 0, 0); }
  // An object member's key and its ':', after a ',' unless it is the first.
  WriteStatus key(std::string_view text, bool first) { return quoted(text, first ? 0 : ',', ':'); }
  WriteStatus number(double value);
  WriteStatus value(const Value& value);

 private:
  // A pointer to at least n writable bytes at the current position.
  char* room(std::size_t n) {
    if (static_cast<std::size_t>(limit_ - cur_) < n) grow(n);
    return cur_;
  }
  void grow(std::size_t n);
  // The string token, with the byte lead before it and trail after it when
  // they are not 0 (an object member's ',' and ':'). Inline for the common
  // case, a string shorter than a block that needs no escape: one load, one
  // test and one store (keys and most values of a payload).
  WriteStatus quoted(std::string_view text, char lead, char trail) {
#if defined(__SSE2__)
    const std::size_t n = text.size();
    if (n < kBlock && within_page(text.data())) {
      const __m128i block = load_block_in_page(text.data());
      if ((attention_mask(block) & ((1U << n) - 1U)) == 0) {
        char* dst = room(n + kStringSlack + 2);
        *dst = lead;
        dst += lead != 0 ? 1 : 0;
        *dst++ = '"';
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), block);
        dst += n;
        *dst++ = '"';
        *dst = trail;
        cur_ = dst + (trail != 0 ? 1 : 0);
        return WriteStatus::ok;
      }
    }
#endif
    return quoted_slow(text, lead, trail);
  }
  WriteStatus quoted_slow(std::string_view text, char lead, char trail);
  void integer_slow(std::int64_t value);

  // The members of an array or object are written through a position the
  // loop keeps in a register, passed to and returned by these: a store
  // through a char pointer may alias any object, so cur_ would be stored and
  // loaded again around every byte written, and each token would wait for
  // the previous one's store of it. cur_ is synchronised only around the
  // out-of-line paths. They return nullptr after a failure, its reason in
  // failure_.
  char* room_at(char* p, std::size_t n) {
    if (static_cast<std::size_t>(limit_ - p) < n) {
      cur_ = p;
      grow(n);
      p = cur_;
    }
    return p;
  }
  // A value inside a container, after the byte lead when it is not 0.
  char* element_at(char* p, const Value& value, char lead);
  // A whole array or object from p (the recursion of nested containers).
  char* array_at(char* p, const Array& array);
  char* object_at(char* p, const Object& object);
  // A string token between lead and trail (each skipped when 0), as quoted().
  char* quoted_at(char* p, std::string_view text, char lead, char trail) {
#if defined(__SSE2__)
    const std::size_t n = text.size();
    if (n < kBlock && within_page(text.data())) {
      const __m128i block = load_block_in_page(text.data());
      if ((attention_mask(block) & ((1U << n) - 1U)) == 0) {
        p = room_at(p, n + kStringSlack + 2);
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
    cur_ = p;
    return out_of_line(quoted_slow(text, lead, trail));
  }
  // After an out-of-line write that moved cur_: the position, or nullptr.
  char* out_of_line(WriteStatus status) {
    if (status == WriteStatus::ok) return cur_;
    failure_ = status;
    return nullptr;
  }
  // After a container written from a position: cur_ moved to its end, or
  // the failure's reason.
  WriteStatus out_of_line(char* end) {
    if (end == nullptr) return failure_;
    cur_ = end;
    return WriteStatus::ok;
  }

  std::string& buffer_;
  char* cur_;    // the next byte to write
  char* limit_;  // the end of the buffer
  WriteStatus failure_ = WriteStatus::ok;
};

}  // namespace babelqueue::detail
