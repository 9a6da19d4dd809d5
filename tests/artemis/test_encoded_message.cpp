// SPDX-License-Identifier: Apache-2.0
// Reading a received message off its bytes (amqp10/encoded_message.hpp,
// artemis::read_encoded) against proton's decoder (artemis::read_into):
// the same Delivery for every message both read, a decline (never a guess)
// for what the reading leaves to proton, and no reading past the bytes of a
// truncated, corrupted or hostile message.
#include "../../src/amqp10/encoded_message.hpp"
#include "../../src/artemis/artemis_projection.hpp"

#include <babelqueue/transport.hpp>

#include <gtest/gtest.h>

#include <proton/codec.h>
#include <proton/message.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace bq = babelqueue;
namespace amqp = babelqueue::amqp10;

namespace {

pn_bytes_t bytes_of(std::string_view text) { return pn_bytes(text.size(), text.data()); }

// Encodes m (pn_message_encode), growing the buffer as needed.
std::string encode(pn_message_t* m) {
  std::string out(256, '\0');
  for (;;) {
    std::size_t size = out.size();
    const int rc = pn_message_encode(m, out.data(), &size);
    if (rc == 0) {
      out.resize(size);
      return out;
    }
    if (rc != PN_OVERFLOW) ADD_FAILURE() << "pn_message_encode: " << rc;
    out.resize(out.size() * 2);
  }
}

struct Owned {
  pn_message_t* m = pn_message();
  ~Owned() { pn_message_free(m); }
};

// The Delivery proton's decoder gives (false when proton rejects the bytes).
bool read_by_proton(std::string_view bytes, bq::Delivery& d) {
  if (bytes.empty()) return false;  // pn_message_decode() asserts a size
  Owned decoded;
  if (pn_message_decode(decoded.m, bytes.data(), bytes.size()) != 0) return false;
  bq::artemis::read_into("orders", decoded.m, d);
  return true;
}

void expect_same(const bq::Delivery& a, const bq::Delivery& b, const std::string& what) {
  EXPECT_EQ(a.queue, b.queue) << what;
  EXPECT_EQ(a.body, b.body) << what;
  EXPECT_EQ(a.headers, b.headers) << what;
  EXPECT_EQ(a.native_attempts, b.native_attempts) << what;
  EXPECT_EQ(a.gate_rejection, b.gate_rejection) << what;
  EXPECT_EQ(a.attempts_merge, b.attempts_merge) << what;
  EXPECT_EQ(a.ordering_key, b.ordering_key) << what;
}

// A message of random shape: which sections it has, and the types and
// sizes of their fields, are drawn from rng; the application properties
// are all text (what read_encoded() reads itself).
std::string random_message(std::mt19937& rng) {
  auto coin = [&] { return std::uniform_int_distribution<int>(0, 1)(rng) == 1; };
  auto text = [&](std::size_t max) {
    std::string s(std::uniform_int_distribution<std::size_t>(0, max)(rng), '\0');
    for (auto& c : s) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    return s;
  };
  Owned m;
  pn_message_set_durable(m.m, coin());
  if (coin()) pn_message_set_priority(m.m, static_cast<std::uint8_t>(rng() % 10));
  if (coin()) pn_message_set_ttl(m.m, static_cast<pn_millis_t>(rng()));
  // Sizes either side of 255 bytes, where the encodings widen.
  if (coin()) pn_message_set_delivery_count(m.m, static_cast<std::uint32_t>(coin() ? rng() % 300 : rng()));
  std::vector<std::string> keep;  // the C setters copy, but the views must live until then
  if (coin()) {
    keep.push_back(text(300));
    pn_atom_t id{};
    id.type = PN_STRING;
    id.u.as_bytes = bytes_of(keep.back());
    pn_message_set_id(m.m, id);
  }
  if (coin()) pn_message_set_subject(m.m, "urn:babelqueue:job:orders.created:v1");
  if (coin()) pn_message_set_content_type(m.m, "application/json");
  if (coin()) pn_message_set_creation_time(m.m, static_cast<pn_timestamp_t>(rng()));
  if (coin()) {
    std::string group = text(20);
    for (auto& c : group) c = static_cast<char>('a' + static_cast<unsigned char>(c) % 26);  // C string: no NUL
    pn_message_set_group_id(m.m, group.c_str());
  }
  if (coin()) {
    pn_data_t* a = pn_message_annotations(m.m);
    pn_data_put_map(a);
    pn_data_enter(a);
    pn_data_put_symbol(a, bytes_of("x-opt-delivery-time"));
    pn_data_put_long(a, static_cast<std::int64_t>(rng()));
    pn_data_put_symbol(a, bytes_of("x-opt-jms-type"));
    pn_data_put_string(a, bytes_of("urn:babelqueue:job:orders.created:v1"));
    if (coin()) {  // an array of strings and one of described ulongs, to step over
      pn_data_put_symbol(a, bytes_of("x-strings"));
      pn_data_put_array(a, false, PN_STRING);
      pn_data_enter(a);
      const int n = std::uniform_int_distribution<int>(0, 3)(rng);
      for (int i = 0; i < n; ++i) pn_data_put_string(a, bytes_of(keep.emplace_back(text(300))));
      pn_data_exit(a);
      pn_data_put_symbol(a, bytes_of("x-described"));
      pn_data_put_array(a, true, PN_ULONG);
      pn_data_enter(a);
      pn_data_put_symbol(a, bytes_of("x-descriptor"));
      pn_data_put_ulong(a, 1);
      pn_data_put_ulong(a, rng());
      pn_data_exit(a);
    }
    if (coin()) {  // a described value and a list, which a reading must step over
      pn_data_put_symbol(a, bytes_of("x-other"));
      pn_data_put_described(a);
      pn_data_enter(a);
      pn_data_put_ulong(a, 77);
      pn_data_put_list(a);
      pn_data_enter(a);
      pn_data_put_int(a, -5);
      pn_data_put_string(a, bytes_of(text(300)));
      pn_data_exit(a);
      pn_data_exit(a);
    }
    pn_data_exit(a);
  }
  if (coin()) {
    pn_data_t* p = pn_message_properties(m.m);
    pn_data_put_map(p);
    pn_data_enter(p);
    const int count = std::uniform_int_distribution<int>(0, 6)(rng);
    for (int i = 0; i < count; ++i) {
      keep.push_back(i == 0 && coin() ? std::string("bq_schema_version") : "h" + text(3));
      pn_data_put_string(p, bytes_of(keep.back()));
      keep.push_back(i == 0 && coin() ? std::string(coin() ? "1" : "2") : text(coin() ? 10 : 300));
      switch (rng() % 3) {
        case 0: pn_data_put_string(p, bytes_of(keep.back())); break;
        case 1: pn_data_put_symbol(p, bytes_of(keep.back())); break;
        default: pn_data_put_binary(p, bytes_of(keep.back())); break;
      }
    }
    pn_data_exit(p);
  }
  keep.push_back(text(coin() ? 200 : 2000));
  pn_data_t* body = pn_message_body(m.m);
  switch (rng() % 5) {
    case 0: pn_data_put_string(body, bytes_of(keep.back())); break;
    case 1:
      pn_message_set_inferred(m.m, true);  // a data section
      pn_data_put_binary(body, bytes_of(keep.back()));
      break;
    case 2: pn_data_put_binary(body, bytes_of(keep.back())); break;  // an amqp-value of binary
    case 3: pn_data_put_null(body); break;
    default: break;  // no body
  }
  return encode(m.m);
}

// A list32 of count values whose encodings are payload.
std::string list32(std::uint32_t count, const std::string& payload) {
  std::string out = "\xd0";
  for (const std::uint32_t word : {static_cast<std::uint32_t>(payload.size() + 4), count}) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((word >> shift) & 0xff);
  }
  return out + payload;
}

