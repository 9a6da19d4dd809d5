// SPDX-License-Identifier: Apache-2.0
// Internal layout of an Envelope: where each field sits in the envelope's own
// copy of the body. Not part of the stable API.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace babelqueue::detail {

struct Span {
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
};

struct Member {
  Span key;    // the key's JSON string token, quotes included
  Span value;  // the value's JSON text, without surrounding whitespace
};

// Known top-level keys, in canonical order (the `urn` alias sits where `job`
// would be).
// A Member or nothing: what std::optional<Member> would be, with the member
// left unwritten while there is none. An Envelope holds a dozen of them and
// is made for every decoded message; GCC zero-fills a whole
// std::optional<Member> (payload too) when it is made, and that fill was a
// tenth of the cost of decoding a small body.
class OptionalMember {
 public:
  OptionalMember() noexcept {}  // NOLINT: the member is written when there is one
  OptionalMember& operator=(const Member& member) noexcept {
    member_ = member;
    present_ = true;
    return *this;
  }
  explicit operator bool() const noexcept { return present_; }
  bool has_value() const noexcept { return present_; }
  const Member& operator*() const noexcept { return member_; }
  const Member* operator->() const noexcept { return &member_; }

 private:
  union {
    Member member_;
  };
  bool present_ = false;
};

enum class TopKey : std::uint8_t { job, urn, trace_id, data, meta, attempts, dead_letter, count };
// Known meta keys, in canonical order.
enum class MetaKey : std::uint8_t { id, queue, lang, schema_version, created_at, count };

// Their names, indexed by the enums above.
inline constexpr std::array<std::string_view, static_cast<std::size_t>(TopKey::count)> kTopKeyNames{
    "job", "urn", "trace_id", "data", "meta", "attempts", "dead_letter"};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(MetaKey::count)> kMetaKeyNames{
    "id", "queue", "lang", "schema_version", "created_at"};

// A string field's unescaped text: a span of the body, or of the side buffer
// when the token held escapes.
struct Text {
  Span span;
  bool in_side = false;
  bool is_string = false;
};

// An integer field: its value when the token is an integer that fits int64.
struct Integer {
  std::int64_t value = 0;
  bool is_int = false;
};

}  // namespace babelqueue::detail
