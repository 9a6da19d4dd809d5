// SPDX-License-Identifier: Apache-2.0
// DataWriter: a typed message's write_data makes the bytes its to_value()
// makes, and every mistake fails the make with nothing sent.
#include "fixed_make_options.hpp"

#include <babelqueue/data_writer.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/memory/transport.hpp>
#include <babelqueue/publisher.hpp>
#include <babelqueue/worker.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace bq = babelqueue;

namespace {

using bq::test_support::fixed_make_options;
bq::MakeOptions fixed() { return fixed_make_options(); }

// What value() takes: a bool only as itself, a number exactly, a character
// or a pointer never (they would pass for a number or true).
template <class T>
concept Writable = requires(bq::DataWriter& out, T v) {
  out.value(v);
};
static_assert(Writable<bool> && Writable<int> && Writable<std::uint64_t> && Writable<signed char>);
static_assert(Writable<double> && Writable<float> && Writable<const char*> && Writable<std::string>);
static_assert(Writable<std::nullptr_t> && Writable<std::optional<int>>);
static_assert(!Writable<char> && !Writable<char8_t> && !Writable<wchar_t> && !Writable<char32_t>);
static_assert(!Writable<const int*> && !Writable<void*>);

// ---- the corpus: each struct writes the same data both ways ---------------------

struct Scalars {
  static constexpr std::string_view urn = "urn:test:scalars";

  void write_data(bq::DataWriter& out) const {
    out.begin_object()
        .member("null", nullptr)
        .member("true", true)
        .member("false", false)
        .member("zero", 0)
        .member("minus_one", -1)
        .member("int64_min", std::numeric_limits<std::int64_t>::min())
        .member("int64_max", std::numeric_limits<std::int64_t>::max())
        .member("uint64_max", std::numeric_limits<std::uint64_t>::max())
        .member("uint64_zero", std::uint64_t{0})
        .member("int8", std::int8_t{-128})
        .member("uint8", std::uint8_t{255})
        .member("int16", std::int16_t{-32768})
        .member("uint16", std::uint16_t{65535})
        .member("int32", std::numeric_limits<std::int32_t>::min())
        .member("uint32", std::numeric_limits<std::uint32_t>::max())
        .member("long_long", 99LL)
        .member("float", 0.1F);
    out.key("doubles").begin_array();
    for (double d : doubles()) out.value(d);
    out.end_array();
    out.key("strings").begin_array();
    for (const std::string& s : strings()) out.value(s);
    out.value("a literal").value(std::string_view("a view"));
    out.end_array();
    out.member("none", std::optional<std::int64_t>()).member("some", std::optional<std::string>("text"));
    out.end_object();
  }

  bq::Value to_value() const {
    bq::Array ds;
    for (double d : doubles()) ds.emplace_back(d);
    bq::Array ss;
    for (const std::string& s : strings()) ss.emplace_back(s);
    ss.emplace_back("a literal");
    ss.emplace_back(std::string_view("a view"));
    return bq::Value::object({{"null", nullptr},
                              {"true", true},
                              {"false", false},
                              {"zero", 0},
                              {"minus_one", -1},
                              {"int64_min", std::numeric_limits<std::int64_t>::min()},
                              {"int64_max", std::numeric_limits<std::int64_t>::max()},
                              {"uint64_max", std::numeric_limits<std::uint64_t>::max()},
                              {"uint64_zero", std::uint64_t{0}},
                              {"int8", std::int8_t{-128}},
                              {"uint8", std::uint8_t{255}},
                              {"int16", std::int16_t{-32768}},
                              {"uint16", std::uint16_t{65535}},
                              {"int32", std::numeric_limits<std::int32_t>::min()},
                              {"uint32", std::numeric_limits<std::uint32_t>::max()},
                              {"long_long", 99LL},
                              {"float", 0.1F},
                              {"doubles", std::move(ds)},
                              {"strings", std::move(ss)},
                              {"none", nullptr},
                              {"some", "text"}});
  }
  static Scalars from_value(const bq::Value&) { return {}; }

