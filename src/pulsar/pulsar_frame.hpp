// SPDX-License-Identifier: Apache-2.0
// The frames of Pulsar's binary protocol:
//
//   simple:  [total size u32][command size u32][BaseCommand]
//   payload: [total size u32][command size u32][BaseCommand]
//            [magic 0x0e01][CRC32C u32][metadata size u32][MessageMetadata][payload]
//
// (sizes and the checksum big-endian; the checksum covers everything after
// it). A broker that adds broker-entry metadata puts
// [magic 0x0e02][size u32][BrokerEntryMetadata] before the 0x0e01 part; it is
// skipped. A batched payload holds [size u32][SingleMessageMetadata][bytes]
// per entry, and may be compressed as a whole (LZ4, ZLIB, ZSTD, Snappy).
// Internal to babelqueue::pulsar.
//
// Thread-safety: FrameReader is used by one thread; the rest are pure functions.
#pragma once

#include "pulsar_commands.hpp"

#include <babelqueue/result.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::pulsar_detail {

// CRC32C (Castagnoli), as the payload checksum.
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0) noexcept;

// The largest frame Pulsar brokers send by default (5 MB message plus
// headroom); the connection raises it to what CONNECTED announces.
inline constexpr std::size_t kDefaultMaxFrameSize = 5 * 1024 * 1024 + 10 * 1024;

// A frame of the simple form.
std::string frame(std::string_view command);
// A frame of the payload form (SEND).
std::string payload_frame(std::string_view command, std::string_view metadata, std::string_view payload);
// The same, appended to out (pipelined sends share one buffer).
void append_payload_frame(std::string& out, std::string_view command, std::string_view metadata,
                          std::string_view payload);

// A decoded frame.
struct Frame {
  Command command;
  // Payload frames (MESSAGE): the metadata and the payload, checksum verified.
  std::optional<MessageMetadata> metadata;
  std::string payload;
};

// Reassembles frames from the bytes of a connection.
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_frame_size = kDefaultMaxFrameSize) : max_frame_size_(max_frame_size) {}

  void set_max_frame_size(std::size_t size) noexcept { max_frame_size_ = size; }
  void feed(std::string_view bytes) { buffer_.append(bytes); }

  // The next complete frame; nothing when more bytes are needed. An error
  // (Errc::broker) when the bytes are not a valid frame: a size out of
  // range, an undecodable command, a checksum mismatch, a bad magic number.
  // After an error the stream cannot be trusted: drop the connection.
  Result<std::optional<Frame>> next();

  std::size_t buffered() const noexcept { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  std::size_t start_ = 0;
  std::size_t max_frame_size_;
};

// Decodes one whole frame (without reassembly): what FrameReader::next() does
// per frame. Errc::broker when it is not valid.
Result<Frame> decode_frame(std::string_view bytes);

// The payload as the producer wrote it, uncompressed (checked against
// uncompressed_size; at most max_size bytes).
Result<std::string> decompress(CompressionType type, std::string_view data, std::uint32_t uncompressed_size,
                               std::size_t max_size);
// The payload compressed with type (tests and producers that compress).
Result<std::string> compress(CompressionType type, std::string_view data);

// One message of a (possibly batched) entry.
struct EntryMessage {
  Properties properties;
  std::optional<std::string> partition_key;
  std::string payload;
  std::int32_t batch_index = -1;  // -1: the entry is not a batch
};

// The messages of an entry: its decompressed payload split by the batch's
// single-message metadata, or the payload itself when it is not a batch.
// Entries compacted out are left out.
Result<std::vector<EntryMessage>> split_entry(const MessageMetadata& metadata, std::string payload,
                                              std::size_t max_size);

// A batched payload (uncompressed) from its messages, for tests and for
// producers that batch.
std::string build_batch(const std::vector<EntryMessage>& messages);

}  // namespace babelqueue::pulsar_detail
