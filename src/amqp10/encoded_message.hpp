// SPDX-License-Identifier: Apache-2.0
// A received AMQP 1.0 message read straight off its encoded bytes: where
// its sections are, the fields of its header and properties, and cursors
// over the values of a section's list or map.
//
// Why not proton's decoder: pn_message_decode() builds a pn_data tree for
// every map and list of the message, some 600 ns for a message of the
// binding, which is more than a third of what the rest of a receive costs
// (ADR 0060). Reading in place, with every value checked, costs less than
// half of that.
//
// What it covers: the message as AMQP 1.0 §3.2 lays it out, sections named
// by their ulong descriptors, each at most once, one body section (an
// amqp-value or a single data section). Every value is checked to lie
// within the bytes, compounds and arrays to hold what their count says,
// down to a nesting depth of 16. Anything else (a symbolic descriptor, a
// section twice, several data sections, a field of the header or properties
// of a type other than its own, a field of a type the reader does not
// expect) is declined, not guessed at: the caller then lets proton decode
// the message, once well_formed_sections() says its bytes are AMQP
// sections at all.
//
// Thread-safety: views over the caller's bytes; no state of its own.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace babelqueue::amqp10 {

// One value in its encoding.
struct EncodedValue {
  // The format code of its constructor (AMQP 1.0 §1.6), e.g. 0xa1 for a
  // str8. A described value is not an EncodedValue: its descriptor and
  // value are read one after the other (ValueCursor::next_described()).
  std::uint8_t code = 0x40;  // null
  // Fixed width: its bytes (big-endian). Variable width: its data, without
  // the size. List or map: its elements' encodings, without size and count.
  std::string_view payload;
  // List, map or array: how many values it holds (a map's keys and values
  // both count).
  std::uint32_t count = 0;

  bool is_null() const noexcept { return code == 0x40; }
  bool is_string() const noexcept { return code == 0xa1 || code == 0xb1; }
  bool is_symbol() const noexcept { return code == 0xa3 || code == 0xb3; }
  bool is_binary() const noexcept { return code == 0xa0 || code == 0xb0; }
  bool is_list() const noexcept { return code == 0x45 || code == 0xc0 || code == 0xd0; }
  bool is_map() const noexcept { return code == 0xc1 || code == 0xd1; }
  // An array's payload is its element constructor, then its elements.
  bool is_array() const noexcept { return code == 0xe0 || code == 0xf0; }
  // An unsigned integer of up to 32 bits (uint, smalluint, uint0, ubyte,
  // ushort): its value; nullopt for any other type.
  std::optional<std::uint32_t> as_uint() const noexcept;
};

// Reads the values of a run of encoded values (a message's sections, or a
// list's or map's elements) one after the other.
class ValueCursor {
 public:
  explicit ValueCursor(std::string_view bytes, int depth = 0) noexcept : rest_(bytes), depth_(depth) {}

  bool at_end() const noexcept { return rest_.empty(); }
  // The next value is a described one.
  bool at_described() const noexcept { return !rest_.empty() && rest_.front() == '\0'; }

  // The next value, checked to lie within the bytes (a compound down to
  // every value it holds). False at the end, at a described value, and for
  // a value that is malformed or nested deeper than 16.
  bool next(EncodedValue& value) noexcept;

  // Steps over the next value, described or not, checked as next() checks
  // one. False when there is none or it is malformed.
  bool skip() noexcept;

  // After next() or skip() returned false: whether the bytes were no
  // well-formed AMQP value (as opposed to the end, a described value for
  // next(), or a nesting deeper than this reading goes).
  bool malformed() const noexcept { return malformed_; }

  // The next value as a described one with a ulong descriptor: the
  // descriptor into descriptor, the value into value. False otherwise.
  // Where list_unchecked(descriptor) is true, the value must be a list and
  // only its size and count are checked: the caller checks its fields as
  // it walks them.
  bool next_described(std::uint64_t& descriptor, EncodedValue& value,
                      bool (*list_unchecked)(std::uint64_t) = nullptr) noexcept;

 private:
  std::string_view rest_;
  int depth_;
  bool malformed_ = false;
};

// The sections of a message, each as its value (the body: the value of
// its amqp-value section, or the binary of its one data section).
struct EncodedSections {
  std::optional<EncodedValue> header, delivery_annotations, message_annotations, properties, application_properties,
      body, footer;
  // The header's and the properties' fields (§3.2.1, §3.2.4), each of its
  // own type or null (null too where the list is shorter): e.g.
  // header_fields[4] is the delivery-count, properties_fields[10] the
  // group-id.
  std::array<EncodedValue, 5> header_fields;
  std::array<EncodedValue, 13> properties_fields;
};

// Finds the sections of encoded. False when the bytes are not a message
// this reading covers (see the top of this file).
bool read_sections(std::string_view encoded, EncodedSections& out) noexcept;

// Whether encoded is a run of AMQP 1.0 sections, each a described value
// that is well formed, as far as this reading goes (a value nested deeper
// than it goes counts as well formed). False for no bytes, and for bytes
// that are something else, e.g. a JSON document sent as a transfer's bytes:
// proton's decoder takes those for an empty message without an error.
bool well_formed_sections(std::string_view encoded) noexcept;

}  // namespace babelqueue::amqp10
