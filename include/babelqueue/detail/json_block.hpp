// SPDX-License-Identifier: Apache-2.0
// The test at the heart of the canonical string writer (SPEC §3): whether the
// bytes of a string, a block of 16 at a time, need attention (an escape or a
// UTF-8 check) or may be copied as they are. The library's writer
// (src/core/json_out.hpp) and the DataWriter calls inlined into a typed
// message's code both use it, so a string is judged by one test whichever of
// them writes it. Not part of the stable API.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace babelqueue::detail {

// Strings are scanned and copied this many bytes at a time.
inline constexpr std::size_t kBlock = 16;
// A string token needs its bytes, two quotes, and room for the last block
// store, which may write up to a block past the bytes it keeps.
inline constexpr std::size_t kStringSlack = 2 + kBlock;

// Whether one byte needs attention: a control character, '"' or '\\' to
// escape, or a non-ASCII byte whose UTF-8 must be checked. The test of
// attention_mask() below on a single byte, for the bytes of a string literal
// the compiler judges while it compiles.
constexpr bool needs_attention(char c) noexcept {
  const auto b = static_cast<unsigned char>(c);
  return b < 0x20U || b >= 0x80U || b == '"' || b == '\\';
}

#if defined(__SSE2__)
// Whether the 16 bytes from p lie within one 4 KiB page. Memory is mapped
// and protected a page at a time, so such a block can be loaded even when
// only its first bytes belong to the string: a string shorter than a block
// (most keys and many values) is then scanned and copied in one step, the
// bytes past its end ignored. This is how the C library's string functions
// read; a sanitizer that checks each byte would see the read past the end,
// so the one function that does it is not instrumented.
inline bool within_page(const char* p) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & 4095U) <= 4096U - kBlock;
}

// The 16 bytes at p (within_page(p)); the bytes past the string are never
// used. The empty asm hides which object p points into: inlined where a
// string literal is written, the compiler would otherwise see a load past
// the literal's end and warn of it (-Warray-bounds) or reason from it.
__attribute__((no_sanitize("address", "thread"))) inline __m128i load_block_in_page(const char* p) noexcept {
  asm("" : "+r"(p));
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Bit i is set when byte i of the block needs attention: a control
// character, '"' or '\\' to escape, or a non-ASCII byte whose UTF-8 must be
// checked. A signed comparison: bytes >= 0x80 are negative, so one test finds
// both control characters and non-ASCII bytes.
inline std::uint32_t attention_mask(__m128i bytes) noexcept {
  const __m128i low_or_high = _mm_cmplt_epi8(bytes, _mm_set1_epi8(0x20));
  const __m128i quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'));
  return static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_or_si128(low_or_high, _mm_or_si128(quote, backslash))));
}
#endif

}  // namespace babelqueue::detail
