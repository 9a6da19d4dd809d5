// SPDX-License-Identifier: Apache-2.0
// The Pulsar protocol layer without a broker: the protobuf wire format,
// commands, frames (checksums, truncation, unknown commands, size limits),
// message metadata, batches and the four compression codecs, on frames
// built here byte by byte where the format is the point.
#include "proto_wire.hpp"
#include "pulsar_commands.hpp"
#include "pulsar_frame.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace pd = babelqueue::pulsar_detail;
using babelqueue::Errc;

namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// A MESSAGE frame for consumer 7 of entry 12:34 with the given metadata and
// payload, redelivered redelivery times.
std::string message_frame(const pd::MessageMetadata& metadata, const std::string& payload,
                          std::uint32_t redelivery = 0) {
  pd::ProtoWriter id;
  id.varint(1, 12);
  id.varint(2, 34);
  pd::ProtoWriter message;
  message.varint(1, 7);
  message.message(2, id);
  if (redelivery != 0) message.varint(3, redelivery);
  pd::ProtoWriter command;
  command.varint(1, 9);
  command.message(9, message);
  return pd::payload_frame(command.data(), pd::encode_metadata(metadata), payload);
}

pd::MessageMetadata plain_metadata() {
  pd::MessageMetadata m;
  m.producer_name = "standalone-0-1";
  m.sequence_id = 5;
  m.publish_time = 1749132727000;
  m.properties = {{"bq-job", "urn:babel:orders:created"}, {"bq-attempts", "0"}};
  return m;
}

}  // namespace

TEST(PulsarWire, VarintsAndLengthsRoundTrip) {
  pd::ProtoWriter w;
  w.varint(1, 0);
  w.varint(2, 300);
  w.varint(3, UINT64_MAX);
  w.signed_varint(4, -1);
  w.bytes(5, "hello");
  pd::ProtoReader r(w.data());
  std::vector<std::uint64_t> values;
  std::string text;
  while (r.next()) {
    if (r.field() == 5) {
      text = r.bytes();
    } else {
      values.push_back(r.varint());
    }
  }
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(values, (std::vector<std::uint64_t>{0, 300, UINT64_MAX, UINT64_MAX}));
  EXPECT_EQ(text, "hello");
  // 300 = 0xAC 0x02 after the tag 0x10.
  EXPECT_EQ(w.data().substr(2, 3), bytes({0x10, 0xAC, 0x02}));
}

TEST(PulsarWire, MalformedMessagesStopTheReader) {
  for (const std::string& bad : {bytes({0x08}), bytes({0x0A, 0x05, 'a'}), bytes({0x0B}), bytes({0x00, 0x01}),
                                 bytes({0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01})}) {
    pd::ProtoReader r(bad);
    while (r.next()) {
    }
    EXPECT_FALSE(r.ok()) << testing::PrintToString(bad);
  }
}

TEST(PulsarCommands, ConnectIsTheDocumentedBytes) {
  // CONNECT {client_version "bqt", protocol_version 19}: what the broker
  // self-test of scripts/broker sends by hand (with version 15 there).
  EXPECT_EQ(pd::encode_connect("bqt", "", ""), bytes({0x08, 0x02, 0x12, 0x07, 0x0A, 0x03, 'b', 'q', 't', 0x20, 19}));
  // PING: the type, then the empty body as field 18 (tag 0x92 0x01, length 0).
  EXPECT_EQ(pd::frame(pd::encode_ping()), bytes({0, 0, 0, 9, 0, 0, 0, 5, 0x08, 18, 0x92, 0x01, 0x00}));
}

TEST(PulsarCommands, ALookupCarriesTheListenerNameAsField7OnlyWhenGiven) {
  // CommandLookupTopic.advertised_listener_name = 7 (PulsarApi.proto).
  const auto listener_of = [](const std::string& command) {
    std::optional<std::string> name;
    pd::ProtoReader base(command);
    while (base.next()) {
      if (base.field() != 23) continue;
      pd::ProtoReader body(base.bytes());
      while (body.next()) {
        if (body.field() == 7) name = std::string(body.bytes());
      }
    }
    return name;
  };
  EXPECT_EQ(listener_of(pd::encode_lookup("persistent://public/default/x", 5, false, "external")), "external");
  EXPECT_FALSE(listener_of(pd::encode_lookup("persistent://public/default/x", 5, false)));
}