  static std::vector<double> doubles() {
    return {0.0,
            -0.0,
            1.5,
            -2.25,
            0.1,
            1e-4,
            9.999e-5,
            123456789.123,
            1e15,
            1e16,
            -1e16,
            12345678901234567890.0,
            1e-300,
            5e-324,
            -2.2250738585072014e-308,
            std::numeric_limits<double>::max(),
            std::numeric_limits<double>::lowest(),
            1e21,
            1e22,
            0x1p52,
            0x1p53 + 2,
            3.141592653589793,
            1.0 / 3.0};
  }

  static std::vector<std::string> strings() {
    return {"",
            "plain",
            "\"quoted\" \\ back/slash",
            std::string("\b\f\n\r\t\x01\x1f\x7f", 8),
            std::string("nul\0inside", 10),
            "Zoë Ångström, 東京タワー, Ελληνικό, 😀",
            "a string longer than a block, with an escape \n in its middle and more text after it",
            "ééééééééééééééééééééééééé",
            "U+10FFFF \xf4\x8f\xbf\xbf and U+FFFD \xef\xbf\xbd"};
  }
};

struct Containers {
  static constexpr std::string_view urn = "urn:test:containers";

  void write_data(bq::DataWriter& out) const {
    out.begin_object();
    out.key("empty_object").begin_object().end_object();
    out.key("empty_array").begin_array().end_array();
    out.key("matrix").begin_array();
    for (int row = 0; row < 3; ++row) {
      out.begin_array();
      for (int col = 0; col < row; ++col) out.value(row * 10 + col);
      out.end_array();
    }
    out.end_array();
    out.key("records").begin_array();
    for (int i = 0; i < 3; ++i) {
      // The same keys in every record: a key is unique within its own object.
      out.begin_object().member("id", i).key("tags").begin_array().value("t").value(i % 2 == 0).end_array();
      out.key("nested").begin_object().key("empty").begin_object().end_object().end_object();
      out.end_object();
    }
    out.end_array();
    out.key("deep");
    for (int i = 0; i < 10; ++i) out.begin_array();
    out.begin_object().member("bottom", true).end_object();
    for (int i = 0; i < 10; ++i) out.end_array();
    // A key with escapes and non-ASCII, and its unescaped twin elsewhere.
    out.member("ké\"y\n", 1).member("ké\"y", 2);
    // Keys of one size and one first 8 bytes, told apart by their bytes.
    out.member("a_long_key_one", 3).member("a_long_key_two", 4).member("a_long_\"ey_one", 5);
    out.end_object();
  }

  bq::Value to_value() const {
    bq::Array matrix;
    for (int row = 0; row < 3; ++row) {
      bq::Array cols;
      for (int col = 0; col < row; ++col) cols.emplace_back(row * 10 + col);
      matrix.emplace_back(std::move(cols));
    }
    bq::Array records;
    for (int i = 0; i < 3; ++i) {
      records.push_back(bq::Value::object({{"id", i},
                                           {"tags", bq::Value::array({"t", i % 2 == 0})},
                                           {"nested", bq::Value::object({{"empty", bq::Value::object()}})}}));
    }
    bq::Value deep = bq::Value::object({{"bottom", true}});
    for (int i = 0; i < 10; ++i) deep = bq::Value(bq::Array{std::move(deep)});
    return bq::Value::object({{"empty_object", bq::Value::object()},
                              {"empty_array", bq::Value::array()},
                              {"matrix", std::move(matrix)},
                              {"records", std::move(records)},
                              {"deep", std::move(deep)},
                              {"ké\"y\n", 1},
                              {"ké\"y", 2},
                              {"a_long_key_one", 3},
                              {"a_long_key_two", 4},
                              {"a_long_\"ey_one", 5}});
  }
  static Containers from_value(const bq::Value&) { return {}; }
};

struct EmptyData {
  static constexpr std::string_view urn = "urn:test:empty";
  void write_data(bq::DataWriter& out) const { out.begin_object().end_object(); }
  bq::Value to_value() const { return bq::Value::object(); }
  static EmptyData from_value(const bq::Value&) { return {}; }
};

// Keys the compiler does not know (built at run time, unlike the literals
// above, whose test it settles while compiling): every size around a block,
// escapes and non-ASCII among them, and more keys in one object than the key
// stack first holds, many sharing a bit of the duplicate check.
struct RuntimeKeys {
  static constexpr std::string_view urn = "urn:test:runtime-keys";

