// SPDX-License-Identifier: Apache-2.0
// Golden bytes for every byte rule of the canonical encoding (SPEC §3).
#include <babelqueue/json.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace bq = babelqueue;

namespace {

std::string json(const bq::Value& v) { return bq::to_json(v).value(); }
std::string dbl(double d) {
  std::string out;
  bq::write_json_double(out, d).value();
  return out;
}

TEST(JsonWriter, CompactWithNoWhitespaceAndInsertionOrder) {
  const bq::Value v =
      bq::Value::object({{"b", 1}, {"a", bq::Value::array({true, false, nullptr})}, {"c", bq::Value::object()}});
  EXPECT_EQ(json(v), R"({"b":1,"a":[true,false,null],"c":{}})");
}

TEST(JsonWriter, EscapesOnlyQuoteBackslashAndControlCharacters) {
  EXPECT_EQ(json("\"\\"), R"("\"\\")");
  EXPECT_EQ(json("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(json(std::string("\x00\x01\x1f", 3)), R"("\u0000\u0001\u001f")");  // lowercase hex
  EXPECT_EQ(json("\x0b\x1b"), R"("\u000b\u001b")");
}

TEST(JsonWriter, LeavesSlashHtmlDelAndNonAsciiLiteral) {
  EXPECT_EQ(json("/<>&'"), R"("/<>&'")");
  EXPECT_EQ(json("\x7f"), "\"\x7f\"");
  EXPECT_EQ(json("Café — naïve ☕ 日本 😀"), "\"Café — naïve ☕ 日本 😀\"");
  EXPECT_EQ(json("a\u2028b\u2029c"), "\"a\u2028b\u2029c\"");
}

TEST(JsonWriter, RejectsInvalidUtf8) {
  auto r = bq::to_json(bq::Value(std::string("caf\xff")));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), bq::Errc::invalid_utf8);
  EXPECT_FALSE(bq::to_json(bq::Value::object({{std::string("k\xc3"), 1}})));  // keys too
  EXPECT_FALSE(bq::to_json(bq::Value(std::string("\xed\xa0\x80"))));          // encoded surrogate
}

// The escaped token written one byte at a time, or nullopt when text is not
// UTF-8 (decoded to code points and checked against their ranges): a
// reference the block-wise writer must agree with on every input.
std::optional<std::string> reference_string(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80U) {
      static constexpr char kHex[] = "0123456789abcdef";
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20U) {
            out += "\\u00";
            out += kHex[c >> 4U];
            out += kHex[c & 0xFU];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0U) == 0xC0U) {
      length = 2;
      cp = c & 0x1FU;
    } else if ((c & 0xF0U) == 0xE0U) {
      length = 3;
      cp = c & 0x0FU;
    } else if ((c & 0xF8U) == 0xF0U) {
      length = 4;
      cp = c & 0x07U;
    } else {
      return std::nullopt;
    }
    if (i + length > text.size()) return std::nullopt;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0U) != 0x80U) return std::nullopt;
      cp = (cp << 6U) | (next & 0x3FU);
    }
    constexpr std::uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kShortest[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
    out.append(text.substr(i, length));
    i += length;
  }
  return out + "\"";
}

TEST(JsonWriter, StringsAgreeWithAByteAtATimeReference) {
  // Pieces that land at every offset of a block: plain runs, escapes, code
  // points at the edges of each UTF-8 length, and malformed sequences.
  const std::vector<std::string> pieces = {
      "a", "plain text", "0123456789abcdef", "\"", "\\", "\n", std::string(1, '\0'), "\x1f", "\x7f", "\xc2\x80",
      "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
      "\xf4\x8f\xbf\xbf", "\xc3\xa9", "\xe6\x9d\xb1",
      // malformed: lone continuation, overlong, surrogate, above U+10FFFF, truncated, bytes never in UTF-8
      "\x80", "\xc0\x80", "\xc1\xbf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xc3",
      "\xe6\x9d", "\xf0\x90\x80", "\xf5\x80\x80\x80", "\xff"};
  std::mt19937 rng(20261204);
  std::size_t valid = 0;
  std::size_t invalid = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const int count = static_cast<int>(rng() % 12);
    for (int i = 0; i < count; ++i) text += pieces[rng() % pieces.size()];
    const std::optional<std::string> expected = reference_string(text);
    std::string out = "prefix:";
    auto written = bq::write_json_string(out, text);
    if (expected) {
      ++valid;
      ASSERT_TRUE(written) << testing::PrintToString(text);
      EXPECT_EQ(out, "prefix:" + *expected) << testing::PrintToString(text);
      // The same bytes inside a Value, as an object key and as a string.
      EXPECT_EQ(json(bq::Value::object({{text, text}})), "{" + *expected + ":" + *expected + "}");
    } else {
      ++invalid;
      ASSERT_FALSE(written) << testing::PrintToString(text);
      EXPECT_EQ(written.error().code(), bq::Errc::invalid_utf8);
      EXPECT_EQ(out, "prefix:");  // nothing of the failed string is left
    }
  }
  EXPECT_GT(valid, 1000U);  // both verdicts were exercised
  EXPECT_GT(invalid, 1000U);
}