TEST(PulsarCommands, DecodesAnswers) {
  pd::ProtoWriter connected;
  connected.bytes(1, "Pulsar Server4.2.4");
  connected.varint(2, 19);
  connected.varint(3, 5242880);
  pd::ProtoWriter base;
  base.varint(1, 3);
  base.message(3, connected);
  auto c = pd::decode_command(base.data());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->type, pd::CommandType::connected);
  EXPECT_EQ(c->server_version, "Pulsar Server4.2.4");
  EXPECT_EQ(c->protocol_version, 19);
  EXPECT_EQ(c->max_message_size, 5242880);

  pd::ProtoWriter lookup;
  lookup.bytes(1, "pulsar://127.0.0.1:6650");
  lookup.varint(3, 1);  // Connect
  lookup.varint(4, 42);
  lookup.varint(5, 1);
  pd::ProtoWriter base2;
  base2.message(24, lookup);  // the body before the type: still decoded
  base2.varint(1, 24);
  c = pd::decode_command(base2.data());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->type, pd::CommandType::lookup_response);
  EXPECT_EQ(c->broker_url, "pulsar://127.0.0.1:6650");
  EXPECT_EQ(c->lookup, pd::LookupType::connect);
  EXPECT_EQ(c->request_id, 42U);
  EXPECT_TRUE(c->authoritative);
}

TEST(PulsarCommands, AnUnknownCommandDecodesWithItsNumber) {
  pd::ProtoWriter base;
  base.varint(1, 99);
  base.bytes(99, bytes({0x08, 0x01}));
  auto c = pd::decode_command(base.data());
  ASSERT_TRUE(c);
  EXPECT_EQ(static_cast<std::uint32_t>(c->type), 99U);
  EXPECT_EQ(pd::to_string(c->type), "an unknown command");
  // No type at all is not a command.
  EXPECT_FALSE(pd::decode_command(bytes({0x12, 0x00})));
}

TEST(PulsarCommands, MetadataRoundTrips) {
  pd::MessageMetadata m = plain_metadata();
  m.partition_key = "customer-7";
  m.deliver_at_time = 1749132737000;
  m.num_messages_in_batch = 3;
  m.compression = pd::CompressionType::zstd;
  m.uncompressed_size = 99;
  auto back = pd::decode_metadata(pd::encode_metadata(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->producer_name, m.producer_name);
  EXPECT_EQ(back->sequence_id, 5U);
  EXPECT_EQ(back->publish_time, m.publish_time);
  EXPECT_EQ(back->properties, m.properties);
  EXPECT_EQ(back->partition_key, "customer-7");
  EXPECT_EQ(back->deliver_at_time, 1749132737000);
  EXPECT_EQ(back->num_messages_in_batch, 3);
  EXPECT_EQ(back->compression, pd::CompressionType::zstd);
  EXPECT_EQ(back->uncompressed_size, 99U);
}

TEST(PulsarFrame, Crc32cMatchesTheKnownCheckValue) {
  EXPECT_EQ(pd::crc32c("123456789"), 0xE3069283U);
  EXPECT_EQ(pd::crc32c(""), 0U);
  // Incremental equals whole.
  EXPECT_EQ(pd::crc32c("56789", pd::crc32c("1234")), 0xE3069283U);
  const std::string long_text(1000, 'x');
  EXPECT_EQ(pd::crc32c(long_text.substr(3)), pd::crc32c(std::string_view(long_text).substr(3)));
}

TEST(PulsarFrame, AMessageFrameDecodesWithItsMetadataAndPayload) {
  const std::string f = message_frame(plain_metadata(), R"({"job":"x"})", 2);
  pd::FrameReader reader;
  reader.feed(f);
  auto next = reader.next();
  ASSERT_TRUE(next) << next.error().message();
  ASSERT_TRUE(*next);
  const pd::Frame& frame = **next;
  EXPECT_EQ(frame.command.type, pd::CommandType::message);
  EXPECT_EQ(frame.command.consumer_id, 7U);
  EXPECT_EQ(frame.command.message_id.ledger, 12U);
  EXPECT_EQ(frame.command.message_id.entry, 34U);
  EXPECT_EQ(frame.command.redelivery_count, 2U);
  ASSERT_TRUE(frame.metadata);
  EXPECT_EQ(frame.metadata->properties, plain_metadata().properties);
  EXPECT_EQ(frame.payload, R"({"job":"x"})");
  EXPECT_EQ(reader.buffered(), 0U);
}

TEST(PulsarFrame, ATruncatedFrameWaitsForTheRestAndByteByByteFeedingWorks) {
  const std::string f = message_frame(plain_metadata(), "payload") + pd::frame(pd::encode_pong());
  pd::FrameReader reader;
  std::vector<pd::CommandType> seen;
  for (char c : f) {
    reader.feed(std::string_view(&c, 1));
    for (;;) {
      auto next = reader.next();
      ASSERT_TRUE(next) << next.error().message();
      if (!*next) break;
      seen.push_back((*next)->command.type);
    }
  }
  EXPECT_EQ(seen, (std::vector<pd::CommandType>{pd::CommandType::message, pd::CommandType::pong}));
  // A frame cut short, decoded as if whole, is an error.
  auto cut = pd::decode_frame(std::string_view(f).substr(0, 20));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code(), Errc::broker);
}