  static std::vector<std::string> keys() {
    std::vector<std::string> names;
    for (std::size_t size = 0; size <= 2 * 16 + 1; ++size) names.push_back(std::string(size, 'k') + "#");
    names.emplace_back("ké\"y\n");
    names.emplace_back("ké\"y");
    for (int i = 0; i < 300; ++i) names.push_back("key_" + std::to_string(i));
    return names;
  }

  void write_data(bq::DataWriter& out) const {
    out.begin_object();
    int i = 0;
    for (const std::string& name : keys()) out.member(name, i++);
    out.key(std::string("nested")).begin_object();
    for (const std::string& name : keys()) out.key(name).value(name);
    out.end_object().end_object();
  }

  bq::Value to_value() const {
    bq::Object nested;
    bq::Object top;
    int i = 0;
    for (const std::string& name : keys()) {
      top.set(name, i++);
      nested.set(name, name);
    }
    top.set("nested", std::move(nested));
    return bq::Value(std::move(top));
  }
  static RuntimeKeys from_value(const bq::Value&) { return {}; }
};

template <class T>
void expect_same_bytes_both_ways() {
  const T message;
  auto direct = bq::Envelope::make(message, fixed());
  ASSERT_TRUE(direct) << direct.error().message();
  auto through_value = bq::Envelope::make(T::urn, message.to_value(), fixed());
  ASSERT_TRUE(through_value) << through_value.error().message();
  EXPECT_EQ(direct->body(), through_value->body());
  EXPECT_EQ(direct->data_json(), through_value->data_json());
  EXPECT_TRUE(bq::accepts(*direct));
  auto decoded = bq::Envelope::decode(direct->body());
  ASSERT_TRUE(decoded) << decoded.error().detail;
  EXPECT_TRUE(bq::accepts(*decoded));
  EXPECT_EQ(decoded->urn(), T::urn);
  EXPECT_EQ(decoded->data(), message.to_value());
  EXPECT_EQ(decoded->data_json(), direct->data_json());
}

TEST(DataWriter, ScalarsAreTheBytesOfTheirValue) { expect_same_bytes_both_ways<Scalars>(); }
TEST(DataWriter, ContainersAreTheBytesOfTheirValue) { expect_same_bytes_both_ways<Containers>(); }
TEST(DataWriter, AnEmptyObjectIsTheBytesOfItsValue) { expect_same_bytes_both_ways<EmptyData>(); }
TEST(DataWriter, RuntimeKeysAreTheBytesOfTheirValue) { expect_same_bytes_both_ways<RuntimeKeys>(); }

// A thread's first make starts with an empty buffer and empty stacks: they
// grow in the middle of data, and the bytes stay those of the Value.
TEST(DataWriter, AFreshThreadGrowsItsBuffersInTheMiddleOfData) {
  std::thread([] {
    expect_same_bytes_both_ways<RuntimeKeys>();
    expect_same_bytes_both_ways<Containers>();
    expect_same_bytes_both_ways<Scalars>();
  }).join();
}

TEST(DataWriter, WritesTheCanonicalFrame) {
  auto env = bq::Envelope::make(EmptyData{}, fixed()).value();
  EXPECT_EQ(env.body(), R"({"job":"urn:test:empty","trace_id":"7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b","data":{},)"
                        R"("meta":{"id":"f1e2d3c4-b5a6-4789-90ab-cdef01234567","queue":"orders","lang":"cpp",)"
                        R"("schema_version":1,"created_at":1749132727000},"attempts":0})");
}

// The deepest data an envelope may hold decodes; one level more is refused.
struct Nested {
  static constexpr std::string_view urn = "urn:test:nested";
  std::size_t depth = 1;
  void write_data(bq::DataWriter& out) const {
    out.begin_object().key("a");
    for (std::size_t i = 1; i < depth; ++i) out.begin_array();
    out.value(1);
    for (std::size_t i = 1; i < depth; ++i) out.end_array();
    out.end_object();
  }
};

TEST(DataWriter, NestsAsDeepAsTheEnvelopeMayHold) {
  auto deepest = bq::Envelope::make(Nested{bq::DataWriter::kMaxDepth}, fixed());
  ASSERT_TRUE(deepest) << deepest.error().message();
  auto decoded = bq::Envelope::decode(deepest->body());
  ASSERT_TRUE(decoded) << decoded.error().detail;
  EXPECT_TRUE(bq::accepts(*decoded));

  auto deeper = bq::Envelope::make(Nested{bq::DataWriter::kMaxDepth + 1}, fixed());
  ASSERT_FALSE(deeper);
  EXPECT_EQ(deeper.error().code(), bq::Errc::invalid_argument);
  EXPECT_NE(deeper.error().message().find("deeper than 511 levels"), std::string::npos) << deeper.error().message();
}

// A type that writes data only: enough to publish.
struct PublishOnly {
  static constexpr std::string_view urn = "urn:test:publish-only";
  std::int64_t n = 7;
  void write_data(bq::DataWriter& out) const { out.begin_object().member("n", n).end_object(); }
};
static_assert(bq::WritesData<PublishOnly> && !bq::TypedMessage<PublishOnly>);
static_assert(bq::PublishableMessage<PublishOnly>);

// A make inside write_data (the user's code runs in the middle of make) does
// not disturb the make around it.
struct MakesInside {
  static constexpr std::string_view urn = "urn:test:makes-inside";
  void write_data(bq::DataWriter& out) const {
    out.begin_object().member("before", 1);
    auto inner = bq::Envelope::make(Containers{}, fixed());
    out.member("inner_ok", static_cast<bool>(inner)).member("after", 2).end_object();
  }
};

TEST(DataWriter, AMakeInsideWriteDataLeavesTheOuterOneIntact) {
  auto env = bq::Envelope::make(MakesInside{}, fixed()).value();
  EXPECT_EQ(env.data_json(), R"({"before":1,"inner_ok":true,"after":2})");
}

// ---- random data: the writer's own tokens against the Value's ---------------------

// Writes a Value through the DataWriter, scalars of an object half the time by
// member() and half by key() and value(): every inline and out-of-line token
// on data the compiler cannot see.
struct WalksValue {
  static constexpr std::string_view urn = "urn:test:walks-value";
  const bq::Value* data = nullptr;
  std::uint64_t seed = 0;

