// SPDX-License-Identifier: Apache-2.0
// The canonical JSON writer (SPEC §3). It is our own code on purpose: no JSON
// library in reach writes the exact bytes the other SDKs of the family write
// (escape set, hex case, float layout), and those bytes are the contract.
#include "json_out.hpp"

#include <babelqueue/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <variant>

namespace babelqueue {
namespace detail {
namespace {

// For each byte: 0 = copy as is, otherwise the character after the backslash
// ('u' = \u00xx form).
constexpr std::array<char, 256> make_escape_table() {
  std::array<char, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[static_cast<std::size_t>(c)] = 'u';
  table['\b'] = 'b';
  table['\f'] = 'f';
  table['\n'] = 'n';
  table['\r'] = 'r';
  table['\t'] = 't';
  table['"'] = '"';
  table['\\'] = '\\';
  return table;
}
constexpr std::array<char, 256> kEscape = make_escape_table();

// 1 for the bytes attention_mask() flags.
constexpr std::array<bool, 256> make_attention_table() {
  std::array<bool, 256> table{};
  for (std::size_t c = 0; c < table.size(); ++c) table[c] = kEscape[c] != 0 || c >= 0x80;
  return table;
}
constexpr std::array<bool, 256> kAttention = make_attention_table();
// The byte test the inline DataWriter calls apply to string literals
// (json_block.hpp) is this table's.
constexpr bool same_as_needs_attention() {
  for (std::size_t c = 0; c < kAttention.size(); ++c) {
    if (kAttention[c] != needs_attention(static_cast<char>(c))) return false;
  }
  return true;
}
static_assert(same_as_needs_attention());

// The same test on 8 bytes at once: the high bit of each flagged byte (exact
// for the lowest flagged byte; a byte above it may be flagged falsely, which
// the callers never look at).
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
constexpr std::uint64_t has_zero(std::uint64_t x) noexcept { return (x - kOnes) & ~x & kHighs; }
constexpr std::uint64_t has_less(std::uint64_t x, std::uint64_t n) noexcept { return (x - kOnes * n) & ~x & kHighs; }
constexpr std::uint64_t word_attention(std::uint64_t w) noexcept {
  return has_less(w, 0x20) | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) | (w & kHighs);
}
static_assert(word_attention(0x6867666564636261ULL) == 0);  // "abcdefgh"
static_assert(word_attention(0x6867666564632261ULL) != 0);  // a '"'
static_assert(word_attention(0x686766656463615cULL) != 0);  // a '\\'
static_assert(word_attention(0x686766650a636261ULL) != 0);  // a '\n'
static_assert(word_attention(0x68676665c3a96261ULL) != 0);  // non-ASCII

// The longest escape (\u00xx) written for one input byte.
constexpr std::size_t kLongestEscape = 6;

// attention_mask() of the 16 bytes at block.
inline std::uint32_t attention_mask(const char* block) noexcept {
#if defined(__SSE2__)
  return detail::attention_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block)));
#else
  std::uint32_t mask = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const auto c = static_cast<unsigned char>(block[i]);
    if (c < 0x20U || c >= 0x80U || c == '"' || c == '\\') mask |= 1U << i;
  }
  return mask;
#endif
}

