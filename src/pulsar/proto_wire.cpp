// SPDX-License-Identifier: Apache-2.0
#include "proto_wire.hpp"

namespace babelqueue::pulsar_detail {

void ProtoWriter::raw_varint(std::uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void ProtoWriter::varint(std::uint32_t field, std::uint64_t value) {
  raw_varint(static_cast<std::uint64_t>(field) << 3U);
  raw_varint(value);
}

void ProtoWriter::bytes(std::uint32_t field, std::string_view value) {
  raw_varint((static_cast<std::uint64_t>(field) << 3U) | 2U);
  raw_varint(value.size());
  out_.append(value);
}

bool ProtoReader::read_varint(std::uint64_t& out) noexcept {
  out = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) return false;
    const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
    out |= static_cast<std::uint64_t>(byte & 0x7FU) << shift;
    if ((byte & 0x80U) == 0) return true;
  }
  return false;  // more than ten bytes
}

bool ProtoReader::next() noexcept {
  if (!ok_ || pos_ >= data_.size()) return false;
  std::uint64_t tag = 0;
  if (!read_varint(tag) || (tag >> 3U) == 0 || (tag >> 3U) > 0x1FFFFFFFU) {
    ok_ = false;
    return false;
  }
  field_ = static_cast<std::uint32_t>(tag >> 3U);
  value_ = 0;
  bytes_ = {};
  switch (tag & 7U) {
    case 0:
      wire_ = Wire::varint;
      if (!read_varint(value_)) ok_ = false;
      break;
    case 1:
      wire_ = Wire::fixed64;
      if (data_.size() - pos_ < 8) ok_ = false;
      pos_ += 8;
      break;
    case 2: {
      wire_ = Wire::length;
      std::uint64_t length = 0;
      if (!read_varint(length) || length > data_.size() - pos_) {
        ok_ = false;
        break;
      }
      bytes_ = data_.substr(pos_, static_cast<std::size_t>(length));
      pos_ += static_cast<std::size_t>(length);
      break;
    }
    case 5:
      wire_ = Wire::fixed32;
      if (data_.size() - pos_ < 4) ok_ = false;
      pos_ += 4;
      break;
    default: ok_ = false; break;  // groups (3, 4) are not used by Pulsar
  }
  return ok_;
}

}  // namespace babelqueue::pulsar_detail