TEST(JsonWriter, IntegersAreExact) {
  EXPECT_EQ(json(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(json(std::numeric_limits<std::int64_t>::max()), "9223372036854775807");
  EXPECT_EQ(json(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(json(1749132727000LL), "1749132727000");
  // Around the one- and two-digit short path, as values and inside containers.
  for (std::int64_t i : {0, 1, 9, 10, 42, 99, 100, 101, 999, -1, -9, -10, -99, -100, -101}) {
    EXPECT_EQ(json(i), std::to_string(i));
    EXPECT_EQ(json(bq::Value::array({i, i})), "[" + std::to_string(i) + "," + std::to_string(i) + "]");
  }
  EXPECT_EQ(json(bq::NumberText{"123456789012345678901234567890"}), "123456789012345678901234567890");
}

TEST(JsonWriter, DoublesUsePythonReprLayout) {
  EXPECT_EQ(dbl(1.0), "1.0");
  EXPECT_EQ(dbl(0.0), "0.0");
  EXPECT_EQ(dbl(-0.0), "-0.0");
  EXPECT_EQ(dbl(0.5), "0.5");
  EXPECT_EQ(dbl(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(dbl(123.456), "123.456");
  EXPECT_EQ(dbl(-2.5), "-2.5");
  EXPECT_EQ(dbl(100.0), "100.0");
  EXPECT_EQ(dbl(0.0001), "0.0001");  // fixed down to 1e-4
  EXPECT_EQ(dbl(0.00012), "0.00012");
  EXPECT_EQ(dbl(0.00001), "1e-05");  // exponent below that, two digits at least
  EXPECT_EQ(dbl(1e-7), "1e-07");
  EXPECT_EQ(dbl(1.5e-10), "1.5e-10");
  EXPECT_EQ(dbl(1e15), "1000000000000000.0");  // fixed below 1e16
  EXPECT_EQ(dbl(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(dbl(1e16), "1e+16");  // exponent from 1e16, with a sign
  EXPECT_EQ(dbl(1.5e300), "1.5e+300");
  EXPECT_EQ(dbl(1e21), "1e+21");
  EXPECT_EQ(dbl(123456789012345680000.0), "1.2345678901234568e+20");
  EXPECT_EQ(dbl(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(dbl(std::numeric_limits<double>::denorm_min()), "5e-324");
  EXPECT_EQ(dbl(-1e-5), "-1e-05");
}

// Python's repr() of a double, straight from std::to_chars' shortest
// scientific digits: fixed notation for 1e-4 <= |x| < 1e16 (integral values
// keep ".0"), otherwise d[.ddd]e±XX with at least two exponent digits.
std::string reference_double(double d) {
  char sci[40];
  const auto end = std::to_chars(sci, sci + sizeof sci, d, std::chars_format::scientific).ptr;
  const std::string_view text(sci, static_cast<std::size_t>(end - sci));
  const std::size_t e = text.find('e');
  std::string sign;
  std::string digits;
  for (char c : text.substr(0, e)) {
    if (c == '-') sign = "-";
    if (c >= '0' && c <= '9') digits += c;
  }
  const int exponent = std::stoi(std::string(text.substr(e + 1)));
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    const auto integer = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= integer) return sign + digits + std::string(integer - digits.size(), '0') + ".0";
    return sign + digits.substr(0, integer) + "." + digits.substr(integer);
  }
  std::string out = sign + digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int magnitude = exponent < 0 ? -exponent : exponent;
  return out + (exponent < 0 ? "e-" : "e+") + (magnitude < 10 ? "0" : "") + std::to_string(magnitude);
}

TEST(JsonWriter, DoublesAgreeWithTheShortestDigitsOfToChars) {
  // Short decimals (prices, weights: what the writer's short path takes),
  // their neighbours (which need 16 or 17 digits), integral values, binary
  // fractions (another short path), and doubles of random bits over the
  // whole range.
  std::mt19937_64 rng(20261204);
  constexpr double kScale[] = {1,   1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
                               1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17};
  std::size_t checked = 0;
  for (int round = 0; round < 200000; ++round) {
    const std::uint64_t r = rng();
    double d = 0;
    switch (round % 5) {
      case 0:  // n / 10^k: up to 17 digits with up to 17 fraction digits
        d = static_cast<double>(r % (std::uint64_t{1} << (r % 54))) / kScale[(r >> 56U) % 18];
        break;
      case 1:  // the double next to a short decimal
        d = std::nextafter(static_cast<double>(r % 100000) / kScale[(r >> 56U) % 8], (r >> 63U) != 0 ? 1e300 : 0.0);
        break;
      case 2:  // an integral value up to 2^60
        d = static_cast<double>(r >> (4 + (r % 60)));
        break;
      case 3:  // a binary fraction n / 2^j: halves, quarters, ... up to 2^-40
        d = std::ldexp(static_cast<double>(r % (std::uint64_t{1} << (r % 54))), -static_cast<int>((r >> 56U) % 41));
        break;
      default:  // any finite double
        d = std::bit_cast<double>(r);
        if (!std::isfinite(d)) continue;
        break;
    }
    if ((r >> 62U) == 1) d = -d;
    ASSERT_EQ(dbl(d), reference_double(d)) << std::hexfloat << d;
    ++checked;
  }
  EXPECT_GT(checked, 195000U);
}

TEST(JsonWriter, RejectsNanAndInfinities) {
  std::string out;
  EXPECT_EQ(bq::write_json_double(out, std::nan("")).error().code(), bq::Errc::invalid_argument);
  EXPECT_FALSE(bq::write_json_double(out, std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(bq::to_json(bq::Value::object({{"x", -std::numeric_limits<double>::infinity()}})));
}

TEST(JsonReader, ParsesNumbersIntoTheNarrowestKind) {
  auto v = bq::parse_json(
               R"({"i":-5,"u":18446744073709551615,"big":123456789012345678901234567890,"d":1.5,"e":1e400,"z":-0.0})")
               .value();
  EXPECT_EQ(v["i"].kind(), bq::Value::Kind::int64);
  EXPECT_EQ(v["u"].kind(), bq::Value::Kind::uint64);
  EXPECT_EQ(v["big"].kind(), bq::Value::Kind::number_text);
  EXPECT_EQ(v["big"].number_text(), "123456789012345678901234567890");
  EXPECT_EQ(v["d"].as_double(), 1.5);
  EXPECT_EQ(v["e"].kind(), bq::Value::Kind::number_text);  // overflows a double: text kept
  EXPECT_TRUE(std::signbit(v["z"].as_double()));
}

TEST(JsonReader, NumbersNearZeroAreReadFromTheirText) {
  // A double that underflows keeps its text like one that overflows; the text
  // is found however much white space and nesting comes before it.
  auto v = bq::parse_json(R"( { "s" : [ {"k":"x,\"]"} , 0.0 , 1e-400 , -0.0 ] , "o" : { "t" : [ 0.0e5 , 1E-999 ] } } )")
               .value();
  const auto& s = v["s"].as_array();
  EXPECT_EQ(s[1].kind(), bq::Value::Kind::floating);
  EXPECT_EQ(s[1].as_double(), 0.0);
  EXPECT_EQ(s[2].kind(), bq::Value::Kind::number_text);
  EXPECT_EQ(s[2].number_text(), "1e-400");
  EXPECT_TRUE(std::signbit(s[3].as_double()));
  const auto& t = v["o"]["t"].as_array();
  EXPECT_EQ(t[0].as_double(), 0.0);
  EXPECT_EQ(t[1].number_text(), "1E-999");
}

TEST(JsonReader, RejectsWhatIsNotStrictJson) {
  for (const char* bad : {"", "{", "{\"a\":01}", "[1,]", "{\"a\":tru}", "\"\\x\"", "{} x", "nul", "1.", "-", "[1 2]",
                          "\"\\ud800\"", "{\"a\" 1}"}) {
    EXPECT_FALSE(bq::parse_json(bad)) << bad;
  }
  EXPECT_EQ(bq::parse_json("\"\xff\"").error().code(), bq::Errc::invalid_utf8);
}

TEST(JsonReader, ScalarDocumentsAndDepthLimit) {
  EXPECT_EQ(bq::parse_json("42").value(), bq::Value(42));
  EXPECT_EQ(bq::parse_json(" \"x\" ").value(), bq::Value("x"));
  EXPECT_EQ(bq::parse_json("null").value(), bq::Value());
  EXPECT_FALSE(bq::parse_json("42 43"));
  const std::string deep = std::string(20, '[') + std::string(20, ']');
  EXPECT_TRUE(bq::parse_json(deep, {.max_depth = 20}));
  EXPECT_FALSE(bq::parse_json(deep, {.max_depth = 19}));
}

TEST(JsonReader, DuplicateKeysKeepFirstPositionLastValue) {
  auto v = bq::parse_json(R"({"a":1,"b":2,"a":3})").value();
  EXPECT_EQ(json(v), R"({"a":3,"b":2})");
}

TEST(JsonRoundTrip, ParseThenWriteIsCanonical) {
  auto v = bq::parse_json(R"({ "s" : "\u00e9\/\u2028", "n" : [ 1 , 2.50 , 1E2 ] })").value();
  EXPECT_EQ(json(v), "{\"s\":\"é/\u2028\",\"n\":[1,2.5,100.0]}");
}

}  // namespace