// The length of the well-formed UTF-8 sequence that starts at p (whose first
// byte is >= 0x80) within left bytes, or 0 when it is not one (Unicode
// table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
inline std::size_t utf8_sequence(const unsigned char* p, std::size_t left) noexcept {
  const unsigned lead = p[0];
  auto continuation = [&](std::size_t i) { return (p[i] & 0xC0U) == 0x80U; };
  if (lead < 0xC2U) return 0;
  if (lead < 0xE0U) return left >= 2 && continuation(1) ? 2 : 0;
  if (lead < 0xF0U) {
    if (left < 3 || !continuation(1) || !continuation(2)) return 0;
    if (lead == 0xE0U && p[1] < 0xA0U) return 0;   // overlong
    if (lead == 0xEDU && p[1] >= 0xA0U) return 0;  // a surrogate
    return 3;
  }
  if (lead < 0xF5U) {
    if (left < 4 || !continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xF0U && p[1] < 0x90U) return 0;   // overlong
    if (lead == 0xF4U && p[1] >= 0x90U) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

#if defined(__SSE2__)
// Checks the UTF-8 sequences that start at the non-ASCII bytes flagged in
// high (bit i for byte i of the block_size bytes at p; left bytes remain in
// the string), skipping each sequence's continuation bytes: a block of
// accented text in one loop, without a pass of the block loop per
// character. Returns the number of bytes done (the block, or more when its
// last sequence runs past it), 0 when a sequence is not well-formed.
inline std::size_t check_sequences(const char* p, std::size_t block_size, std::size_t left,
                                   std::uint32_t high) noexcept {
  auto i = static_cast<std::size_t>(std::countr_zero(high));
  for (;;) {
    const std::size_t n = utf8_sequence(reinterpret_cast<const unsigned char*>(p + i), left - i);
    if (n == 0) return 0;
    i += n;
    if (i >= block_size) return i;
    high &= ~0U << i;
    if (high == 0) return block_size;
    i = static_cast<std::size_t>(std::countr_zero(high));
  }
}

// Whether the non-ASCII bytes of a block (high, the bytes in_string) are all
// two-byte sequences that end inside it: a lead C2-DF (no overlong form)
// each followed by a continuation 80-BF and nothing else. Accented Latin,
// Greek and Cyrillic text is checked so with a few mask operations, without
// a branch per character; anything else goes to check_sequences(), which
// also takes a sequence that runs past the block.
inline bool two_byte_sequences(__m128i block, std::uint32_t high, std::uint32_t in_string) noexcept {
  // Signed bytes: 0x80-0xBF are -128..-65, 0xC2-0xDF are -62..-33.
  const __m128i leads = _mm_and_si128(_mm_cmpgt_epi8(block, _mm_set1_epi8(static_cast<char>(0xC1))),
                                      _mm_cmplt_epi8(block, _mm_set1_epi8(static_cast<char>(0xE0))));
  const __m128i continuations = _mm_cmplt_epi8(block, _mm_set1_epi8(static_cast<char>(0xC0)));
  const auto lead = static_cast<std::uint32_t>(_mm_movemask_epi8(leads)) & in_string;
  const auto continuation = static_cast<std::uint32_t>(_mm_movemask_epi8(continuations)) & in_string;
  return (lead | continuation) == high && (lead << 1U) == continuation;
}
#endif

// The 8 decimal digits of v < 10^8, zero-padded, one per byte (0-9, not yet
// ASCII), the first digit in the lowest byte. The number is split in lanes
// (two of 4 digits in 32-bit halves, then four of 2 in 16-bit quarters, then
// eight of 1 in bytes) and each lane divided by 100 or 10 with one multiply
// and shift for all lanes at once: no lane's product reaches the next one,
// and the multipliers are exact in the lanes' ranges.
constexpr std::uint64_t eight_digits(std::uint64_t v) noexcept {
  const std::uint64_t high = v / 10000;
  std::uint64_t x = high | ((v - high * 10000) << 32U);
  const std::uint64_t hundreds = ((x * 5243) >> 19U) & 0x0000007F0000007FULL;  // x / 100 for x < 43699
  x = hundreds | ((x - hundreds * 100) << 16U);
  const std::uint64_t tens = ((x * 103) >> 10U) & 0x000F000F000F000FULL;  // x / 10 for x < 1029
  return tens | ((x - tens * 10) << 8U);
}
static_assert(eight_digits(12345678) == 0x0807060504030201ULL);
static_assert(eight_digits(90000009) == 0x0900000000000009ULL);
static_assert(eight_digits(99999999) == 0x0909090909090909ULL);
static_assert(eight_digits(0) == 0);

constexpr std::uint64_t kAsciiZeros = 0x3030303030303030ULL;

// Stores the 8 bytes of v at p, its lowest byte first.
inline void store_le(char* p, std::uint64_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, sizeof v);
  } else {
    for (std::size_t i = 0; i < sizeof v; ++i) p[i] = static_cast<char>(v >> (8 * i));
  }
}

// The two ASCII digits of 0-99, the first in the lower byte.
constexpr std::array<std::uint16_t, 100> kDigitPairs = [] {
  std::array<std::uint16_t, 100> t{};
  for (unsigned i = 0; i < t.size(); ++i) t[i] = static_cast<std::uint16_t>(('0' + i / 10) | (('0' + i % 10) << 8U));
  return t;
}();

// Stores the 4 bytes of v at p, its lowest byte first.
inline void store_le32(char* p, std::uint32_t v) noexcept {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &v, sizeof v);
  } else {
    for (std::size_t i = 0; i < sizeof v; ++i) p[i] = static_cast<char>(v >> (8 * i));
  }
}

// Writes the n digits (1 <= n <= 16) of f < 10^n, zero-padded: a word (or
// two) of digits shifted so that they end where the field does, stored
// whole, the caller's end pointer cutting what lies past it (up to 8 bytes
// past the field are written). No byte is copied from memory just written,
// which would stall on store-to-load forwarding.
inline void write_padded_digits(char* p, std::uint64_t f, std::size_t n) noexcept {
  if (n <= 4) {
    // Up to 4 digits (most fractions): two pairs from a table, two loads
    // instead of the word's chain of multiplications.
    const auto high = static_cast<std::uint32_t>(f / 100);
    const std::uint32_t four =
        kDigitPairs[high] | (std::uint32_t{kDigitPairs[static_cast<std::uint32_t>(f) - high * 100]} << 16U);
    store_le32(p, four >> (8 * (4 - n)));
    return;
  }
  if (n <= 8) {
    store_le(p, (eight_digits(f) | kAsciiZeros) >> (8 * (8 - n)));
    return;
  }
  const std::uint64_t high = f / 100000000U;
  const std::uint64_t low_digits = eight_digits(f - high * 100000000U) | kAsciiZeros;
  store_le(p, (eight_digits(high) | kAsciiZeros) >> (8 * (16 - n)));
  store_le(p + n - 8, low_digits);
}