bool read_by_bytes(std::string_view bytes, bq::Delivery& d) { return bq::artemis::read_encoded("orders", bytes, d); }

}  // namespace

TEST(EncodedMessage, ReadsWhatProtonReadsForMessagesOfEveryShape) {
  std::mt19937 rng(20261205U);
  for (int i = 0; i < 2000; ++i) {
    const std::string bytes = random_message(rng);
    bq::Delivery by_proton, by_bytes;
    ASSERT_TRUE(read_by_proton(bytes, by_proton)) << i;
    ASSERT_TRUE(read_by_bytes(bytes, by_bytes)) << "message " << i << " declined";
    EXPECT_TRUE(amqp::well_formed_sections(bytes)) << i;
    expect_same(by_bytes, by_proton, "message " + std::to_string(i));
  }
}

TEST(EncodedMessage, TheBindingsOwnMessageReadsAsProtonReadsIt) {
  bq::PublishOptions options;
  options.headers = {{"tenant", "acme"}, {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  options.ordering_key = "customer-42";
  bq::artemis::MessageEncoder encoder;
  amqp::EncodedMessages out;
  const std::string body =
      R"({"job":"urn:babelqueue:job:orders.created:v1","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1}})";
  ASSERT_TRUE(encoder.append(body, options, 4, out));
  bq::Delivery by_proton, by_bytes;
  ASSERT_TRUE(read_by_proton(out[0], by_proton));
  ASSERT_TRUE(read_by_bytes(out[0], by_bytes));
  expect_same(by_bytes, by_proton, "the binding's message");
  EXPECT_EQ(by_bytes.body, body);
  EXPECT_EQ(by_bytes.native_attempts, 4);
  EXPECT_EQ(by_bytes.ordering_key, "customer-42");
  EXPECT_EQ(by_bytes.headers.size(), 2U);
}