TEST(PulsarFrame, AChecksumMismatchIsAClearError) {
  std::string f = message_frame(plain_metadata(), "the payload");
  f.back() = static_cast<char>(f.back() ^ 0x01);  // one bit of the payload
  pd::FrameReader reader;
  reader.feed(f);
  auto next = reader.next();
  ASSERT_FALSE(next);
  EXPECT_EQ(next.error().code(), Errc::broker);
  EXPECT_NE(next.error().message().find("checksum mismatch"), std::string::npos) << next.error().message();
}

TEST(PulsarFrame, SizesOutOfRangeAndBadMagicAreErrors) {
  pd::FrameReader small(1024);
  small.feed(bytes({0x00, 0x10, 0x00, 0x00}));  // 1 MiB announced
  auto next = small.next();
  ASSERT_FALSE(next);
  EXPECT_NE(next.error().message().find("at most 1024"), std::string::npos);

  // A command size larger than the frame.
  auto bad = pd::decode_frame(bytes({0, 0, 0, 6, 0, 0, 0, 9, 0x08, 18}));
  ASSERT_FALSE(bad);
  // Bytes after the command without the payload magic.
  ASSERT_TRUE(pd::decode_frame(pd::frame(pd::encode_ping())));
  std::string tail = pd::frame(pd::encode_ping());
  tail[3] = static_cast<char>(tail[3] + 12);
  tail += std::string(12, '\x07');
  auto garbage = pd::decode_frame(tail);
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message().find("magic"), std::string::npos) << garbage.error().message();
}

TEST(PulsarFrame, BrokerEntryMetadataIsSkipped) {
  const std::string inner = message_frame(plain_metadata(), "body");
  // Rebuild with [0x0e02][size][bytes] between the command and the payload part.
  const std::uint32_t command_size = (static_cast<std::uint8_t>(inner[4]) << 24U) |
                                     (static_cast<std::uint8_t>(inner[5]) << 16U) |
                                     (static_cast<std::uint8_t>(inner[6]) << 8U) | static_cast<std::uint8_t>(inner[7]);
  const std::string entry_meta = bytes({0x08, 0x05});
  std::string rebuilt =
      inner.substr(4, 4 + command_size) + bytes({0x0E, 0x02, 0, 0, 0, 2}) + entry_meta + inner.substr(8 + command_size);
  const auto total = static_cast<std::uint32_t>(rebuilt.size());
  rebuilt = bytes({static_cast<int>(total >> 24U), static_cast<int>((total >> 16U) & 0xFF),
                   static_cast<int>((total >> 8U) & 0xFF), static_cast<int>(total & 0xFF)}) +
            rebuilt;
  auto frame = pd::decode_frame(rebuilt);
  ASSERT_TRUE(frame) << frame.error().message();
  EXPECT_EQ(frame->payload, "body");
}