// Writes the integer part of a double's fixed form, v < 2^53: one or two
// digits (most prices and weights) without a call.
inline char* write_integer_part(char* p, std::uint64_t v) noexcept {
  if (v < 100) {
    // Both digits from the table, the first dropped below 10: no branch on
    // the length.
    const auto pair = static_cast<std::uint16_t>(kDigitPairs[v] >> (v < 10 ? 8U : 0U));
    std::memcpy(p, &pair, sizeof pair);
    return p + (v < 10 ? 1 : 2);
  }
  return std::to_chars(p, p + 20, v).ptr;
}

// Powers of ten a double holds exactly.
constexpr std::array<double, 18> kPowersOfTen = {1e0, 1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
                                                 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17};
// base^0 .. base^(N-1), for bases and counts whose last power fits 64 bits.
template <std::size_t N>
constexpr std::array<std::uint64_t, N> powers_of(std::uint64_t base) {
  std::array<std::uint64_t, N> t{};
  std::uint64_t v = 1;
  for (auto& p : t) {
    p = v;
    v *= base;
  }
  return t;
}
// The same powers as integers: 10^17 still fits 64 bits.
constexpr auto kIntegerPowersOfTen = powers_of<18>(10);

__extension__ using Uint128 = unsigned __int128;  // GCC and Clang; __extension__ for -Wpedantic

// Whether the decimal n / 10^k reads back as x, in integers: whether x is
// the double nearest to it (ties to an even significand), as the division
// n / 10^k would say when rounded, without a division on the path of every
// double. x = m * 2^e with m of 53 bits, 1e-4 <= x < 2^50 (so -66 <= e <=
// -3), n < 2^50, k <= 17: scaled by 4 * 10^k * 2^-e, x is B = 4 * m * 10^k
// and the decimal is A = 4 * n * 2^-e, both below 2^120, and the doubles
// next to x are 4 * 10^k away (2 * 10^k below a power of two, whose
// neighbour below is closer).
bool reads_back(std::uint64_t n, std::size_t k, double x) noexcept {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const std::uint64_t m = (bits & ((std::uint64_t{1} << 52U) - 1)) | (std::uint64_t{1} << 52U);
  const int e = static_cast<int>((bits >> 52U) & 0x7FFU) - 1075;
  const Uint128 a = Uint128{n} << static_cast<unsigned>(2 - e);
  const Uint128 b = Uint128{m} * kIntegerPowersOfTen[k] * 4U;
  const Uint128 above = Uint128{kIntegerPowersOfTen[k]} * 2U;  // half the gap to the next double
  const Uint128 below = m == (std::uint64_t{1} << 52U) ? Uint128{kIntegerPowersOfTen[k]} : above;
  const bool even = (m & 1U) == 0;
  if (a >= b) {
    const Uint128 d = a - b;
    return d < above || (d == above && even);
  }
  const Uint128 d = b - a;
  return d < below || (d == below && even);
}

