// SPDX-License-Identifier: Apache-2.0
#include "pulsar_frame.hpp"

#include <babelqueue/error.hpp>

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <cstring>

namespace babelqueue::pulsar_detail {

namespace {

constexpr std::uint16_t kPayloadMagic = 0x0e01;
constexpr std::uint16_t kBrokerEntryMagic = 0x0e02;

std::uint32_t read_u32(std::string_view bytes, std::size_t at) noexcept {
  return (static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at])) << 24U) |
         (static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 1])) << 16U) |
         (static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 2])) << 8U) |
         static_cast<std::uint32_t>(static_cast<std::uint8_t>(bytes[at + 3]));
}

std::uint16_t read_u16(std::string_view bytes, std::size_t at) noexcept {
  return static_cast<std::uint16_t>((static_cast<std::uint8_t>(bytes[at]) << 8U) |
                                    static_cast<std::uint8_t>(bytes[at + 1]));
}

void put_u32(std::string& out, std::uint32_t v) {
  const std::array<char, 4> bytes{static_cast<char>(v >> 24U), static_cast<char>(v >> 16U), static_cast<char>(v >> 8U),
                                  static_cast<char>(v)};
  out.append(bytes.data(), bytes.size());
}

void put_u16(std::string& out, std::uint16_t v) {
  out.push_back(static_cast<char>(v >> 8U));
  out.push_back(static_cast<char>(v));
}

// The byte-at-a-time table of the reflected Castagnoli polynomial.
constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? (c >> 1U) ^ 0x82F63B78U : c >> 1U;
    table[i] = c;
  }
  return table;
}

constexpr auto kCrcTable = make_crc_table();

std::uint32_t crc32c_table(const unsigned char* p, std::size_t n, std::uint32_t crc) noexcept {
  for (std::size_t i = 0; i < n; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xFFU] ^ (crc >> 8U);
  return crc;
}

#if defined(__x86_64__)
// The SSE 4.2 crc32 instruction computes exactly this CRC, 8 bytes at a time.
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(const unsigned char* p, std::size_t n,
                                                             std::uint32_t crc) noexcept {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

bool has_sse42() noexcept {
  static const bool has = __builtin_cpu_supports("sse4.2") != 0;
  return has;
}
#endif

Unexpected<ErrorInfo> bad_frame(const std::string& what) {
  return unexpected(Errc::broker, "malformed frame from the Pulsar broker: " + what);
}

}  // namespace

std::uint32_t crc32c(std::string_view data, std::uint32_t crc) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  crc = ~crc;
#if defined(__x86_64__)
  if (has_sse42()) return ~crc32c_sse42(p, data.size(), crc);
#endif
  return ~crc32c_table(p, data.size(), crc);
}

std::string frame(std::string_view command) {
  std::string out;
  out.reserve(8 + command.size());
  put_u32(out, static_cast<std::uint32_t>(4 + command.size()));
  put_u32(out, static_cast<std::uint32_t>(command.size()));
  out.append(command);
  return out;
}

void append_payload_frame(std::string& out, std::string_view command, std::string_view metadata,
                          std::string_view payload) {
  const std::size_t checked = 4 + metadata.size() + payload.size();
  put_u32(out, static_cast<std::uint32_t>(4 + command.size() + 2 + 4 + checked));
  put_u32(out, static_cast<std::uint32_t>(command.size()));
  out.append(command);
  put_u16(out, kPayloadMagic);
  const std::size_t crc_at = out.size();
  put_u32(out, 0);
  const std::size_t checked_at = out.size();
  put_u32(out, static_cast<std::uint32_t>(metadata.size()));
  out.append(metadata);
  out.append(payload);
  const std::uint32_t crc = crc32c(std::string_view(out).substr(checked_at));
  std::string crc_bytes;
  put_u32(crc_bytes, crc);
  out.replace(crc_at, 4, crc_bytes);
}

std::string payload_frame(std::string_view command, std::string_view metadata, std::string_view payload) {
  std::string out;
  out.reserve(20 + command.size() + metadata.size() + payload.size());
  append_payload_frame(out, command, metadata, payload);
  return out;
}