  void write_data(bq::DataWriter& out) const {
    std::uint64_t choice = seed;
    walk(out, *data, choice);
  }

  static void walk(bq::DataWriter& out, const bq::Value& v, std::uint64_t& choice) {
    switch (v.kind()) {
      case bq::Value::Kind::object:
        out.begin_object();
        for (const auto& [key, member] : v.as_object()) {
          choice = choice * 6364136223846793005ULL + 1442695040888963407ULL;
          if ((choice >> 60U) % 2 == 0 && scalar_member(out, key, member)) continue;
          out.key(key);
          walk(out, member, choice);
        }
        out.end_object();
        return;
      case bq::Value::Kind::array:
        out.begin_array();
        for (const bq::Value& item : v.as_array()) walk(out, item, choice);
        out.end_array();
        return;
      case bq::Value::Kind::null: out.value(nullptr); return;
      case bq::Value::Kind::boolean: out.value(v.as_bool()); return;
      case bq::Value::Kind::int64: out.value(v.as_int64()); return;
      case bq::Value::Kind::uint64: out.value(v.as_uint64()); return;
      case bq::Value::Kind::floating: out.value(v.as_double()); return;
      case bq::Value::Kind::string: out.value(v.as_string()); return;
      case bq::Value::Kind::number_text: FAIL() << "not generated";
    }
  }

