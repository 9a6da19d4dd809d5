// SPDX-License-Identifier: Apache-2.0
#include "encoded_message.hpp"

#include <cstddef>

namespace babelqueue::amqp10 {

namespace {

constexpr int kMaxDepth = 16;

// Section descriptors (AMQP 1.0 §3.2).
constexpr std::uint64_t kHeader = 0x70, kDeliveryAnnotations = 0x71, kMessageAnnotations = 0x72, kProperties = 0x73,
                        kApplicationProperties = 0x74, kData = 0x75, kAmqpSequence = 0x76, kAmqpValue = 0x77,
                        kFooter = 0x78;

std::uint64_t big_endian(std::string_view bytes) noexcept {
  std::uint64_t v = 0;
  for (const char c : bytes) v = (v << 8) | static_cast<unsigned char>(c);
  return v;
}

// The width of a fixed-width value's bytes; -1 for a code that is not one.
int fixed_width(std::uint8_t code) noexcept {
  if (code >= 0x40 && code <= 0x45) return 0;
  if (code >= 0x50 && code <= 0x56) return 1;
  if (code == 0x60 || code == 0x61) return 2;
  if (code >= 0x70 && code <= 0x74) return 4;
  if (code >= 0x80 && code <= 0x84) return 8;
  if (code == 0x94 || code == 0x98) return 16;
  return -1;
}

// Takes n bytes off the front of rest into taken; false when there are
// fewer.
bool take(std::string_view& rest, std::size_t n, std::string_view& taken) noexcept {
  if (rest.size() < n) return false;
  taken = rest.substr(0, n);
  rest.remove_prefix(n);
  return true;
}

enum class Taken { ok, malformed, too_deep };

Taken take_value(std::uint8_t code, std::string_view& rest, EncodedValue& value, int depth) noexcept;

// A descriptor and what it describes, as often as they nest, then a value.
Taken take_any(std::string_view& rest, int depth) noexcept {
  for (int described = 0; !rest.empty() && static_cast<std::uint8_t>(rest.front()) == 0x00; ++described) {
    if (described > kMaxDepth) return Taken::too_deep;
    rest.remove_prefix(1);
    if (rest.empty()) return Taken::malformed;
    const auto code = static_cast<std::uint8_t>(rest.front());
    rest.remove_prefix(1);
    // A descriptor is a ulong or a symbol (AMQP 1.0 §1.2).
    if (code != 0x44 && code != 0x53 && code != 0x80 && code != 0xa3 && code != 0xb3) return Taken::malformed;
    EncodedValue descriptor;
    if (const Taken t = take_value(code, rest, descriptor, depth); t != Taken::ok) return t;
  }
  if (rest.empty()) return Taken::malformed;
  const auto code = static_cast<std::uint8_t>(rest.front());
  rest.remove_prefix(1);
  EncodedValue value;
  return take_value(code, rest, value, depth);
}

// Every value of a compound's payload well formed, count of them filling it
// exactly.
Taken elements_hold(std::string_view payload, std::uint32_t count, int depth) noexcept {
  if (depth > kMaxDepth) return Taken::too_deep;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (const Taken t = take_any(payload, depth); t != Taken::ok) return t;
  }
  return payload.empty() ? Taken::ok : Taken::malformed;
}

// An array's elements: one constructor (a described one too), then count
// values of it without a constructor each, filling payload exactly.
Taken array_holds(std::string_view payload, std::uint32_t count, int depth) noexcept {
  if (depth > kMaxDepth) return Taken::too_deep;
  if (payload.empty()) return Taken::malformed;
  auto code = static_cast<std::uint8_t>(payload.front());
  payload.remove_prefix(1);
  if (code == 0x00) {
    if (payload.empty()) return Taken::malformed;
    const auto descriptor_code = static_cast<std::uint8_t>(payload.front());
    payload.remove_prefix(1);
    EncodedValue descriptor;
    if (const Taken t = take_value(descriptor_code, payload, descriptor, depth); t != Taken::ok) return t;
    if (payload.empty()) return Taken::malformed;
    code = static_cast<std::uint8_t>(payload.front());
    payload.remove_prefix(1);
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    EncodedValue element;
    if (const Taken t = take_value(code, payload, element, depth); t != Taken::ok) return t;
  }
  return payload.empty() ? Taken::ok : Taken::malformed;
}

// The encoding of a value whose constructor, code, was just read off rest:
// its payload (and count) into value, rest past it.
Taken take_value(std::uint8_t code, std::string_view& rest, EncodedValue& value, int depth) noexcept {
  value = EncodedValue{};
  value.code = code;
  std::string_view size_bytes;
  if (const int width = fixed_width(code); width >= 0) {
    return take(rest, static_cast<std::size_t>(width), value.payload) ? Taken::ok : Taken::malformed;
  }
  switch (code) {
    case 0xa0:
    case 0xa1:
    case 0xa3:
      return take(rest, 1, size_bytes) && take(rest, big_endian(size_bytes), value.payload) ? Taken::ok
                                                                                            : Taken::malformed;
    case 0xb0:
    case 0xb1:
    case 0xb3:
      return take(rest, 4, size_bytes) && take(rest, big_endian(size_bytes), value.payload) ? Taken::ok
                                                                                            : Taken::malformed;
    case 0xc0:
    case 0xc1:
    case 0xd0:
    case 0xd1:
    case 0xe0:
    case 0xf0: {
      const std::size_t size_width = (code & 0x10) == 0 ? 1 : 4;  // 0xc_ and 0xe_: one byte
      // The size counts the count's bytes too.
      std::string_view body;
      if (!take(rest, size_width, size_bytes) || big_endian(size_bytes) < size_width ||
          !take(rest, big_endian(size_bytes), body)) {
        return Taken::malformed;
      }
      value.count = static_cast<std::uint32_t>(big_endian(body.substr(0, size_width)));
      value.payload = body.substr(size_width);
      if (value.is_array()) return array_holds(value.payload, value.count, depth + 1);
      if (value.is_map() && value.count % 2 != 0) return Taken::malformed;
      return elements_hold(value.payload, value.count, depth + 1);
    }
    default: return Taken::malformed;  // a code AMQP does not define (0x00 is read by the caller)
  }
}

// The types a field of the header or properties may have (AMQP 1.0
// §3.2.1, §3.2.4), each as its format codes; null is always allowed.
enum Type : unsigned {
  kBoolean = 1,
  kUbyte = 2,
  kUint = 4,
  kUlong = 8,
  kUuid = 16,
  kBinary = 32,
  kString = 64,
  kSymbol = 128,
  kTimestamp = 256
};

unsigned type_of(std::uint8_t code) noexcept {
  switch (code) {
    case 0x41:
    case 0x42:
    case 0x56: return kBoolean;
    case 0x50: return kUbyte;
    case 0x43:
    case 0x52:
    case 0x70: return kUint;
    case 0x44:
    case 0x53:
    case 0x80: return kUlong;
    case 0x98: return kUuid;
    case 0xa0:
    case 0xb0: return kBinary;
    case 0xa1:
    case 0xb1: return kString;
    case 0xa3:
    case 0xb3: return kSymbol;
    case 0x83: return kTimestamp;
    default: return 0;
  }
}

// Every field of a section's list of the type its place gives it, and no
// more fields than the section has. proton reads a section whose fields
// are of other types only in part (it stops at the first one that does
// not fit), so such a section is left to it.
template <std::size_t N>
bool fields_typed(const EncodedValue& list, const unsigned (&types)[N]) noexcept {
  if (list.count > N) return false;
  ValueCursor cursor(list.payload, 1);
  EncodedValue field;
  for (std::uint32_t i = 0; i < list.count; ++i) {
    if (!cursor.next(field)) return false;
    if (!field.is_null() && (type_of(field.code) & types[i]) == 0) return false;
  }
  return true;
}

constexpr unsigned kHeaderFields[] = {kBoolean, kUbyte, kUint, kBoolean, kUint};
constexpr unsigned kId = kUlong | kUuid | kBinary | kString;
constexpr unsigned kPropertiesFields[] = {kId,     kBinary,    kString,    kString, kString, kId,    kSymbol,
                                          kSymbol, kTimestamp, kTimestamp, kString, kUint,   kString};

}  // namespace