// The shortest digits of most doubles in payloads (prices, weights, ratios:
// a short decimal) without the general algorithm. x is scaled by a 10^K
// (K <= 17) that keeps |x| * 10^K below 2^50, K = 4 first, then the
// largest such K when no decimal of 4 fraction digits fits: there the
// neighbours of x are closer together than 10^-K, so at most one decimal
// with K fraction digits reads back as x, and the rounding of the
// multiplication (within 3/16 of the exact product) cannot hide it from
// round(). When N = round(|x| * 10^K) reads back (reads_back(): |x| is the
// double nearest N / 10^K), N with its trailing zeros cut names the
// decimal with the fewest fraction digits that reads back as x: any shorter
// one, padded to K digits, would be a second such decimal. Those are the
// shortest round-trip digits, the ones std::to_chars (and Python's repr)
// choose. Otherwise false, and the caller takes the general path. Writes
// fixed notation, as SPEC §3 lays out every double in [1e-4, 1e16).
bool write_short_decimal(char*& out, double value) noexcept {
  const double magnitude = std::fabs(value);
  if (!(magnitude >= 1e-4)) return false;  // also NaN
  constexpr double kExactLimit = 0x1p50;
  // Most decimals of a payload (prices, rates, measures) have a few
  // fraction digits: K = 4 is tried first, which leaves fewer zeros to cut
  // and a fraction of one word of digits. It finds the decimal whenever one
  // with at most 4 fraction digits reads back as x (the argument above holds
  // for any K that keeps the product below 2^50: 1e11 * 1e4 < 2^50).
  constexpr std::size_t kFewDigits = 4;
  std::size_t k = kFewDigits;
  std::uint64_t rounded = 0;
  if (magnitude < 1e11) rounded = static_cast<std::uint64_t>(magnitude * kPowersOfTen[kFewDigits] + 0.5);
  // Here whether N / 10^4 reads back as x is asked of the division itself:
  // N (below 2^50) and 10^4 are doubles, and an IEEE division returns the
  // double nearest the exact quotient, ties to even, which is what reads
  // back means. (With wider intermediates, as on x87, an equal quotient
  // still names x; a false "no" only sends x to the path below.) It
  // measured cheaper than reads_back() on this path.
  static_assert(std::numeric_limits<double>::is_iec559);
  if (rounded != 0 && static_cast<double>(rounded) / kPowersOfTen[kFewDigits] == magnitude) {
    // The 4 fraction digits written whole, their trailing zeros then cut by
    // the end pointer, counted on the digits: no branch on their number.
    // The integer part: see below.
    const auto integer = static_cast<std::uint64_t>(magnitude);
    char* p = out;
    if (value < 0) *p++ = '-';
    p = write_integer_part(p, integer);
    *p++ = '.';
    const auto fraction = static_cast<std::uint32_t>(rounded - integer * 10000);
    const auto high = fraction / 100;
    const std::uint32_t four = kDigitPairs[high] | (std::uint32_t{kDigitPairs[fraction - high * 100]} << 16U);
    store_le32(p, four);
    // The '0' digits are the zero bytes of four ^ "0000"; an integral value
    // keeps one.
    const std::uint32_t zeros = four ^ 0x30303030U;
    out = p + 4 - (zeros == 0 ? 3 : static_cast<std::size_t>(std::countl_zero(zeros)) / 8);
    return true;
  }
  {
    // |x| < 2^(e + 1), so K = floor((49 - e) * log10(2)) keeps the product
    // below 2^50; 78913 / 2^18 is log10(2) rounded down.
    const int e = static_cast<int>((std::bit_cast<std::uint64_t>(magnitude) >> 52U) & 0x7FFU) - 1023;
    if (e >= 50) return false;
    k = std::min<std::size_t>(static_cast<std::size_t>(((49 - e) * 78913) >> 18), 17);
    // The estimate can be one short of the largest K that fits.
    if (k < 17 && magnitude * kPowersOfTen[k + 1] < kExactLimit) ++k;
    const double scaled = magnitude * kPowersOfTen[k];
    if (scaled >= kExactLimit) return false;
    // Adding a half is exact below 2^50 (the spacing of doubles there is at
    // most 1/8), so this is round-half-up without a call into libm.
    rounded = static_cast<std::uint64_t>(scaled + 0.5);
    if (!reads_back(rounded, k, magnitude)) return false;
  }
  // Cut the trailing zeros, at most k of them: fewer than 16 (rounded is
  // below 2^50 < 10^16 and not 0), so steps of 8, 4, 2 and 1 find them.
  if (k >= 8 && rounded % 100000000U == 0) {
    rounded /= 100000000U;
    k -= 8;
  }
  if (k >= 4 && rounded % 10000U == 0) {
    rounded /= 10000U;
    k -= 4;
  }
  if (k >= 2 && rounded % 100U == 0) {
    rounded /= 100U;
    k -= 2;
  }
  if (k >= 1 && rounded % 10U == 0) {
    rounded /= 10U;
    k -= 1;
  }
  // The integer part is |x|'s own: no whole number lies between x and a
  // decimal that reads back as x (whole numbers up to 2^53 are doubles, and
  // one would be nearer), so both have the same. The fraction is what is
  // left of rounded, k digits zero-padded: no digit count, no digits moved.
  const auto integer = static_cast<std::uint64_t>(magnitude);
  char* p = out;
  if (value < 0) *p++ = '-';
  p = write_integer_part(p, integer);
  *p++ = '.';
  if (k == 0) {
    *p++ = '0';
  } else {
    const std::uint64_t fraction = rounded - integer * kIntegerPowersOfTen[k];
    if (k > 16) {
      *p++ = '0';  // fraction < 2^50 < 10^16: its 17th digit from the right is 0
      --k;
    }
    write_padded_digits(p, fraction, k);
    p += k;
  }
  out = p;
  return true;
}