  static bool scalar_member(bq::DataWriter& out, const std::string& key, const bq::Value& v) {
    switch (v.kind()) {
      case bq::Value::Kind::boolean: out.member(key, v.as_bool()); return true;
      case bq::Value::Kind::int64: out.member(key, v.as_int64()); return true;
      case bq::Value::Kind::uint64: out.member(key, v.as_uint64()); return true;
      case bq::Value::Kind::floating: out.member(key, v.as_double()); return true;
      case bq::Value::Kind::string: out.member(key, v.as_string()); return true;
      default: return false;
    }
  }
};

// Random JSON: strings of every length around a block with escapes, control
// characters, non-ASCII text and now and then a byte that is not UTF-8;
// integers of every size; doubles from random bits.
class RandomJson {
 public:
  explicit RandomJson(std::uint64_t seed) : rng_(seed) {}

  bq::Value object(int depth) {
    bq::Object members;
    const std::size_t n = below(depth == 0 ? 12 : 6);
    for (std::size_t i = 0; i < n; ++i) members.set(text(), value(depth + 1));
    return bq::Value(std::move(members));
  }

 private:
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }

  bq::Value value(int depth) {
    switch (below(depth < 4 ? 9 : 7)) {
      case 0: return nullptr;
      case 1: return below(2) == 0;
      case 2: {
        const auto magnitude = static_cast<std::int64_t>(rng_() >> (1 + below(63)));
        return below(2) == 0 ? magnitude : -magnitude;
      }
      case 3: return static_cast<std::int64_t>(below(200)) - 100;
      case 4: return std::uint64_t{rng_()} | (std::uint64_t{1} << 63U);
      case 5: {
        double d = 0;
        do {
          const std::uint64_t bits = rng_();
          std::memcpy(&d, &bits, sizeof d);
        } while (!std::isfinite(d));
        return below(2) == 0 ? d : static_cast<double>(below(100000)) / 8.0;
      }
      case 6: return text();
      case 7: {
        bq::Array items;
        for (std::size_t i = below(5); i > 0; --i) items.push_back(value(depth + 1));
        return bq::Value(std::move(items));
      }
      default: return object(depth + 1);
    }
  }

  std::string text() {
    static constexpr std::string_view kPieces[] = {
        "a", "key", "x_1", " ", "\"", "\\", "\n", "\x01", "\x1f", "\x7f", "é", "東京", "😀", "/", "0123456789abcdef"};
    std::string out;
    const std::size_t pieces = below(4) == 0 ? below(40) : below(8);
    for (std::size_t i = 0; i < pieces; ++i) out += kPieces[below(std::size(kPieces))];
    if (below(50) == 0) out.insert(below(out.size() + 1), 1, static_cast<char>(0x80 + below(0x80)));
    return out;
  }

  std::mt19937_64 rng_;
};

TEST(DataWriter, RandomDataIsTheBytesOfItsValueOrTheSameError) {
  int failures = 0;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    SCOPED_TRACE(seed);
    RandomJson random(seed);
    const bq::Value data = random.object(0);
    auto direct = bq::Envelope::make(WalksValue{&data, seed}, fixed());
    auto through_value = bq::Envelope::make(WalksValue::urn, data, fixed());
    ASSERT_EQ(direct.has_value(), through_value.has_value())
        << (direct ? through_value.error().message() : direct.error().message());
    if (!direct) {
      ++failures;
      EXPECT_EQ(direct.error().code(), through_value.error().code());
      EXPECT_EQ(direct.error().message(), through_value.error().message());
      continue;
    }
    ASSERT_EQ(direct->body(), through_value->body());
  }
  // Some documents hold a byte that is not UTF-8, most do not.
  EXPECT_GT(failures, 0);
  EXPECT_LT(failures, 1500);
}

// ---- mistakes: the first one is the make's error, and nothing is sent ------------

struct Scripted {
  static constexpr std::string_view urn = "urn:test:scripted";
  std::function<void(bq::DataWriter&)> script;
  void write_data(bq::DataWriter& out) const { script(out); }
};