std::optional<std::uint32_t> EncodedValue::as_uint() const noexcept {
  switch (code) {
    case 0x43: return 0U;                                               // uint0
    case 0x50:                                                          // ubyte
    case 0x52:                                                          // smalluint
    case 0x60:                                                          // ushort
    case 0x70: return static_cast<std::uint32_t>(big_endian(payload));  // uint
    default: return std::nullopt;
  }
}

bool ValueCursor::next(EncodedValue& value) noexcept {
  if (rest_.empty() || static_cast<std::uint8_t>(rest_.front()) == 0x00) return false;
  std::string_view rest = rest_.substr(1);
  const Taken t = take_value(static_cast<std::uint8_t>(rest_.front()), rest, value, depth_);
  if (t != Taken::ok) {
    malformed_ = t == Taken::malformed;
    return false;
  }
  rest_ = rest;
  return true;
}

bool ValueCursor::skip() noexcept {
  std::string_view rest = rest_;
  const Taken t = take_any(rest, depth_);
  if (t != Taken::ok) {
    malformed_ = t == Taken::malformed;
    return false;
  }
  rest_ = rest;
  return true;
}

bool ValueCursor::next_described(std::uint64_t& descriptor, EncodedValue& value) noexcept {
  if (rest_.empty() || static_cast<std::uint8_t>(rest_.front()) != 0x00) return false;
  ValueCursor inner(rest_.substr(1), depth_);
  EncodedValue d;
  if (!inner.next(d)) return false;
  if (d.code == 0x53 || d.code == 0x80) {
    descriptor = big_endian(d.payload);
  } else if (d.code == 0x44) {
    descriptor = 0;
  } else {
    return false;  // a symbolic descriptor
  }
  if (!inner.next(value)) return false;
  rest_ = inner.rest_;
  return true;
}