Result<Frame> decode_frame(std::string_view bytes) {
  // bytes: the whole frame, its total size first.
  if (bytes.size() < 8) return bad_frame("a frame of " + std::to_string(bytes.size()) + " bytes");
  const std::uint32_t total = read_u32(bytes, 0);
  if (total != bytes.size() - 4) return bad_frame("the total size does not match the frame");
  const std::uint32_t command_size = read_u32(bytes, 4);
  if (command_size == 0 || command_size > total - 4) {
    return bad_frame("a command size of " + std::to_string(command_size) + " in a frame of " + std::to_string(total));
  }
  auto command = decode_command(bytes.substr(8, command_size));
  if (!command) return bad_frame("the command cannot be decoded");
  Frame out;
  out.command = std::move(*command);
  std::string_view rest = bytes.substr(8 + command_size);
  if (rest.empty()) return out;
  if (rest.size() >= 6 && read_u16(rest, 0) == kBrokerEntryMagic) {
    const std::uint32_t size = read_u32(rest, 2);
    if (size > rest.size() - 6) return bad_frame("broker entry metadata larger than the frame");
    rest = rest.substr(6 + size);
  }
  if (rest.size() < 10 || read_u16(rest, 0) != kPayloadMagic) {
    return bad_frame("bytes after the " + std::string(to_string(out.command.type)) +
                     " command that are no payload (magic 0x0e01 missing)");
  }
  const std::uint32_t expected = read_u32(rest, 2);
  const std::string_view checked = rest.substr(6);
  if (const std::uint32_t actual = crc32c(checked); actual != expected) {
    return bad_frame("payload checksum mismatch (CRC32C " + std::to_string(actual) + ", the frame says " +
                     std::to_string(expected) + ")");
  }
  const std::uint32_t metadata_size = read_u32(checked, 0);
  if (metadata_size > checked.size() - 4) return bad_frame("message metadata larger than the frame");
  auto metadata = decode_metadata(checked.substr(4, metadata_size));
  if (!metadata) return bad_frame("the message metadata cannot be decoded");
  out.metadata = std::move(*metadata);
  out.payload = std::string(checked.substr(4 + metadata_size));
  return out;
}

Result<std::optional<Frame>> FrameReader::next() {
  const std::string_view pending = std::string_view(buffer_).substr(start_);
  if (pending.size() < 4) return std::optional<Frame>{};
  const std::uint32_t total = read_u32(pending, 0);
  if (total < 4 || total > max_frame_size_) {
    return bad_frame("a frame of " + std::to_string(total) + " bytes (at most " + std::to_string(max_frame_size_) +
                     " allowed)");
  }
  if (pending.size() < 4 + static_cast<std::size_t>(total)) return std::optional<Frame>{};
  auto decoded = decode_frame(pending.substr(0, 4 + static_cast<std::size_t>(total)));
  start_ += 4 + static_cast<std::size_t>(total);
  // Compact once the consumed part dominates, so the buffer does not grow.
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  } else if (start_ > 64 * 1024 && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  if (!decoded) return unexpected(decoded.error());
  return std::optional<Frame>(std::move(*decoded));
}

Result<std::string> decompress(CompressionType type, std::string_view data, std::uint32_t uncompressed_size,
                               std::size_t max_size) {
  if (type == CompressionType::none) return std::string(data);
  if (uncompressed_size > max_size) {
    return unexpected(Errc::broker, "a compressed payload of " + std::to_string(uncompressed_size) +
                                        " bytes uncompressed (at most " + std::to_string(max_size) + ")");
  }
  std::string out(uncompressed_size, '\0');
  bool ok = false;
  switch (type) {
    case CompressionType::lz4: {
      const int n = LZ4_decompress_safe(data.data(), out.data(), static_cast<int>(data.size()),
                                        static_cast<int>(uncompressed_size));
      ok = n >= 0 && static_cast<std::uint32_t>(n) == uncompressed_size;
      break;
    }
    case CompressionType::zlib: {
      uLongf length = uncompressed_size;
      ok = ::uncompress(reinterpret_cast<Bytef*>(out.data()), &length, reinterpret_cast<const Bytef*>(data.data()),
                        static_cast<uLong>(data.size())) == Z_OK &&
           length == uncompressed_size;
      break;
    }
    case CompressionType::zstd: {
      const std::size_t n = ZSTD_decompress(out.data(), out.size(), data.data(), data.size());
      ok = ZSTD_isError(n) == 0 && n == uncompressed_size;
      break;
    }
    case CompressionType::snappy: {
      std::size_t length = 0;
      ok = snappy_uncompressed_length(data.data(), data.size(), &length) == SNAPPY_OK && length == uncompressed_size;
      if (ok) ok = snappy_uncompress(data.data(), data.size(), out.data(), &length) == SNAPPY_OK;
      break;
    }
    default:
      return unexpected(Errc::unsupported,
                        "a payload compressed with an unknown codec (" + std::to_string(static_cast<int>(type)) + ")");
  }
  if (!ok) {
    return unexpected(Errc::broker, "a compressed payload (codec " + std::to_string(static_cast<int>(type)) +
                                        ") does not decompress to its announced " + std::to_string(uncompressed_size) +
                                        " bytes");
  }
  return out;
}