TEST(EncodedMessage, DeclinesWhatItLeavesToProton) {
  auto declined = [](auto fill) {
    Owned m;
    pn_data_put_string(pn_message_body(m.m), bytes_of("{}"));
    fill(m.m);
    const std::string bytes = encode(m.m);
    bq::Delivery d;
    EXPECT_TRUE(read_by_proton(bytes, d));  // proton reads each of them
    return !read_by_bytes(bytes, d);
  };
  // An application property that is not text: proton's reading prints it.
  EXPECT_TRUE(declined([](pn_message_t* m) {
    pn_data_t* p = pn_message_properties(m);
    pn_data_put_map(p);
    pn_data_enter(p);
    pn_data_put_string(p, bytes_of("count"));
    pn_data_put_int(p, 7);
    pn_data_exit(p);
  }));
  // A body that is neither text nor bytes.
  EXPECT_TRUE(declined([](pn_message_t* m) {
    pn_data_t* b = pn_message_body(m);
    pn_data_clear(b);
    pn_data_put_list(b);
    pn_data_enter(b);
    pn_data_put_int(b, 1);
    pn_data_exit(b);
  }));
  // An array as a property's value: not text.
  EXPECT_TRUE(declined([](pn_message_t* m) {
    pn_data_t* p = pn_message_properties(m);
    pn_data_put_map(p);
    pn_data_enter(p);
    pn_data_put_string(p, bytes_of("list"));
    pn_data_put_array(p, false, PN_INT);
    pn_data_enter(p);
    pn_data_put_int(p, 1);
    pn_data_exit(p);
    pn_data_exit(p);
  }));
}

TEST(EncodedMessage, PropertiesOfTypesAmqpDoesNotAllowThereAreReadNotThrownOver) {
  // A list where AMQP allows only simple values, as the gate and as a
  // header; a key that is no string. proton's own conversion throws on
  // each (the reader then ran again on the receiving thread, and threw out
  // of receive()).
  Owned m;
  pn_data_put_string(pn_message_body(m.m), bytes_of("{}"));
  pn_data_t* p = pn_message_properties(m.m);
  pn_data_put_map(p);
  pn_data_enter(p);
  for (const char* name : {"bq_schema_version", "tags"}) {
    pn_data_put_string(p, bytes_of(name));
    pn_data_put_list(p);
    pn_data_enter(p);
    pn_data_put_int(p, 1);
    pn_data_exit(p);
  }
  pn_data_put_int(p, 7);
  pn_data_put_string(p, bytes_of("seven"));
  pn_data_exit(p);
  const std::string bytes = encode(m.m);
  bq::Delivery d;
  EXPECT_FALSE(read_by_bytes(bytes, d));
  ASSERT_TRUE(read_by_proton(bytes, d));
  EXPECT_EQ(d.body, "{}");
  EXPECT_EQ(d.gate_rejection, bq::Rejection::schema_version_gate);
  EXPECT_EQ(d.headers.count("tags"), 1U);
  EXPECT_EQ(d.headers.count("7"), 1U);
}

TEST(EncodedMessage, TellsBytesThatAreNoMessageFromMessagesItOnlyDeclines) {
  Owned m;
  pn_data_put_string(pn_message_body(m.m), bytes_of("{}"));
  const std::string message = encode(m.m);
  EXPECT_TRUE(amqp::well_formed_sections(message));
  // Bytes that are no message, which proton's decoder mostly takes for an
  // empty message without an error.
  for (const std::string& not_a_message :
       {std::string(), std::string(R"({"job":"urn:babelqueue:job:orders.created:v1"})"), std::string("\x01\x02\x03", 3),
        std::string("\x00\x53\x77", 3), message + "junk", message.substr(0, message.size() - 1)}) {
    EXPECT_FALSE(amqp::well_formed_sections(not_a_message)) << not_a_message.size() << " bytes";
  }
  const std::string json = R"({"job":"urn:babelqueue:job:orders.created:v1"})";
  Owned decoded;
  EXPECT_EQ(pn_message_decode(decoded.m, json.data(), json.size()), 0);  // why the check is ours
  // Declined by the reading, but AMQP sections all the same: proton's to read.
  EXPECT_TRUE(amqp::well_formed_sections(std::string("\x00\xa3\x16", 3) + "amqp:amqp-value:*list*" + "\xa1\x02{}"));
  EXPECT_TRUE(amqp::well_formed_sections(std::string("\x00\x53\x76\x45", 4)));
  std::string deep = "\x45";
  for (int i = 0; i < 1000; ++i) deep = list32(1, deep);
  EXPECT_TRUE(amqp::well_formed_sections(std::string("\x00\x53\x77", 3) + deep));  // too deep to tell: proton's
}