// The doubles that are short binary fractions, written from their bits with
// integer arithmetic alone: integral values below 2^53 and halves, quarters,
// eighths... (quantities, weights, dimensions in many payloads). Such an x
// is q / 2^s with q odd, so its decimal expansion is exact with s fraction
// digits, the last a 5: (q mod 2^s) * 5^s over 10^s. Any decimal with fewer
// fraction digits is then at least 5 * 10^-s away from x, farther than half
// the gap to the next double (2^(e-53) for 2^e <= |x| < 2^(e+1)) when
// e + s * log2(10) < 53 + log2(5), which e + 4s <= 55 ensures: so the exact
// expansion has the shortest round-trip digits, the ones the general path
// would find (no power of ten lies between x and those digits either). An
// integral x below 2^53 is its own shortest digits: any other decimal that
// reads back is a whole number too, at least 1 away, farther than half the
// gap (at most 1/2). Writes fixed notation, as SPEC §3 wants for
// 2^-13 <= |x| < 2^53 (within [1e-4, 1e16)); false for any other double.
bool write_binary_fraction(char*& out, double value) noexcept {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  const int e = static_cast<int>((bits >> 52U) & 0x7FFU) - 1023;
  if (e < -13 || e > 52) return false;
  const std::uint64_t m = (bits & ((std::uint64_t{1} << 52U) - 1)) | (std::uint64_t{1} << 52U);
  // |x| = m * 2^(e-52): its fraction bits, past the lowest set bit of m.
  const int s = std::max(0, 52 - e - std::countr_zero(m));
  if (s > 16 || e + 4 * s > 55) return false;
  const std::uint64_t q = m >> static_cast<unsigned>(52 - e - s);  // exact: |x| = q / 2^s
  static constexpr auto kPowersOfFive = powers_of<17>(5);
  char* p = out;
  if (value < 0) *p++ = '-';
  p = write_integer_part(p, q >> static_cast<unsigned>(s));
  *p++ = '.';
  if (s == 0) {
    *p++ = '0';
    out = p;
    return true;
  }
  // The s fraction digits of (q mod 2^s) * 5^s < 10^s, zero-padded.
  const auto n = static_cast<unsigned>(s);
  write_padded_digits(p, (q & ((std::uint64_t{1} << n) - 1)) * kPowersOfFive[n], n);
  out = p + n;
  return true;
}

// Shortest round-trip digits from std::to_chars, laid out as Python's repr():
// fixed notation when 1e-4 <= |x| < 1e16 (integral values keep ".0"),
// otherwise d[.ddd]e±XX with at least two exponent digits.
void write_general_double(char*& out, double value) noexcept {
  if (const double magnitude = std::fabs(value); magnitude >= 1e-4 && magnitude < 1e16) {
    // Fixed notation: to_chars' shortest fixed form has the same digits
    // (below 1e16 no double needs an integer digit its shortest scientific
    // form drops: the gap between doubles there is at most 2), written in
    // place without a pass over a scientific form. The integral values that
    // come here are those from 2^53 on (write_binary_fraction() takes the
    // others), and every double from 2^52 on is integral: they get their
    // ".0"; every other one has a point already.
    char* end = std::to_chars(out, out + 32, value, std::chars_format::fixed).ptr;
    if (magnitude >= 0x1p52) {
      end[0] = '.';
      end[1] = '0';
      end += 2;
    }
    out = end;
    return;
  }
  char sci[32];
  auto [end, ec] = std::to_chars(sci, sci + sizeof sci, value, std::chars_format::scientific);
  // sci is "[-]d[.ddd]e[+-]XX": split it into sign, digits and exponent.
  const char* p = sci;
  char* o = out;
  if (*p == '-') {
    *o++ = '-';
    ++p;
  }
  char digits[20];
  std::size_t n = 0;
  for (; p != end && *p != 'e'; ++p) {
    if (*p != '.') digits[n++] = *p;
  }
  int exponent = 0;
  ++p;  // 'e'
  const bool negative_exp = *p == '-';
  ++p;  // sign
  std::from_chars(p, end, exponent);
  if (negative_exp) exponent = -exponent;

  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      const auto int_len = static_cast<std::size_t>(exponent) + 1;
      if (n <= int_len) {
        std::memcpy(o, digits, n);
        o += n;
        std::memset(o, '0', int_len - n);
        o += int_len - n;
        *o++ = '.';
        *o++ = '0';
      } else {
        std::memcpy(o, digits, int_len);
        o += int_len;
        *o++ = '.';
        std::memcpy(o, digits + int_len, n - int_len);
        o += n - int_len;
      }
    } else {
      *o++ = '0';
      *o++ = '.';
      const auto zeros = static_cast<std::size_t>(-exponent - 1);
      std::memset(o, '0', zeros);
      o += zeros;
      std::memcpy(o, digits, n);
      o += n;
    }
    out = o;
    return;
  }
  *o++ = digits[0];
  if (n > 1) {
    *o++ = '.';
    std::memcpy(o, digits + 1, n - 1);
    o += n - 1;
  }
  *o++ = 'e';
  *o++ = exponent < 0 ? '-' : '+';
  const int magnitude = exponent < 0 ? -exponent : exponent;
  if (magnitude < 10) *o++ = '0';
  o = std::to_chars(o, o + 4, magnitude).ptr;
  out = o;
}

