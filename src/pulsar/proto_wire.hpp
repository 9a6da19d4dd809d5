// SPDX-License-Identifier: Apache-2.0
// The protobuf wire format, as far as Pulsar's commands need it: varints,
// length-delimited fields (strings, bytes, nested messages) and skipping the
// fixed-width types. Hand-written rather than generated (docs/adr/0020): the
// protocol uses a few dozen fields of a dozen messages, and a reader that
// never allocates is easy to fuzz. Internal to babelqueue::pulsar.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace babelqueue::pulsar_detail {

// Appends fields to a message.
class ProtoWriter {
 public:
  void varint(std::uint32_t field, std::uint64_t value);
  // int32/int64 fields: a negative value takes ten bytes, as protobuf wants.
  void signed_varint(std::uint32_t field, std::int64_t value) { varint(field, static_cast<std::uint64_t>(value)); }
  void boolean(std::uint32_t field, bool value) { varint(field, value ? 1 : 0); }
  void bytes(std::uint32_t field, std::string_view value);
  void message(std::uint32_t field, const ProtoWriter& inner) { bytes(field, inner.data()); }

  const std::string& data() const noexcept { return out_; }
  std::string take() noexcept { return std::move(out_); }

 private:
  void raw_varint(std::uint64_t value);
  std::string out_;
};

// Walks the fields of a message: while (reader.next()) { switch (reader.field()) ... }.
// A malformed message (a truncated varint or length, an unknown wire type)
// ends the walk with ok() false.
class ProtoReader {
 public:
  enum class Wire : std::uint8_t { varint = 0, fixed64 = 1, length = 2, fixed32 = 5 };

  explicit ProtoReader(std::string_view data) noexcept : data_(data) {}

  bool next() noexcept;
  bool ok() const noexcept { return ok_; }

  std::uint32_t field() const noexcept { return field_; }
  Wire wire() const noexcept { return wire_; }
  // The value of a varint field (0 for other wire types).
  std::uint64_t varint() const noexcept { return wire_ == Wire::varint ? value_ : 0; }
  std::int64_t signed_varint() const noexcept { return static_cast<std::int64_t>(varint()); }
  // The bytes of a length-delimited field (empty for other wire types).
  std::string_view bytes() const noexcept { return wire_ == Wire::length ? bytes_ : std::string_view{}; }

 private:
  bool read_varint(std::uint64_t& out) noexcept;

  std::string_view data_;
  std::size_t pos_ = 0;
  bool ok_ = true;
  std::uint32_t field_ = 0;
  Wire wire_ = Wire::varint;
  std::uint64_t value_ = 0;
  std::string_view bytes_;
};

}  // namespace babelqueue::pulsar_detail