struct Mistake {
  const char* name;
  std::function<void(bq::DataWriter&)> script;
  bq::Errc code;
  std::string_view message;  // a part of the error's message
};

std::vector<Mistake> mistakes() {
  using bq::DataWriter;
  const auto e = bq::Errc::invalid_argument;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"invalid UTF-8 in a value", [](DataWriter& w) { w.begin_object().member("s", "bad \xc3\x28").end_object(); },
       bq::Errc::invalid_utf8, "string is not valid UTF-8"},
      {"invalid UTF-8 in a key", [](DataWriter& w) { w.begin_object().member("\xff", 1).end_object(); },
       bq::Errc::invalid_utf8, "string is not valid UTF-8"},
      {"a surrogate", [](DataWriter& w) { w.begin_object().member("s", "\xed\xa0\x80").end_object(); },
       bq::Errc::invalid_utf8, "string is not valid UTF-8"},
      {"NaN", [nan](DataWriter& w) { w.begin_object().member("x", nan).end_object(); }, e,
       "NaN and infinities cannot be written as JSON"},
      {"an infinity in an array", [inf](DataWriter& w) { w.begin_object().key("a").begin_array().value(-inf); }, e,
       "NaN and infinities cannot be written as JSON"},
      {"a duplicate key", [](DataWriter& w) { w.begin_object().member("a", 1).member("b", 2).member("a", 3); }, e,
       "the key \"a\" twice in one object"},
      {"a duplicate long key",
       [](DataWriter& w) {
         w.begin_object().member("a_long_key_one", 1).member("a_long_key_two", 2).key("a_long_key_one").value(3);
       },
       e, "the key \"a_long_key_one\" twice"},
      {"a duplicate key among many",
       [](DataWriter& w) {
         w.begin_object();
         for (int i = 0; i < 200; ++i) w.member("key_" + std::to_string(i), i);
         w.member(std::string("key_142"), 0);
       },
       e, "the key \"key_142\" twice"},
      {"a duplicate key written by key() and by member()",
       [](DataWriter& w) { w.begin_object().key("k").value(true).member("k", false); }, e, "the key \"k\" twice"},
      {"a duplicate key in a nested object",
       [](DataWriter& w) { w.begin_object().member("a", 1).key("o").begin_object().member("k", 1).member("k", 2); }, e,
       "the key \"k\" twice"},
      {"a value where a key is due", [](DataWriter& w) { w.begin_object().value(1).end_object(); }, e,
       "a key is due in a data object, got int64"},
      {"an object where a key is due", [](DataWriter& w) { w.begin_object().begin_object(); }, e,
       "a key is due in a data object, got object"},
      {"a key where its value is due", [](DataWriter& w) { w.begin_object().key("a").key("b"); }, e,
       "key \"b\" where the previous key's value is due"},
      {"a key in an array", [](DataWriter& w) { w.begin_object().key("a").begin_array().key("b"); }, e,
       "key \"b\" outside an object"},
      {"a key before data is opened", [](DataWriter& w) { w.key("a"); }, e, "key \"a\" outside an object"},
      {"a key without a value at the end", [](DataWriter& w) { w.begin_object().key("a").end_object(); }, e,
       "end_object() after a key without its value"},
      {"data that is an array", [](DataWriter& w) { w.begin_array().end_array(); }, e,
       "data must be a JSON object, got array"},
      {"data that is a string", [](DataWriter& w) { w.value("text"); }, e, "data must be a JSON object, got string"},
      {"end_array closing an object", [](DataWriter& w) { w.begin_object().end_array(); }, e,
       "end_array() closes an object"},
      {"end_object closing an array", [](DataWriter& w) { w.begin_object().key("a").begin_array().end_object(); }, e,
       "end_object() closes an array"},
      {"an end with nothing open", [](DataWriter& w) { w.end_object(); }, e, "end_object() without an open object"},
      {"one end too many", [](DataWriter& w) { w.begin_object().end_object().end_object(); }, e,
       "end_object() without an open object"},
      {"a value after data is complete", [](DataWriter& w) { w.begin_object().end_object().value(1); }, e,
       "data is complete"},
      {"an unfinished object", [](DataWriter& w) { w.begin_object().key("a").begin_array().value(1); }, e,
       "data is unfinished: 2 object or array still open"},
      {"nothing written", [](DataWriter&) {}, e, "write_data wrote nothing"},
      {"a null const char*", [](DataWriter& w) { w.begin_object().member("s", static_cast<const char*>(nullptr)); }, e,
       "a null const char* is not a string"},
  };
}