Result<std::string> compress(CompressionType type, std::string_view data) {
  std::string out;
  switch (type) {
    case CompressionType::none: return std::string(data);
    case CompressionType::lz4: {
      out.resize(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(data.size()))));
      const int n =
          LZ4_compress_default(data.data(), out.data(), static_cast<int>(data.size()), static_cast<int>(out.size()));
      if (n <= 0) return unexpected(Errc::internal, "LZ4 compression failed");
      out.resize(static_cast<std::size_t>(n));
      return out;
    }
    case CompressionType::zlib: {
      uLongf length = compressBound(static_cast<uLong>(data.size()));
      out.resize(length);
      if (::compress(reinterpret_cast<Bytef*>(out.data()), &length, reinterpret_cast<const Bytef*>(data.data()),
                     static_cast<uLong>(data.size())) != Z_OK) {
        return unexpected(Errc::internal, "ZLIB compression failed");
      }
      out.resize(length);
      return out;
    }
    case CompressionType::zstd: {
      out.resize(ZSTD_compressBound(data.size()));
      const std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
      if (ZSTD_isError(n) != 0) return unexpected(Errc::internal, "ZSTD compression failed");
      out.resize(n);
      return out;
    }
    case CompressionType::snappy: {
      std::size_t length = snappy_max_compressed_length(data.size());
      out.resize(length);
      if (snappy_compress(data.data(), data.size(), out.data(), &length) != SNAPPY_OK) {
        return unexpected(Errc::internal, "Snappy compression failed");
      }
      out.resize(length);
      return out;
    }
  }
  return unexpected(Errc::unsupported, "unknown compression codec");
}

Result<std::vector<EntryMessage>> split_entry(const MessageMetadata& metadata, std::string payload,
                                              std::size_t max_size) {
  auto plain = decompress(metadata.compression, payload, metadata.uncompressed_size, max_size);
  if (!plain) return unexpected(plain.error());
  std::vector<EntryMessage> out;
  if (!metadata.num_messages_in_batch) {
    EntryMessage m;
    m.properties = metadata.properties;
    m.partition_key = metadata.partition_key;
    m.payload = std::move(*plain);
    out.push_back(std::move(m));
    return out;
  }
  const std::int32_t count = *metadata.num_messages_in_batch;
  if (count < 0 || static_cast<std::size_t>(count) > plain->size() / 4 + 1) {
    return unexpected(Errc::broker, "a batch that announces " + std::to_string(count) + " messages in " +
                                        std::to_string(plain->size()) + " bytes");
  }
  const std::string_view bytes = *plain;
  std::size_t at = 0;
  out.reserve(static_cast<std::size_t>(count));
  for (std::int32_t i = 0; i < count; ++i) {
    if (bytes.size() - at < 4) return unexpected(Errc::broker, "a batch cut short at message " + std::to_string(i));
    const std::uint32_t size = read_u32(bytes, at);
    at += 4;
    if (size > bytes.size() - at) return unexpected(Errc::broker, "a batch entry's metadata runs past the batch");
    auto single = decode_single_metadata(bytes.substr(at, size));
    if (!single) return unexpected(Errc::broker, "a batch entry's metadata cannot be decoded");
    at += size;
    const auto payload_size = static_cast<std::size_t>(single->payload_size);
    if (payload_size > bytes.size() - at) return unexpected(Errc::broker, "a batch entry runs past the batch");
    if (!single->compacted_out) {
      EntryMessage m;
      m.properties = std::move(single->properties);
      m.partition_key = std::move(single->partition_key);
      m.payload = std::string(bytes.substr(at, payload_size));
      m.batch_index = i;
      out.push_back(std::move(m));
    }
    at += payload_size;
  }
  return out;
}

std::string build_batch(const std::vector<EntryMessage>& messages) {
  std::string out;
  for (const auto& m : messages) {
    SingleMessageMetadata single;
    single.properties = m.properties;
    single.partition_key = m.partition_key;
    single.payload_size = static_cast<std::int32_t>(m.payload.size());
    const std::string encoded = encode_single_metadata(single);
    put_u32(out, static_cast<std::uint32_t>(encoded.size()));
    out.append(encoded);
    out.append(m.payload);
  }
  return out;
}

}  // namespace babelqueue::pulsar_detail