// The longest double: sign, 17 digits, point, up to 20 zeros of layout.
constexpr std::size_t kLongestDouble = 48;
constexpr std::size_t kLongestInteger = 24;

}  // namespace

void JsonOut::grow(std::size_t n) {
  // Doubling keeps the number of zero-filling resizes logarithmic.
  const std::size_t used = size();
  buffer_.resize(std::max({buffer_.size() * 2, used + n, std::size_t{256}}));
  cur_ = buffer_.data() + used;
  limit_ = buffer_.data() + buffer_.size();
}

void JsonOut::integer_slow(std::int64_t value) {
  char* p = room(kLongestInteger);
  cur_ = std::to_chars(p, p + kLongestInteger, value).ptr;
}

void JsonOut::integer(std::uint64_t value) {
  char* p = room(kLongestInteger);
  cur_ = std::to_chars(p, p + kLongestInteger, value).ptr;
}

WriteStatus JsonOut::number(double value) {
  if (!std::isfinite(value)) return WriteStatus::not_finite;
  char* p = room(kLongestDouble);
  if (value == 0) {
    // What the general path writes for ±0, without its digit search.
    std::memcpy(p, std::signbit(value) ? "-0.0" : "0.0\0", 4);
    cur_ = p + (std::signbit(value) ? 4 : 3);
    return WriteStatus::ok;
  }
  if (!write_binary_fraction(p, value) && !write_short_decimal(p, value)) write_general_double(p, value);
  cur_ = p;
  return WriteStatus::ok;
}

WriteStatus JsonOut::quoted_slow(std::string_view text, char lead, char trail) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* src = text.data();
  const char* const end = src + text.size();
  char* dst = room(text.size() + kStringSlack + 2);
  if (lead != 0) *dst++ = lead;
  *dst++ = '"';
  while (src != end) {
    // Copy a whole block (or word), then keep as much of it as needs no
    // attention.
    const auto left = static_cast<std::size_t>(end - src);
    std::size_t plain = 0;
#if defined(__SSE2__)
    if (left < kBlock && within_page(src)) {
      // The rest of the string (a short one, or the tail of a long one) as
      // one block: the bytes past its end are masked off, and the store's
      // extra bytes land in the slack room() keeps after the string.
      const __m128i block = load_block_in_page(src);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), block);
      const std::uint32_t in_string = (1U << left) - 1U;
      const std::uint32_t mask = attention_mask(block) & in_string;
      if (mask == 0) {
        dst += left;
        break;
      }
      // Only non-ASCII text (accented words), no escape: kept as copied
      // once its sequences are checked.
      if (const auto high = static_cast<std::uint32_t>(_mm_movemask_epi8(block)) & in_string; mask == high) {
        if (!two_byte_sequences(block, high, in_string) && check_sequences(src, left, left, high) == 0) {
          return WriteStatus::invalid_utf8;
        }
        dst += left;
        break;
      }
      plain = static_cast<std::size_t>(std::countr_zero(mask));
    } else if (left >= kBlock) {
      const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), block);
      const std::uint32_t mask = attention_mask(block);
      if (mask == 0) {
        src += kBlock;
        dst += kBlock;
        continue;
      }
      if (const auto high = static_cast<std::uint32_t>(_mm_movemask_epi8(block)); mask == high) {
        const std::size_t done =
            two_byte_sequences(block, high, 0xFFFFU) ? kBlock : check_sequences(src, kBlock, left, high);
        if (done == 0) return WriteStatus::invalid_utf8;
        // A sequence that runs past the block: its last bytes.
        for (std::size_t i = kBlock; i < done; ++i) dst[i] = src[i];
        src += done;
        dst += done;
        continue;
      }
      plain = static_cast<std::size_t>(std::countr_zero(mask));
    } else
