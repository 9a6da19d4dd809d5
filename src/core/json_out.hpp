// SPDX-License-Identifier: Apache-2.0
// JsonOut: the canonical JSON writer (SPEC §3) behind write_json() and
// Envelope::make(). It writes through a raw pointer into a buffer it grows
// ahead of each token, so a token costs one capacity check instead of one per
// byte or per append, and strings are scanned and copied 16 bytes at a time.
#pragma once

#include <babelqueue/value.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace babelqueue::detail {

/// Why a write stopped; the callers turn it into an error (one Result per
/// level of the recursion would cost more than writing the value).
enum class WriteStatus { ok, invalid_utf8, not_finite };

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
  void integer(std::int64_t value);
  void integer(std::uint64_t value);

  WriteStatus string(std::string_view text) { return quoted(text, 0, 0); }
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
  // they are not 0 (an object member's ',' and ':').
  WriteStatus quoted(std::string_view text, char lead, char trail);

  std::string& buffer_;
  char* cur_;    // the next byte to write
  char* limit_;  // the end of the buffer
};

}  // namespace babelqueue::detail