class PulsarBatch : public testing::TestWithParam<pd::CompressionType> {};

TEST_P(PulsarBatch, ABatchSplitsIntoItsMessagesWhateverTheCodec) {
  std::vector<pd::EntryMessage> messages(3);
  messages[0].payload = R"({"n":0})";
  messages[0].properties = {{"bq-attempts", "0"}};
  messages[1].payload = std::string(5000, 'a');  // compressible
  messages[1].partition_key = "k1";
  messages[2].payload = "";
  const std::string batch = pd::build_batch(messages);
  auto compressed = pd::compress(GetParam(), batch);
  ASSERT_TRUE(compressed) << compressed.error().message();
  pd::MessageMetadata metadata = plain_metadata();
  metadata.num_messages_in_batch = 3;
  metadata.compression = GetParam();
  metadata.uncompressed_size = static_cast<std::uint32_t>(batch.size());

  // Through a whole frame, as a consumer receives it.
  pd::FrameReader reader;
  reader.feed(message_frame(metadata, *compressed));
  auto next = reader.next();
  ASSERT_TRUE(next && *next);
  auto split = pd::split_entry(*(*next)->metadata, (*next)->payload, 1 << 20);
  ASSERT_TRUE(split) << split.error().message();
  ASSERT_EQ(split->size(), 3U);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*split)[i].payload, messages[i].payload);
    EXPECT_EQ((*split)[i].batch_index, i);
  }
  EXPECT_EQ((*split)[0].properties, messages[0].properties);
  EXPECT_EQ((*split)[1].partition_key, "k1");
}

TEST_P(PulsarBatch, ACorruptOrOversizedPayloadIsRefused) {
  if (GetParam() == pd::CompressionType::none) GTEST_SKIP() << "nothing to decompress";
  auto compressed = pd::compress(GetParam(), std::string(4000, 'z'));
  ASSERT_TRUE(compressed);
  std::string corrupt = *compressed;
  corrupt.resize(corrupt.size() / 2);
  EXPECT_FALSE(pd::decompress(GetParam(), corrupt, 4000, 1 << 20));
  // The announced size is checked before anything is allocated.
  EXPECT_FALSE(pd::decompress(GetParam(), *compressed, 4000, 1000));
  // A wrong announced size is an error, not a short payload.
  EXPECT_FALSE(pd::decompress(GetParam(), *compressed, 3999, 1 << 20));
}

INSTANTIATE_TEST_SUITE_P(Codecs, PulsarBatch,
                         testing::Values(pd::CompressionType::none, pd::CompressionType::lz4, pd::CompressionType::zlib,
                                         pd::CompressionType::zstd, pd::CompressionType::snappy),
                         [](const testing::TestParamInfo<pd::CompressionType>& codec) {
                           switch (codec.param) {
                             case pd::CompressionType::none: return std::string("none");
                             case pd::CompressionType::lz4: return std::string("lz4");
                             case pd::CompressionType::zlib: return std::string("zlib");
                             case pd::CompressionType::zstd: return std::string("zstd");
                             case pd::CompressionType::snappy: return std::string("snappy");
                           }
                           return std::string("unknown");
                         });

TEST(PulsarBatchLimits, ABatchThatLiesAboutItsContentIsRefused) {
  pd::MessageMetadata metadata = plain_metadata();
  metadata.num_messages_in_batch = 2;
  std::vector<pd::EntryMessage> one(1);
  one[0].payload = "only one";
  EXPECT_FALSE(pd::split_entry(metadata, pd::build_batch(one), 1 << 20));
  metadata.num_messages_in_batch = 1'000'000;
  EXPECT_FALSE(pd::split_entry(metadata, pd::build_batch(one), 1 << 20));
}
