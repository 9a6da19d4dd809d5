// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/otel/trace_context.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>

namespace babelqueue::otel {

namespace {

constexpr char kHex[] = "0123456789abcdef";

template <std::size_t N>
bool any_set(const std::array<std::uint8_t, N>& bytes) noexcept {
  return std::any_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b != 0; });
}

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& bytes) {
  std::string out(N * 2, '0');
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0x0f];
  }
  return out;
}

// The value of each hex digit; kNotHex for anything else, and upper case
// marked by kUpper beside its value. A table: a traceparent is read for every
// message a traced worker takes, so its 27 bytes are read without a branch
// per digit.
constexpr std::uint8_t kNotHex = 0x80;
constexpr std::uint8_t kUpper = 0x40;
constexpr std::array<std::uint8_t, 256> kHexValues = [] {
  std::array<std::uint8_t, 256> t{};
  t.fill(kNotHex);
  for (int i = 0; i < 10; ++i) t[static_cast<std::size_t>('0' + i)] = static_cast<std::uint8_t>(i);
  for (int i = 0; i < 6; ++i) {
    t[static_cast<std::size_t>('a' + i)] = static_cast<std::uint8_t>(10 + i);
    t[static_cast<std::size_t>('A' + i)] = static_cast<std::uint8_t>(kUpper | (10 + i));
  }
  return t;
}();

constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHigh = 0x8080808080808080ULL;

// Per byte of x (each below 0x80), 0x80 where the byte is at least lo, or at
// most hi: adding never carries into the next byte.
constexpr std::uint64_t at_least(std::uint64_t x, std::uint8_t lo) noexcept {
  return (x + kOnes * (0x80U - lo)) & kHigh;
}
constexpr std::uint64_t at_most(std::uint64_t x, std::uint8_t hi) noexcept {
  return ~(x + kOnes * (0x7fU - hi)) & kHigh;
}

// Eight hex digits at text as four bytes, in the order they are written: the
// checks and the conversion on all eight at once, in one 64-bit word.
bool hex8(const char* text, std::uint8_t* out, bool upper_ok) noexcept {
  std::uint64_t x = 0;
  std::memcpy(&x, text, 8);
  if constexpr (std::endian::native == std::endian::big) x = __builtin_bswap64(x);
  if ((x & kHigh) != 0) return false;
  const std::uint64_t digit = at_least(x, '0') & at_most(x, '9');
  std::uint64_t letter = at_least(x, 'a') & at_most(x, 'f');
  if (upper_ok) letter |= at_least(x, 'A') & at_most(x, 'F');
  if ((digit | letter) != kHigh) return false;
  // '0'..'9' end in their value, 'a'..'f' and 'A'..'F' in their value - 9.
  const std::uint64_t nibbles = (x & (kOnes * 0x0f)) + (letter >> 7U) * 9;
  // Pairs into bytes (the first digit high), then the four bytes together.
  std::uint64_t bytes = ((nibbles << 4U) | (nibbles >> 8U)) & 0x00ff00ff00ff00ffULL;
  bytes = (bytes | (bytes >> 8U)) & 0x0000ffff0000ffffULL;
  bytes = (bytes | (bytes >> 16U)) & 0xffffffffULL;
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(bytes >> (8 * i));
  return true;
}

// text as N bytes of hex, lowercase only unless upper_ok. A traceparent is
// read for every message a traced worker takes: its ids go eight digits at a
// time (a byte loop costs as much as the rest of an unsampled span).
template <std::size_t N>
bool parse_hex(std::string_view text, std::array<std::uint8_t, N>& out, bool upper_ok) noexcept {
  if (text.size() != N * 2) return false;
  if constexpr (N % 4 == 0) {
    for (std::size_t i = 0; i < N; i += 4) {
      if (!hex8(text.data() + 2 * i, out.data() + i, upper_ok)) return false;
    }
  } else {
    unsigned seen = 0;  // the high bits of every digit's entry
    for (std::size_t i = 0; i < N; ++i) {
      const unsigned hi = kHexValues[static_cast<unsigned char>(text[2 * i])];
      const unsigned lo = kHexValues[static_cast<unsigned char>(text[2 * i + 1])];
      seen |= hi | lo;
      out[i] = static_cast<std::uint8_t>(((hi & 0x0fU) << 4U) | (lo & 0x0fU));
    }
    const unsigned refused = upper_ok ? kNotHex : kNotHex | kUpper;
    if ((seen & refused) != 0) return false;
  }
  return true;
}

// SHA-256 fetched once: looking the algorithm up costs more than hashing a
// trace_id.
const EVP_MD* sha256_algorithm() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

