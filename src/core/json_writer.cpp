// SPDX-License-Identifier: Apache-2.0
// The canonical JSON writer (SPEC §3). It is our own code on purpose: no JSON
// library in reach writes the exact bytes the other SDKs of the family write
// (escape set, hex case, float layout), and those bytes are the contract.
#include <babelqueue/json.hpp>

#include <simdjson.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace babelqueue {

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

// Bit tricks on 8 bytes at once (exact for the ranges used here):
// has_zero(x) is non-zero iff a byte of x is 0; has_less(x, n) iff a byte is < n.
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
constexpr std::uint64_t has_zero(std::uint64_t x) noexcept { return (x - kOnes) & ~x & kHighs; }
constexpr std::uint64_t has_less(std::uint64_t x, std::uint64_t n) noexcept { return (x - kOnes * n) & ~x & kHighs; }

// True when none of the 8 bytes needs attention: no control character, no
// '"' or '\\' to escape, no non-ASCII byte whose UTF-8 must be validated.
constexpr bool word_is_plain(std::uint64_t w) noexcept {
  return (has_less(w, 0x20) | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) | (w & kHighs)) == 0;
}
static_assert(word_is_plain(0x6867666564636261ULL));   // "abcdefgh"
static_assert(!word_is_plain(0x6867666564632261ULL));  // a '"'
static_assert(!word_is_plain(0x686766656463615cULL));  // a '\'
static_assert(!word_is_plain(0x686766650a636261ULL));  // a '\n'
static_assert(!word_is_plain(0x68676665c3a96261ULL));  // non-ASCII

// The recursive writer reports a small status rather than a Result: building
// an error on every level would cost more than writing the value.
enum class WriteStatus { ok, invalid_utf8, not_finite };

WriteStatus append_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* p = text.data();
  const char* const end = p + text.size();
  const char* run = p;
  bool non_ascii = false;
  out.push_back('"');
  while (p != end) {
    if (end - p >= 8) {
      std::uint64_t w;
      std::memcpy(&w, p, sizeof w);
      if (word_is_plain(w)) {
        p += 8;
        continue;
      }
    }
    const auto c = static_cast<unsigned char>(*p);
    const char e = kEscape[c];
    if (c >= 0x80U) non_ascii = true;
    if (e == 0) {
      ++p;
      continue;
    }
    out.append(run, static_cast<std::size_t>(p - run));
    if (e == 'u') {
      const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4U], kHex[c & 0x0FU]};
      out.append(esc, sizeof esc);
    } else {
      const char esc[2] = {'\\', e};
      out.append(esc, sizeof esc);
    }
    run = ++p;
  }
  if (non_ascii && !simdjson::validate_utf8(text.data(), text.size())) return WriteStatus::invalid_utf8;
  out.append(run, static_cast<std::size_t>(end - run));
  out.push_back('"');
  return WriteStatus::ok;
}

template <class Int>
void append_integer(std::string& out, Int value) {
  char buf[24];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, static_cast<std::size_t>(ptr - buf));
}

WriteStatus append_double(std::string& out, double value);

WriteStatus append_value(std::string& out, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::null: out.append("null"); return WriteStatus::ok;
    case Value::Kind::boolean: out.append(value.as_bool() ? "true" : "false"); return WriteStatus::ok;
    case Value::Kind::int64: append_integer(out, value.as_int64()); return WriteStatus::ok;
    case Value::Kind::uint64: append_integer(out, value.as_uint64()); return WriteStatus::ok;
    case Value::Kind::number_text: out.append(*value.if_number_text()); return WriteStatus::ok;
    case Value::Kind::floating: return append_double(out, value.as_double());
    case Value::Kind::string: return append_string(out, *value.if_string());
    case Value::Kind::array: {
      out.push_back('[');
      bool first = true;
      for (const Value& item : *value.if_array()) {
        if (!first) out.push_back(',');
        first = false;
        if (auto st = append_value(out, item); st != WriteStatus::ok) return st;
      }
      out.push_back(']');
      return WriteStatus::ok;
    }
    case Value::Kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : *value.if_object()) {
        if (!first) out.push_back(',');
        first = false;
        if (auto st = append_string(out, key); st != WriteStatus::ok) return st;
        out.push_back(':');
        if (auto st = append_value(out, item); st != WriteStatus::ok) return st;
      }
      out.push_back('}');
      return WriteStatus::ok;
    }
  }
  return WriteStatus::ok;
}

Result<void> to_result(WriteStatus status) {
  switch (status) {
    case WriteStatus::ok: return {};
    case WriteStatus::invalid_utf8: return unexpected(Errc::invalid_utf8, "string is not valid UTF-8");
    case WriteStatus::not_finite:
      return unexpected(Errc::invalid_argument, "NaN and infinities cannot be written as JSON");
  }
  return {};
}

// Shortest round-trip digits from std::to_chars, laid out as Python's repr():
// fixed notation when 1e-4 <= |x| < 1e16 (integral values keep ".0"),
// otherwise d[.ddd]e±XX with at least two exponent digits.
WriteStatus append_double(std::string& out, double value) {
  if (!std::isfinite(value)) return WriteStatus::not_finite;
  char sci[32];
  auto [end, ec] = std::to_chars(sci, sci + sizeof sci, value, std::chars_format::scientific);
  // sci is "[-]d[.ddd]e[+-]XX": split it into sign, digits and exponent.
  const char* p = sci;
  if (*p == '-') {
    out.push_back('-');
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
        out.append(digits, n);
        out.append(int_len - n, '0');
        out.append(".0");
      } else {
        out.append(digits, int_len);
        out.push_back('.');
        out.append(digits + int_len, n - int_len);
      }
    } else {
      out.append("0.");
      out.append(static_cast<std::size_t>(-exponent - 1), '0');
      out.append(digits, n);
    }
    return WriteStatus::ok;
  }
  out.push_back(digits[0]);
  if (n > 1) {
    out.push_back('.');
    out.append(digits + 1, n - 1);
  }
  out.push_back('e');
  out.push_back(exponent < 0 ? '-' : '+');
  const int magnitude = exponent < 0 ? -exponent : exponent;
  if (magnitude < 10) out.push_back('0');
  append_integer(out, magnitude);
  return WriteStatus::ok;
}

}  // namespace

Result<void> write_json_string(std::string& out, std::string_view text) {
  const std::size_t before = out.size();
  const WriteStatus status = append_string(out, text);
  if (status != WriteStatus::ok) out.resize(before);
  return to_result(status);
}

Result<void> write_json_double(std::string& out, double value) { return to_result(append_double(out, value)); }

Result<void> write_json(std::string& out, const Value& value) { return to_result(append_value(out, value)); }

Result<std::string> to_json(const Value& value) {
  std::string out;
  if (auto st = append_value(out, value); st != WriteStatus::ok) return unexpected(to_result(st).error());
  return out;
}

}  // namespace babelqueue
