// The canonical JSON writer (SPEC §3). It is our own code on purpose: no JSON
// library in reach writes the exact bytes the other SDKs of the family write
// (escape set, hex case, float layout), and those bytes are the contract.
#include <babelqueue/json.hpp>

#include <simdjson.h>

#include <array>
#include <charconv>
#include <cmath>
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

void append_escaped(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* run = text.data();
  const char* const end = text.data() + text.size();
  for (const char* p = run; p != end; ++p) {
    const char e = kEscape[static_cast<unsigned char>(*p)];
    if (e == 0) continue;
    out.append(run, static_cast<std::size_t>(p - run));
    if (e == 'u') {
      const auto c = static_cast<unsigned char>(*p);
      const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4U], kHex[c & 0x0FU]};
      out.append(esc, sizeof esc);
    } else {
      const char esc[2] = {'\\', e};
      out.append(esc, sizeof esc);
    }
    run = p + 1;
  }
  out.append(run, static_cast<std::size_t>(end - run));
}

Result<void> write_value(std::string& out, const Value& value);

Result<void> write_array(std::string& out, const Array& array) {
  out.push_back('[');
  bool first = true;
  for (const Value& item : array) {
    if (!first) out.push_back(',');
    first = false;
    if (auto r = write_value(out, item); !r) return r;
  }
  out.push_back(']');
  return {};
}

Result<void> write_object(std::string& out, const Object& object) {
  out.push_back('{');
  bool first = true;
  for (const auto& [key, item] : object) {
    if (!first) out.push_back(',');
    first = false;
    if (auto r = write_json_string(out, key); !r) return r;
    out.push_back(':');
    if (auto r = write_value(out, item); !r) return r;
  }
  out.push_back('}');
  return {};
}

template <class Int>
void append_integer(std::string& out, Int value) {
  char buf[24];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, static_cast<std::size_t>(ptr - buf));
}

Result<void> write_value(std::string& out, const Value& value) {
  switch (value.kind()) {
    case Value::Kind::null: out.append("null"); return {};
    case Value::Kind::boolean: out.append(value.as_bool() ? "true" : "false"); return {};
    case Value::Kind::int64: append_integer(out, value.as_int64()); return {};
    case Value::Kind::uint64: append_integer(out, value.as_uint64()); return {};
    case Value::Kind::number_text: out.append(value.number_text()); return {};
    case Value::Kind::floating: return write_json_double(out, value.as_double());
    case Value::Kind::string: return write_json_string(out, value.as_string());
    case Value::Kind::array: return write_array(out, value.as_array());
    case Value::Kind::object: return write_object(out, value.as_object());
  }
  return unexpected(Errc::internal, "unknown value kind");
}

}  // namespace

namespace {
// Most strings in envelopes are ASCII; checking that first skips the
// dispatched UTF-8 validator for them.
bool is_ascii(std::string_view text) noexcept {
  unsigned char any = 0;
  for (const char c : text) any = static_cast<unsigned char>(any | static_cast<unsigned char>(c));
  return any < 0x80U;
}
}  // namespace

Result<void> write_json_string(std::string& out, std::string_view text) {
  if (!is_ascii(text) && !simdjson::validate_utf8(text.data(), text.size())) {
    return unexpected(Errc::invalid_utf8, "string is not valid UTF-8");
  }
  out.push_back('"');
  append_escaped(out, text);
  out.push_back('"');
  return {};
}

// Shortest round-trip digits from std::to_chars, laid out as Python's repr():
// fixed notation when 1e-4 <= |x| < 1e16 (integral values keep ".0"),
// otherwise d[.ddd]e±XX with at least two exponent digits.
Result<void> write_json_double(std::string& out, double value) {
  if (!std::isfinite(value)) {
    return unexpected(Errc::invalid_argument, "NaN and infinities cannot be written as JSON");
  }
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
    return {};
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
  return {};
}

Result<void> write_json(std::string& out, const Value& value) { return write_value(out, value); }

Result<std::string> to_json(const Value& value) {
  std::string out;
  if (auto r = write_value(out, value); !r) return unexpected(r.error());
  return out;
}

}  // namespace babelqueue