#endif
        if (left >= kBlock) {
      std::memcpy(dst, src, kBlock);
      const std::uint32_t mask = attention_mask(src);
      if (mask == 0) {
        src += kBlock;
        dst += kBlock;
        continue;
      }
      plain = static_cast<std::size_t>(std::countr_zero(mask));
    } else if (left >= sizeof(std::uint64_t) && std::endian::native == std::endian::little) {
      // The whole tail as two words that may overlap: most keys and short
      // values end here in one step.
      std::uint64_t head;
      std::uint64_t tail;
      std::memcpy(&head, src, sizeof head);
      std::memcpy(&tail, end - sizeof tail, sizeof tail);
      if ((word_attention(head) | word_attention(tail)) == 0) {
        std::memcpy(dst, &head, sizeof head);
        std::memcpy(dst + left - sizeof tail, &tail, sizeof tail);
        dst += left;
        break;
      }
      std::uint64_t word;
      std::memcpy(&word, src, sizeof word);
      std::memcpy(dst, &word, sizeof word);
      const std::uint64_t flags = word_attention(word);
      if (flags == 0) {
        src += sizeof word;
        dst += sizeof word;
        continue;
      }
      plain = static_cast<std::size_t>(std::countr_zero(flags)) / 8;
    } else if (left >= sizeof(std::uint32_t) && std::endian::native == std::endian::little) {
      std::uint32_t head;
      std::uint32_t tail;
      std::memcpy(&head, src, sizeof head);
      std::memcpy(&tail, end - sizeof tail, sizeof tail);
      if (word_attention((std::uint64_t{tail} << 32U) | head) == 0) {
        std::memcpy(dst, &head, sizeof head);
        std::memcpy(dst + left - sizeof tail, &tail, sizeof tail);
        dst += left;
        break;
      }
      std::uint32_t word;
      std::memcpy(&word, src, sizeof word);
      std::memcpy(dst, &word, sizeof word);
      // The same test on 4 bytes: the word widened with plain spaces.
      const std::uint64_t flags = word_attention(word | 0x2020202000000000ULL);
      if (flags == 0) {
        src += sizeof word;
        dst += sizeof word;
        continue;
      }
      plain = static_cast<std::size_t>(std::countr_zero(flags)) / 8;
    } else {
      // The last few bytes one at a time: a block through a buffer on the
      // stack would cost a stalled store-to-load forward.
      while (src != end && !kAttention[static_cast<unsigned char>(*src)]) *dst++ = *src++;
      if (src == end) break;
    }
    src += plain;
    dst += plain;
    const auto c = static_cast<unsigned char>(*src);
    if (c >= 0x80U) {
      // Non-ASCII: kept byte for byte once its sequence is well-formed. A
      // run of them (a word in Greek or Japanese) is checked in one loop,
      // each sequence copied a byte at a time (a call to memcpy per sequence
      // would cost more than the check).
      do {
        const std::size_t length =
            utf8_sequence(reinterpret_cast<const unsigned char*>(src), static_cast<std::size_t>(end - src));
        if (length == 0) return WriteStatus::invalid_utf8;
        dst[0] = src[0];
        dst[1] = src[1];
        if (length > 2) dst[2] = src[2];
        if (length > 3) dst[3] = src[3];
        src += length;
        dst += length;
      } while (src != end && static_cast<unsigned char>(*src) >= 0x80U);
      continue;
    }
    // An escape writes more than it reads: make room for the rest as well.
    const auto remaining = static_cast<std::size_t>(end - src);
    cur_ = dst;
    dst = room(remaining + kLongestEscape + kStringSlack + 1);
    const char e = kEscape[c];
    if (e == 'u') {
      const char escape[6] = {'\\', 'u', '0', '0', kHex[c >> 4U], kHex[c & 0x0FU]};
      std::memcpy(dst, escape, sizeof escape);
      dst += sizeof escape;
    } else {
      dst[0] = '\\';
      dst[1] = e;
      dst += 2;
    }
    ++src;
  }
  *dst++ = '"';
  if (trail != 0) *dst++ = trail;
  cur_ = dst;
  return WriteStatus::ok;
}