bool read_sections(std::string_view encoded, EncodedSections& out) noexcept {
  out = EncodedSections{};
  if (encoded.empty()) return false;  // a transfer of no bytes is no message
  ValueCursor cursor(encoded);
  while (!cursor.at_end()) {
    std::uint64_t descriptor = 0;
    EncodedValue value;
    if (!cursor.next_described(descriptor, value)) return false;
    std::optional<EncodedValue>* slot = nullptr;
    switch (descriptor) {
      case kHeader: slot = value.is_list() && fields_typed(value, kHeaderFields) ? &out.header : nullptr; break;
      case kDeliveryAnnotations: slot = value.is_map() ? &out.delivery_annotations : nullptr; break;
      case kMessageAnnotations: slot = value.is_map() ? &out.message_annotations : nullptr; break;
      case kProperties:
        slot = value.is_list() && fields_typed(value, kPropertiesFields) ? &out.properties : nullptr;
        break;
      case kApplicationProperties: slot = value.is_map() ? &out.application_properties : nullptr; break;
      case kData: slot = value.is_binary() ? &out.body : nullptr; break;
      case kAmqpValue: slot = &out.body; break;
      case kFooter: slot = value.is_map() ? &out.footer : nullptr; break;
      case kAmqpSequence:  // a body of several values: proton's to read
      default: return false;
    }
    if (slot == nullptr || slot->has_value()) return false;
    *slot = value;
  }
  return true;
}

bool well_formed_sections(std::string_view encoded) noexcept {
  if (encoded.empty()) return false;
  ValueCursor cursor(encoded);
  while (!cursor.at_end()) {
    if (!cursor.at_described()) return false;
    if (!cursor.skip()) return !cursor.malformed();
  }
  return true;
}

bool list_field(const EncodedValue& list, std::uint32_t index, std::optional<EncodedValue>& field) noexcept {
  field.reset();
  if (!list.is_list()) return false;
  if (index >= list.count) return true;
  ValueCursor cursor(list.payload, 1);
  EncodedValue value;
  for (std::uint32_t i = 0; i <= index; ++i) {
    if (!cursor.next(value)) return false;
  }
  field = value;
  return true;
}

}  // namespace babelqueue::amqp10
