// SPDX-License-Identifier: Apache-2.0
#include "encoded_message.hpp"

#include <array>
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

// How a value of each format code is laid out after its constructor
// (AMQP 1.0 §1.6): a fixed width of 0 to 16 bytes, or one of the kinds
// below; kBad for a code AMQP does not define (0x00, a descriptor's mark,
// included: the callers read descriptors themselves).
enum Layout : std::uint8_t {
  kVariable1 = 32,  // a one-byte size, then the bytes
  kVariable4,       // a four-byte size, then the bytes
  kCompound1,       // size and count of one byte each, then the values (list8, map8)
  kCompound4,       // of four bytes each (list32, map32)
  kArray1,          // size and count of one byte each, a constructor, then the values without theirs
  kArray4,
  kBad = 255,
};

constexpr std::array<std::uint8_t, 256> make_layouts() {
  std::array<std::uint8_t, 256> t{};
  for (auto& v : t) v = kBad;
  for (int c = 0x40; c <= 0x45; ++c) t[c] = 0;
  for (int c = 0x50; c <= 0x56; ++c) t[c] = 1;
  t[0x60] = t[0x61] = 2;
  for (int c = 0x70; c <= 0x74; ++c) t[c] = 4;
  for (int c = 0x80; c <= 0x84; ++c) t[c] = 8;
  t[0x94] = t[0x98] = 16;
  t[0xa0] = t[0xa1] = t[0xa3] = kVariable1;
  t[0xb0] = t[0xb1] = t[0xb3] = kVariable4;
  t[0xc0] = t[0xc1] = kCompound1;
  t[0xd0] = t[0xd1] = kCompound4;
  t[0xe0] = kArray1;
  t[0xf0] = kArray4;
  return t;
}
constexpr std::array<std::uint8_t, 256> kLayouts = make_layouts();

// A size or count of width 1 or 4 off the front of rest; false when rest
// is shorter.
bool take_size(std::string_view& rest, bool four, std::uint32_t& size) noexcept {
  if (!four) {
    if (rest.empty()) return false;
    size = static_cast<unsigned char>(rest[0]);
    rest.remove_prefix(1);
    return true;
  }
  if (rest.size() < 4) return false;
  size = static_cast<std::uint32_t>(static_cast<unsigned char>(rest[0])) << 24 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(rest[1])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(rest[2])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(rest[3]));
  rest.remove_prefix(4);
  return true;
}

enum class Taken { ok, malformed, too_deep };

Taken take_compound(std::uint8_t layout, std::string_view& rest, EncodedValue& value, int depth) noexcept;

// The encoding of a value whose constructor, code, was just read off rest:
// its payload (and count) into value, rest past it. Scalars, most values,
// here and inline; lists, maps and arrays in take_compound().
inline Taken take_value(std::uint8_t code, std::string_view& rest, EncodedValue& value, int depth) noexcept {
  value.code = code;
  value.count = 0;
  const std::uint8_t layout = kLayouts[code];
  std::uint32_t size = layout;
  if (layout > 16) {
    if (layout > kVariable4) return take_compound(layout, rest, value, depth);
    if (!take_size(rest, layout == kVariable4, size)) return Taken::malformed;
  }
  if (rest.size() < size) return Taken::malformed;
  value.payload = std::string_view(rest.data(), size);
  rest.remove_prefix(size);
  return Taken::ok;
}

// The descriptor after a 0x00 mark (already read off rest): a ulong or a
// symbol (AMQP 1.0 §1.2).
Taken take_descriptor(std::string_view& rest, int depth) noexcept {
  if (rest.empty()) return Taken::malformed;
  const auto code = static_cast<std::uint8_t>(rest.front());
  rest.remove_prefix(1);
  if (code != 0x44 && code != 0x53 && code != 0x80 && code != 0xa3 && code != 0xb3) return Taken::malformed;
  EncodedValue descriptor;
  return take_value(code, rest, descriptor, depth);
}