// The values inside a container: the usual scalars written here, without a
// call each; containers and rare kinds go through value(). Both dispatch with
// a switch on the alternative's index, one jump table per value, and the
// get_if after it is known to succeed.
inline char* JsonOut::element_at(char* p, const Value& value, char lead) {
  const auto& v = value.v_;
  switch (static_cast<Value::Kind>(v.index())) {
    case Value::Kind::string: return quoted_at(p, *std::get_if<std::string>(&v), lead, 0);
    case Value::Kind::int64: {
      const std::int64_t i = *std::get_if<std::int64_t>(&v);
      const auto bits = static_cast<std::uint64_t>(i);
      const std::uint64_t magnitude = i < 0 ? 0 - bits : bits;
      if (magnitude < 100) {
        p = room_at(p, 4);
        *p = lead;
        p += lead != 0 ? 1 : 0;
        *p = '-';
        p += i < 0 ? 1 : 0;
        // Both digits from the table, the first dropped below 10.
        const auto pair = static_cast<std::uint16_t>(kDigitPairs[magnitude] >> (magnitude < 10 ? 8U : 0U));
        std::memcpy(p, &pair, sizeof pair);
        return p + (magnitude < 10 ? 1 : 2);
      }
      p = room_at(p, 1);
      *p = lead;
      cur_ = p + (lead != 0 ? 1 : 0);
      integer_slow(i);
      return cur_;
    }
    case Value::Kind::boolean: {
      // "true" or "fals" and an 'e' that a true overwrites or leaves past the end.
      const bool b = *std::get_if<bool>(&v);
      p = room_at(p, 6);
      *p = lead;
      p += lead != 0 ? 1 : 0;
      std::memcpy(p, b ? "true" : "fals", 4);
      p[4] = 'e';
      return p + (b ? 4 : 5);
    }
    case Value::Kind::null:
      p = room_at(p, 5);
      *p = lead;
      p += lead != 0 ? 1 : 0;
      std::memcpy(p, "null", 4);
      return p + 4;
    default: break;
  }
  // Containers, doubles and the rare kinds: out of line.
  p = room_at(p, 1);
  *p = lead;
  p += lead != 0 ? 1 : 0;
  if (const Object* o = std::get_if<Object>(&v)) return object_at(p, *o);
  if (const Array* a = std::get_if<Array>(&v)) return array_at(p, *a);
  cur_ = p;
  if (const double* d = std::get_if<double>(&v)) return out_of_line(number(*d));
  return out_of_line(this->value(value));
}

char* JsonOut::array_at(char* p, const Array& array) {
  p = room_at(p, 1);
  *p++ = '[';
  char lead = 0;  // the first item has no ',' before it
  for (const Value& item : array) {
    p = element_at(p, item, lead);
    if (p == nullptr) return nullptr;
    lead = ',';
  }
  p = room_at(p, 1);
  *p = ']';
  return p + 1;
}

char* JsonOut::object_at(char* p, const Object& object) {
  p = room_at(p, 1);
  *p++ = '{';
  char lead = 0;  // the first member has no ',' before it
  for (const auto& [key, item] : object) {
    p = quoted_at(p, key, lead, ':');
    if (p == nullptr) return nullptr;
    p = element_at(p, item, 0);
    if (p == nullptr) return nullptr;
    lead = ',';
  }
  p = room_at(p, 1);
  *p = '}';
  return p + 1;
}

WriteStatus JsonOut::value(const Value& value) {
  const auto& v = value.v_;
  switch (static_cast<Value::Kind>(v.index())) {
    case Value::Kind::null: literal("null"); break;
    case Value::Kind::boolean:
      literal(*std::get_if<bool>(&v) ? std::string_view("true") : std::string_view("false"));
      break;
    case Value::Kind::int64: integer(*std::get_if<std::int64_t>(&v)); break;
    case Value::Kind::uint64: integer(*std::get_if<std::uint64_t>(&v)); break;
    case Value::Kind::number_text: literal(std::get_if<NumberText>(&v)->text); break;
    case Value::Kind::floating: return number(*std::get_if<double>(&v));
    case Value::Kind::string: return quoted(*std::get_if<std::string>(&v), 0, 0);
    case Value::Kind::array: return out_of_line(array_at(cur_, *std::get_if<Array>(&v)));
    case Value::Kind::object: return out_of_line(object_at(cur_, *std::get_if<Object>(&v)));
  }
  return WriteStatus::ok;
}

ErrorInfo write_error(WriteStatus status) {
  if (status == WriteStatus::not_finite) {
    return ErrorInfo(Errc::invalid_argument, "NaN and infinities cannot be written as JSON");
  }
  return ErrorInfo(Errc::invalid_utf8, "string is not valid UTF-8");
}

}  // namespace detail

namespace {

using detail::JsonOut;
using detail::WriteStatus;

Result<void> to_result(WriteStatus status) {
  if (status == WriteStatus::ok) return {};
  return unexpected(detail::write_error(status));
}

// Runs one write on out: on success out ends after the new bytes, on failure
// out is as it was.
template <class Write>
Result<void> write_into(std::string& out, Write write) {
  const std::size_t before = out.size();
  JsonOut json(out, before);
  const WriteStatus status = write(json);
  if (status != WriteStatus::ok) json.truncate(before);
  json.finish();
  return to_result(status);
}

}  // namespace

Result<void> write_json_string(std::string& out, std::string_view text) {
  return write_into(out, [&](JsonOut& json) { return json.string(text); });
}

Result<void> write_json_double(std::string& out, double value) {
  return write_into(out, [&](JsonOut& json) { return json.number(value); });
}

Result<void> write_json(std::string& out, const Value& value) {
  return write_into(out, [&](JsonOut& json) { return json.value(value); });
}

Result<std::string> to_json(const Value& value) {
  std::string out;
  if (auto written = write_json(out, value); !written) return unexpected(written.error());
  return out;
}

}  // namespace babelqueue