TEST(DataWriter, EachMistakeFailsTheMakeWithItsError) {
  for (const Mistake& m : mistakes()) {
    SCOPED_TRACE(m.name);
    auto made = bq::Envelope::make(Scripted{m.script}, fixed());
    ASSERT_FALSE(made);
    EXPECT_EQ(made.error().code(), m.code);
    EXPECT_NE(made.error().message().find(m.message), std::string::npos) << made.error().message();
  }
}

TEST(DataWriter, TheFirstMistakeIsTheOneReported) {
  auto made = bq::Envelope::make(Scripted{[](bq::DataWriter& w) {
                                   w.begin_object().value(1);  // a key was due
                                   EXPECT_TRUE(w.failed());
                                   w.member("a", std::numeric_limits<double>::quiet_NaN()).end_object();
                                 }},
                                 fixed());
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().message(), "a key is due in a data object, got int64");
}

TEST(DataWriter, AMistakeIsNotPublished) {
  bq::memory::Transport transport;
  bq::PublisherOptions options;
  options.default_queue = "orders";
  bq::Publisher publisher(transport, options);
  for (const Mistake& m : mistakes()) {
    SCOPED_TRACE(m.name);
    auto sent = publisher.publish(Scripted{m.script});
    ASSERT_FALSE(sent);
    EXPECT_EQ(sent.error().code(), m.code);
    auto async = publisher.publish_async(Scripted{m.script}).get();
    ASSERT_FALSE(async);
    EXPECT_EQ(async.error().code(), m.code);
  }
  const std::vector<Scripted> batch = {Scripted{[](bq::DataWriter& w) { w.begin_object().end_object(); }},
                                       Scripted{mistakes().front().script}};
  EXPECT_FALSE(publisher.publish_batch(std::span<const Scripted>(batch)));
  EXPECT_TRUE(transport.peek("orders", 10).value().empty());

  bq::Worker worker(transport);
  EXPECT_FALSE(worker.publish(Scripted{mistakes().front().script}, {.queue = "orders"}));
  EXPECT_TRUE(transport.peek("orders", 10).value().empty());
}

// ---- every typed publish takes the straight path ----------------------------------

TEST(DataWriter, PublisherAndWorkerSendWhatWriteDataWrites) {
  bq::memory::Transport transport;
  bq::PublisherOptions options;
  options.default_queue = "orders";
  bq::Publisher publisher(transport, options);
  ASSERT_TRUE(publisher.publish(PublishOnly{1}));
  ASSERT_TRUE(publisher.publish_async(PublishOnly{2}).get());
  const std::vector<PublishOnly> batch = {PublishOnly{3}, PublishOnly{4}};
  ASSERT_TRUE(publisher.publish_batch(std::span<const PublishOnly>(batch)));
  bq::Worker worker(transport);
  ASSERT_TRUE(worker.publish(PublishOnly{5}, {.queue = "orders"}));

  auto sent = transport.peek("orders", 10).value();
  ASSERT_EQ(sent.size(), 5U);
  for (std::size_t i = 0; i < sent.size(); ++i) {
    auto env = bq::Envelope::decode(sent[i].body).value();
    EXPECT_TRUE(bq::accepts(env));
    EXPECT_EQ(env.urn(), PublishOnly::urn);
    EXPECT_EQ(env.data_json(), "{\"n\":" + std::to_string(i + 1) + "}");
  }
}

}  // namespace