// A descriptor and what it describes, as often as they nest, then a value.
Taken take_any(std::string_view& rest, int depth) noexcept {
  for (int described = 0; !rest.empty() && static_cast<std::uint8_t>(rest.front()) == 0x00; ++described) {
    if (described > kMaxDepth) return Taken::too_deep;
    rest.remove_prefix(1);
    if (const Taken t = take_descriptor(rest, depth); t != Taken::ok) return t;
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
    if (const Taken t = take_descriptor(payload, depth); t != Taken::ok) return t;
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

// A list's, map's or array's size and count (each of four bytes, or of
// one) off rest, its elements into value.payload, unchecked; false when
// they do not fit.
bool take_compound_bounds(bool four, std::string_view& rest, EncodedValue& value) noexcept {
  std::uint32_t size = 0;
  // The size counts the count's bytes too.
  if (!take_size(rest, four, size) || rest.size() < size) return false;
  std::string_view body = rest.substr(0, size);
  rest.remove_prefix(size);
  if (!take_size(body, four, value.count)) return false;
  value.payload = body;
  return true;
}

// take_value() for a list, map or array (its layout), and for a code AMQP
// does not define.
Taken take_compound(std::uint8_t layout, std::string_view& rest, EncodedValue& value, int depth) noexcept {
  if (layout < kCompound1 || layout > kArray4) return Taken::malformed;
  const bool array = layout == kArray1 || layout == kArray4;
  if (!take_compound_bounds(layout == kCompound4 || layout == kArray4, rest, value)) return Taken::malformed;
  if (array) return array_holds(value.payload, value.count, depth + 1);
  if (value.is_map() && value.count % 2 != 0) return Taken::malformed;
  return elements_hold(value.payload, value.count, depth + 1);
}

// A list's size and count, its elements left unchecked (the caller walks
// them with a ValueCursor, which checks each); false for anything but a
// list, or one that does not fit in rest.
bool take_list_bounds(std::string_view& rest, EncodedValue& value) noexcept {
  if (rest.empty()) return false;
  const auto code = static_cast<std::uint8_t>(rest.front());
  if (code != 0x45 && code != 0xc0 && code != 0xd0) return false;
  rest.remove_prefix(1);
  value.code = code;
  value.count = 0;
  value.payload = {};
  return code == 0x45 || take_compound_bounds(code == 0xd0, rest, value);
}

// The sections whose lists read_sections() checks field by field.
bool descriptor_is_list_section(std::uint64_t descriptor) noexcept {
  return descriptor == kHeader || descriptor == kProperties;
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

// Every field of a section's list well formed and of the type its place
// gives it, no more fields than the section has, and nothing after them,
// each into fields (those the list
// leaves out stay null). proton reads a section whose fields are of other
// types only in part (it stops at the first one that does not fit), so
// such a section is left to it.
template <std::size_t N>
bool typed_fields(const EncodedValue& list, const unsigned (&types)[N], std::array<EncodedValue, N>& fields) noexcept {
  if (list.count > N) return false;
  ValueCursor cursor(list.payload, 1);
  for (std::uint32_t i = 0; i < list.count; ++i) {
    EncodedValue& field = fields[i];
    if (!cursor.next(field)) return false;
    if (!field.is_null() && (type_of(field.code) & types[i]) == 0) return false;
  }
  return cursor.at_end();  // the count's fields fill the list exactly
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

bool ValueCursor::next_described(std::uint64_t& descriptor, EncodedValue& value,
                                 bool (*list_unchecked)(std::uint64_t)) noexcept {
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
  if (list_unchecked != nullptr && list_unchecked(descriptor)) {
    if (!take_list_bounds(inner.rest_, value)) return false;
  } else if (!inner.next(value)) {
    return false;
  }
  rest_ = inner.rest_;
  return true;
}

bool read_sections(std::string_view encoded, EncodedSections& out) noexcept {
  for (auto* section : {&out.header, &out.delivery_annotations, &out.message_annotations, &out.properties,
                        &out.application_properties, &out.body, &out.footer}) {
    section->reset();
  }
  out.header_fields.fill(EncodedValue{});
  out.properties_fields.fill(EncodedValue{});
  if (encoded.empty()) return false;  // a transfer of no bytes is no message
  ValueCursor cursor(encoded);
  while (!cursor.at_end()) {
    std::uint64_t descriptor = 0;
    EncodedValue value;
    // The header's and properties' lists are checked field by field as
    // their fields are taken, not walked once more before.
    if (!cursor.next_described(descriptor, value, descriptor_is_list_section)) return false;
    std::optional<EncodedValue>* slot = nullptr;
    switch (descriptor) {
      case kHeader: slot = typed_fields(value, kHeaderFields, out.header_fields) ? &out.header : nullptr; break;
      case kDeliveryAnnotations: slot = value.is_map() ? &out.delivery_annotations : nullptr; break;
      case kMessageAnnotations: slot = value.is_map() ? &out.message_annotations : nullptr; break;
      case kProperties:
        slot = typed_fields(value, kPropertiesFields, out.properties_fields) ? &out.properties : nullptr;
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

}  // namespace babelqueue::amqp10