std::array<std::uint8_t, 32> sha256(std::string_view a, std::string_view b = {}) {
  std::array<std::uint8_t, 32> digest{};
  // Each thread keeps its context: a new one is an allocation per message.
  thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned int size = 0;
  const bool ok =
      ctx && sha256_algorithm() != nullptr && EVP_DigestInit_ex(ctx.get(), sha256_algorithm(), nullptr) == 1 &&
      EVP_DigestUpdate(ctx.get(), a.data(), a.size()) == 1 && EVP_DigestUpdate(ctx.get(), b.data(), b.size()) == 1 &&
      EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) == 1;
  if (!ok) throw std::bad_alloc();  // OpenSSL fails here only when out of memory
  return digest;
}

bool printable_ascii(std::string_view s) noexcept {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

}  // namespace

bool TraceId::valid() const noexcept { return any_set(bytes); }
std::string TraceId::hex() const { return to_hex(bytes); }
bool SpanId::valid() const noexcept { return any_set(bytes); }
std::string SpanId::hex() const { return to_hex(bytes); }

TraceId trace_id_of(std::string_view trace_id) {
  TraceId id;
  // The hex digits without the dashes, read in place (no copy): a UUID has
  // exactly 32 of them.
  char digits[32];
  std::size_t n = 0;
  bool uuid = true;
  for (char c : trace_id) {
    if (c == '-') continue;
    if (n == sizeof digits) {
      uuid = false;
      break;
    }
    digits[n++] = c;
  }
  if (uuid && n == sizeof digits && parse_hex(std::string_view(digits, n), id.bytes, /*upper_ok=*/true) && id.valid()) {
    return id;
  }
  const auto digest = sha256(trace_id);
  std::memcpy(id.bytes.data(), digest.data(), id.bytes.size());
  // All zero after hashing: practically never; the family then uses 1.
  if (!id.valid()) id.bytes.back() = 1;
  return id;
}

std::string uuid_of(const TraceId& trace_id) {
  const std::string h = trace_id.hex();
  std::string out;
  out.reserve(36);
  out.append(h, 0, 8).append(1, '-').append(h, 8, 4).append(1, '-').append(h, 12, 4).append(1, '-');
  out.append(h, 16, 4).append(1, '-').append(h, 20, 12);
  return out;
}

SpanId synthetic_span_id_of(std::string_view trace_id) {
  SpanId id;
  const auto digest = sha256("babelqueue-span:", trace_id);
  std::memcpy(id.bytes.data(), digest.data(), id.bytes.size());
  if (!id.valid()) id.bytes.back() = 1;
  return id;
}

SpanContext synthetic_parent(std::string_view trace_id) {
  SpanContext context;
  context.trace_id = trace_id_of(trace_id);
  context.span_id = synthetic_span_id_of(trace_id);
  context.sampled = true;
  context.remote = true;
  return context;
}

// version "-" trace-id "-" parent-id "-" flags, lowercase hex (W3C Trace
// Context level 1). A later version may append "-" and more fields, which
// are not read; version 00 has exactly these four.
std::optional<SpanContext> parse_traceparent(std::string_view traceparent, std::string_view tracestate) {
  constexpr std::size_t kLength = 55;
  if (traceparent.size() < kLength) return std::nullopt;
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  std::array<std::uint8_t, 1> flags{};
  SpanContext context;
  if (!parse_hex(traceparent.substr(0, 2), version, false) || version[0] == 0xff) return std::nullopt;
  if (version[0] == 0 && traceparent.size() != kLength) return std::nullopt;
  if (version[0] != 0 && traceparent.size() > kLength && traceparent[kLength] != '-') return std::nullopt;
  if (!parse_hex(traceparent.substr(3, 32), context.trace_id.bytes, false) ||
      !parse_hex(traceparent.substr(36, 16), context.span_id.bytes, false) ||
      !parse_hex(traceparent.substr(53, 2), flags, false)) {
    return std::nullopt;
  }
  if (!context.valid()) return std::nullopt;
  context.sampled = (flags[0] & 0x01) != 0;
  context.remote = true;
  if (tracestate.size() <= 512 && printable_ascii(tracestate)) context.trace_state = std::string(tracestate);
  return context;
}

std::string format_traceparent(const SpanContext& context) {
  std::string out;
  out.reserve(55);
  out.append("00-").append(context.trace_id.hex()).append(1, '-').append(context.span_id.hex());
  out.append(context.sampled ? "-01" : "-00");
  return out;
}

}  // namespace babelqueue::otel