TEST(EncodedMessage, DeclinesSectionsItDoesNotCover) {
  // A symbolic descriptor, an amqp-sequence body, two data sections, and a
  // section twice: proton's to read (or reject).
  const std::string value = std::string("\x00\x53\x77\xa1\x02{}", 7);
  const std::string symbolic = std::string("\x00\xa3\x16", 3) + "amqp:amqp-value:*list*" + "\xa1\x02{}";
  const std::string sequence = std::string("\x00\x53\x76\x45", 4);
  const std::string data = std::string("\x00\x53\x75\xa0\x01x", 6);
  bq::Delivery d;
  EXPECT_TRUE(read_by_bytes(value, d));
  EXPECT_EQ(d.body, "{}");
  EXPECT_TRUE(read_by_bytes(data, d));
  EXPECT_EQ(d.body, "x");
  EXPECT_FALSE(read_by_bytes(symbolic, d));
  EXPECT_FALSE(read_by_bytes(sequence, d));
  EXPECT_FALSE(read_by_bytes(data + data, d));
  EXPECT_FALSE(read_by_bytes(value + value, d));
  EXPECT_FALSE(read_by_bytes(std::string("\x00\x53\x79\x45", 4), d));  // no such section
  EXPECT_FALSE(read_by_bytes("", d));  // no message at all (the client gives such a transfer back)
}

TEST(EncodedMessage, EveryTruncationAndCorruptionIsDeclinedOrReadAsProtonReadsIt) {
  std::mt19937 rng(7);
  int read_both = 0, declined = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string whole = random_message(rng);
    auto check = [&](const std::string& bytes, const std::string& what) {
      bq::Delivery by_bytes, by_proton;
      if (!read_by_bytes(bytes, by_bytes)) {
        ++declined;
        return;
      }
      ASSERT_TRUE(read_by_proton(bytes, by_proton)) << what << ": read off the bytes, rejected by proton";
      expect_same(by_bytes, by_proton, what);
      ++read_both;
    };
    for (std::size_t n = 0; n < whole.size(); ++n) check(whole.substr(0, n), "a prefix of " + std::to_string(n));
    for (std::size_t at = 0; at < whole.size(); ++at) {
      for (const int to : {0x00, 0x01, 0x40, 0x7f, 0x80, 0xa1, 0xb1, 0xc0, 0xd1, 0xff}) {
        std::string bytes = whole;
        bytes[at] = static_cast<char>(to);
        check(bytes, "byte " + std::to_string(at) + " set to " + std::to_string(to));
      }
    }
  }
  EXPECT_GT(read_both, 0);
  EXPECT_GT(declined, 0);
}

TEST(EncodedMessage, SizesAndCountsThatClaimMoreThanTheBytesHoldAreDeclined) {
  amqp::EncodedValue v;
  // A str32 of 4 GiB - 1, a list32 of 2^32 - 1 elements, a map of an odd
  // count, each in a few bytes.
  EXPECT_FALSE(amqp::ValueCursor(std::string("\xb1\xff\xff\xff\xff"
                                             "abc",
                                             8))
                   .next(v));
  EXPECT_FALSE(amqp::ValueCursor(std::string("\xd0\x00\x00\x00\x05\xff\xff\xff\xff\x40", 10)).next(v));
  EXPECT_FALSE(amqp::ValueCursor(std::string("\xc1\x02\x01\x40", 4)).next(v));
  // A list whose size leaves bytes its count does not take.
  EXPECT_FALSE(amqp::ValueCursor(std::string("\xc0\x03\x01\x40\x40", 5)).next(v));
  EXPECT_TRUE(amqp::ValueCursor(std::string("\xc0\x03\x02\x40\x40", 5)).next(v));
  EXPECT_EQ(v.count, 2U);
  // Lists nested deeper than the reading goes: declined, not a deep recursion.
  std::string deep = "\x45";
  for (int i = 0; i < 10000; ++i) deep = list32(1, deep);
  EXPECT_FALSE(amqp::ValueCursor(deep).next(v));
  std::string shallow = "\x45";
  for (int i = 0; i < 10; ++i) shallow = list32(1, shallow);
  EXPECT_TRUE(amqp::ValueCursor(shallow).next(v));
  std::string described;
  for (int i = 0; i < 10000; ++i) described += std::string("\x00\x53\x01", 3);
  EXPECT_FALSE(amqp::ValueCursor(list32(1, described + "\x40")).next(v));
  EXPECT_TRUE(amqp::ValueCursor(list32(1, std::string("\x00\x53\x01\x40", 4))).next(v));
}
