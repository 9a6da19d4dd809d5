// SPDX-License-Identifier: Apache-2.0
// The fast path of Envelope::decode. Stage 1 of simdjson's DOM parser, with
// the kernel simdjson picks for the CPU at run time, validates the UTF-8 of
// the whole body, finds every unescaped control character in a string and
// leaves the position of each token behind (brackets, ':', ',', and the first
// byte of every string, number and literal: simdjson's structural indexes).
// One walk over those positions does the rest of a strict parse: the grammar,
// the nesting depth, each number's text, each literal, each escape sequence
// (through the kernel's own string parser), and it reads the frame and meta
// as it passes them. It stands in for simdjson's stage 2, which would write a
// tape of the whole body (every number converted, every string copied) that
// the envelope never reads: data and unknown values stay spans of the body.
//
// The walk handles the bodies a consumer sees: a valid object within the
// limits, without duplicate frame or meta keys and without escapes in their
// keys. Anything else returns false and the On-Demand pass of
// envelope_decode.cpp decides, with its typed reason and message: the two
// agree on every body the walk accepts (docs/adr/0043).
#include "envelope_decode_indexes.hpp"

#include "envelope_keys.hpp"
#include "json_walk.hpp"
#include "parser_pool.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace babelqueue {

using detail::Member;
using detail::Span;

namespace {

// Containers nested deeper than this (below the frame) are left to the
// On-Demand pass, which has no limit of its own but the caller's max_depth.
constexpr std::size_t kMaxLevels = 1024;

// What the walk returns for a value that is not valid: no offset in a body
// can be this large (decode refuses a body of 2^32 - 1 bytes or more).
constexpr Span kNoSpan{UINT32_MAX, 0};

// Whether text[0..n) holds a '\\'. Reads whole blocks, up to 15 bytes past
// the text: every text here lies in an envelope's body, which is followed by
// simdjson's padding.
bool has_backslash(const char* text, std::size_t n) noexcept {
#if defined(__SSE2__)
  const __m128i backslash = _mm_set1_epi8('\\');
  for (std::size_t i = 0; i < n; i += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text + i));
    auto mask = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, backslash)));
    if (n - i < 16) mask &= (1U << (n - i)) - 1U;
    if (mask != 0) return true;
  }
  return false;
#else
  return std::memchr(text, '\\', n) != nullptr;
#endif
}

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

const char* skip_digits(const char* p, const char* end) noexcept {
  while (p != end && is_digit(*p)) ++p;
  return p;
}

// The JSON number grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// as detail::is_json_number checks it, inline for the walk.
// The rest of a number token after its integer part, (\.[0-9]+)?([eE][+-]?[0-9]+)?,
// to its end.
bool is_number_tail(const char* p, const char* end) noexcept {
  if (p != end && *p == '.') {
    ++p;
    if (p == end || !is_digit(*p)) return false;
    p = skip_digits(p, end);
  }
  if (p != end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p != end && (*p == '+' || *p == '-')) ++p;
    if (p == end || !is_digit(*p)) return false;
    p = skip_digits(p, end);
  }
  return p == end;
}

bool is_number(const char* p, const char* end) noexcept {
  if (p != end && *p == '-') ++p;
  if (p == end || !is_digit(*p)) return false;
  p = *p == '0' ? p + 1 : skip_digits(p, end);
  return is_number_tail(p, end);
}

// Whether the eight bytes at p are all digits, and then their value in n.
// The bytes are read as one little-endian word: each byte minus '0' must stay
// within 0..9 (no borrow below '0', no carry past '9'), then pairs, quads and
// the two halves are combined by multiplications.
bool eight_digits(const char* p, std::uint64_t& n) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  // The word's bytes are in the other order: the digit-by-digit loop reads them.
  (void)p;
  (void)n;
  return false;
#endif
  std::uint64_t word = 0;
  std::memcpy(&word, p, sizeof word);
  if ((((word + 0x4646464646464646) | (word - 0x3030303030303030)) & 0x8080808080808080) != 0) return false;
  word -= 0x3030303030303030;
  word = word * 10 + (word >> 8);  // each even byte: its digit pair's value
  constexpr std::uint64_t kMask = 0x000000FF000000FF;
  constexpr std::uint64_t kMul1 = 100 + (1000000ULL << 32);
  constexpr std::uint64_t kMul2 = 1 + (10000ULL << 32);
  n = (((word & kMask) * kMul1) + (((word >> 16) & kMask) * kMul2)) >> 32;
  return true;
}

bool is_literal(const char* begin, const char* end, std::string_view literal) noexcept {
  return static_cast<std::size_t>(end - begin) == literal.size() &&
         std::memcmp(begin, literal.data(), literal.size()) == 0;
}

// A buffer per thread that the kernel's string parser unescapes into: it
// needs the string's size plus simdjson's padding. Grown to the largest body
// seen, so that decoding allocates nothing for it afterwards.
std::string& unescape_buffer(std::size_t body_size) {
  thread_local std::string buffer;
  const std::size_t need = body_size + simdjson::SIMDJSON_PADDING;
  if (buffer.size() < need) buffer.resize(need);
  return buffer;
}

}  // namespace

class EnvelopeIndexDecoder {
 public:
  EnvelopeIndexDecoder(Envelope& env, const DecodeOptions& options,
                       const simdjson::internal::dom_parser_implementation& kernel, std::string& unescaped)
      : env_(env),
        options_(options),
        base_(env.buffer_.data()),
        body_end_(static_cast<std::uint32_t>(env.body_size_)),
        at_(kernel.structural_indexes.get()),
        kernel_(kernel),
        unescaped_(reinterpret_cast<std::uint8_t*>(unescaped.data())),
        may_escape_(std::memchr(base_, '\\', body_end_) != nullptr) {}

  // Reads the root object; false when the On-Demand pass must decide.
  bool root() {
    if (options_.max_depth < 1 || byte() != '{') return false;
    ++at_;
    return frame();
  }

  // The warnings the walk found, told to on_warning once the walk succeeded.
  void tell_warnings() const {
    if (!options_.on_warning) return;
    for (const auto& pointer : env_.warnings_) options_.on_warning(pointer);
  }

 private:
  const char* here() const noexcept { return base_ + *at_; }
  char byte() const noexcept { return *here(); }
  // The end of the current token: the next one's start, white space trimmed.
  const char* token_end() const noexcept {
    const char* end = base_ + at_[1];
    while (detail::is_json_space(end[-1])) --end;
    return end;
  }
  Span span(const char* begin, const char* end) const noexcept {
    return Span{static_cast<std::uint32_t>(begin - base_), static_cast<std::uint32_t>(end - begin)};
  }

  // ---- the canonical frame ----
  //
  // What every SDK writes: {"job":"…","trace_id":"…","data":…,"meta":{"id":
  // "…","queue":"…","lang":"…","schema_version":N,"created_at":N},
  // "attempts":N}, the known keys once each in that order, the strings read
  // without escapes, the numbers integers. frame() reads it in one straight
  // pass that knows which key comes next: no key lookup, no duplicate set, no
  // dispatch on the key. At the first member that is not the next one of that
  // form (another key, white space between a key and its ':', a value of
  // another kind, an escape, members after attempts) it hands the rest of
  // the object to the general walk, which goes on from that member knowing
  // the keys read so far: every body is read once, and each member exactly
  // as the general walk alone would read it (same spans, same fields, same
  // failures). White space elsewhere is no obstacle: it is not a token.

  // The frame's keys in canonical order (meta's are kMetaKeyNames' order).
  static constexpr std::array<detail::TopKey, 5> kCanonicalTop{detail::TopKey::job, detail::TopKey::trace_id,
                                                               detail::TopKey::data, detail::TopKey::meta,
                                                               detail::TopKey::attempts};

  // The key at the cursor is quoted_colon ("\"job\":"); the cursor moves to
  // its value. The bytes alone decide: a string token that starts with them
  // is that key, and the ':' right after it is the next token.
  template <std::size_t N>
  bool expect_key(const char (&quoted_colon)[N], Span& key_token) noexcept {
    const char* begin = here();
    if (std::memcmp(begin, quoted_colon, N - 1) != 0) return false;
    key_token = span(begin, begin + N - 2);  // without the ':'
    at_ += 2;
    return true;
  }

  // The token at the cursor is c; the cursor moves past it.
  bool expect(char c) noexcept {
    if (byte() != c) return false;
    ++at_;
    return true;
  }

  // A string value without escapes at the cursor, kept in text and slot;
  // false (nothing kept, the cursor where it was) for any other value.
  bool canonical_text(Span key_token, detail::OptionalMember& slot, detail::Text& text) {
    const char* begin = here();
    if (*begin != '"') return false;
    const char* end = token_end();
    if (end - begin < 2 || end[-1] != '"') return false;
    if (may_escape_ && has_backslash(begin + 1, static_cast<std::size_t>(end - begin - 2))) return false;
    ++at_;
    const Span bytes = span(begin, end);
    slot = Member{key_token, bytes};
    text.span = Span{bytes.offset + 1, bytes.size - 2};
    text.is_string = true;
    return true;
  }

  // An integer value at the cursor that fits int64, kept in slot, the
  // integer left in int_value_; false (nothing kept, the cursor where it
  // was) for any other value.
  bool canonical_integer(Span key_token, detail::OptionalMember& slot) {
    const char* begin = here();
    if (*begin != '-' && !is_digit(*begin)) return false;
    const char* end = token_end();
    is_int_ = false;
    if (!number(begin, end) || !is_int_) return false;
    ++at_;
    slot = Member{key_token, span(begin, end)};
    return true;
  }

  // The frame's members from the one at the cursor on, by the general walk;
  // read: how many of kCanonicalTop were read before it. first: it is the
  // frame's first member (the frame may then be empty).
  bool general_frame(std::size_t read, bool first) {
    detail::KeySet keys;
    for (std::size_t i = 0; i < read; ++i) {
      const auto k = static_cast<std::size_t>(kCanonicalTop[i]);
      keys.insert(detail::kTopKeyNames[k], static_cast<int>(k));
    }
    const int expect = read < kCanonicalTop.size()
                           ? static_cast<int>(kCanonicalTop[read])
                           : detail::kTopKeyNext[static_cast<std::size_t>(kCanonicalTop.back())];
    detail::KeyLookup lookup(detail::kTopKeyNames, detail::kTopKeyNext, expect);
    auto field = [&](std::string_view key, Span key_token) {
      return top_field(key, lookup.find(key), key_token, keys);
    };
    if (!(first ? members(field) : members_from(field))) return false;
    // Stage 1 ends the positions with the body's length: anything before it
    // is content after the envelope object.
    return *at_ == body_end_;
  }

  // After the value of the read-th canonical member: the frame ends, or the
  // general walk goes on from the next member.
  bool general_frame_after(std::size_t read) {
    const char c = byte();
    ++at_;
    if (c == '}') return *at_ == body_end_;
    return c == ',' && general_frame(read, false);
  }

  // meta's members from the one at the cursor on, by the general walk (read,
  // first: as for general_frame), then the rest of the frame.
  bool general_meta(std::size_t read, bool first, Span key_token, const char* meta_begin) {
    detail::KeySet keys;
    for (std::size_t i = 0; i < read; ++i) keys.insert(detail::kMetaKeyNames[i], static_cast<int>(i));
    detail::KeyLookup lookup(detail::kMetaKeyNames, detail::kMetaKeyNext,
                             read < detail::kMetaKeyNames.size() ? static_cast<int>(read) : -1);
    auto field = [&](std::string_view name, Span name_token) {
      return meta_field(name, lookup.find(name), name_token, keys);
    };
    if (!(first ? members(field) : members_from(field))) return false;
    end_meta(key_token, meta_begin);
    return general_frame_after(4);
  }

  // After the value of meta's read-th member: meta ends, or the general walk
  // goes on from its next member.
  bool general_meta_after(std::size_t read, Span key_token, const char* meta_begin) {
    const char c = byte();
    ++at_;
    if (c == '}') {
      end_meta(key_token, meta_begin);
      return general_frame_after(4);
    }
    return c == ',' && general_meta(read, false, key_token, meta_begin);
  }

  // meta, whose '}' the cursor just passed, is kept.
  void end_meta(Span key_token, const char* meta_begin) {
    env_.top_[static_cast<std::size_t>(detail::TopKey::meta)] =
        Member{key_token, span(meta_begin, base_ + at_[-1] + 1)};
    env_.meta_is_object_ = true;
  }

  // The frame, whose '{' the cursor just passed.
  bool frame() {
    using detail::MetaKey;
    using detail::TopKey;
    auto top = [&](TopKey k) -> detail::OptionalMember& { return env_.top_[static_cast<std::size_t>(k)]; };
    auto meta = [&](MetaKey k) -> detail::OptionalMember& { return env_.meta_[static_cast<std::size_t>(k)]; };
    const std::uint32_t* member = at_;  // where the member being read starts
    Span key{};
    if (!expect_key("\"job\":", key) || !canonical_text(key, top(TopKey::job), env_.job_)) {
      at_ = member;
      return general_frame(0, true);
    }
    if (!expect(',')) return general_frame_after(1);
    member = at_;
    if (!expect_key("\"trace_id\":", key) || !canonical_text(key, top(TopKey::trace_id), env_.trace_id_)) {
      at_ = member;
      return general_frame(1, false);
    }
    if (!expect(',')) return general_frame_after(2);
    member = at_;
    if (!expect_key("\"data\":", key)) return general_frame(2, false);
    const char data_type = byte();
    const Span data = value(2);
    if (data.offset == kNoSpan.offset) return false;
    top(TopKey::data) = Member{key, data};
    env_.data_is_object_ = data_type == '{';
    if (!expect(',')) return general_frame_after(3);

    member = at_;
    if (!expect_key("\"meta\":", key) || options_.max_depth < 2 || byte() != '{') {
      at_ = member;
      return general_frame(3, false);
    }
    const char* meta_begin = here();
    ++at_;  // the '{'
    const std::uint32_t* inner_member = at_;
    Span inner{};
    if (!expect_key("\"id\":", inner) || !canonical_text(inner, meta(MetaKey::id), env_.id_)) {
      at_ = inner_member;
      return general_meta(0, true, key, meta_begin);
    }
    if (!expect(',')) return general_meta_after(1, key, meta_begin);
    inner_member = at_;
    if (!expect_key("\"queue\":", inner) || !canonical_text(inner, meta(MetaKey::queue), env_.queue_)) {
      at_ = inner_member;
      return general_meta(1, false, key, meta_begin);
    }
    if (!expect(',')) return general_meta_after(2, key, meta_begin);
    inner_member = at_;
    if (!expect_key("\"lang\":", inner) || !canonical_text(inner, meta(MetaKey::lang), env_.lang_)) {
      at_ = inner_member;
      return general_meta(2, false, key, meta_begin);
    }
    if (!expect(',')) return general_meta_after(3, key, meta_begin);
    inner_member = at_;
    if (!expect_key("\"schema_version\":", inner) || !canonical_integer(inner, meta(MetaKey::schema_version))) {
      at_ = inner_member;
      return general_meta(3, false, key, meta_begin);
    }
    env_.schema_version_ = detail::Integer{int_value_, true};
    if (!expect(',')) return general_meta_after(4, key, meta_begin);
    inner_member = at_;
    if (!expect_key("\"created_at\":", inner) || !canonical_integer(inner, meta(MetaKey::created_at))) {
      at_ = inner_member;
      return general_meta(4, false, key, meta_begin);
    }
    env_.created_at_ = detail::Integer{int_value_, true};
    if (!expect('}')) return general_meta_after(5, key, meta_begin);
    end_meta(key, meta_begin);
    if (!expect(',')) return general_frame_after(4);

    member = at_;
    if (!expect_key("\"attempts\":", key) || !canonical_integer(key, top(TopKey::attempts))) {
      at_ = member;
      return general_frame(4, false);
    }
    env_.attempts_valid_ = int_value_ >= 0;
    env_.attempts_ = env_.attempts_valid_ ? int_value_ : 0;
    return general_frame_after(5);
  }

  // The members of the object whose '{' the cursor just passed, each handed
  // to field(key, key token) with the cursor at its value; the cursor ends
  // past the '}'. The keys are read raw (see raw_key()).
  template <class Field>
  bool members(Field field) {
    if (byte() == '}') {
      ++at_;
      return true;
    }
    return members_from(field);
  }

  // members() from a member's key at the cursor on (after a ',').
  template <class Field>
  bool members_from(Field field) {
    for (;;) {
      if (byte() != '"') return false;
      const char* begin = here();
      const char* end = token_end();
      if (end - begin < 2 || end[-1] != '"' || base_[at_[1]] != ':') return false;
      const std::string_view key(begin + 1, static_cast<std::size_t>(end - begin - 2));
      at_ += 2;
      if (!field(key, span(begin, end))) return false;
      const char c = byte();
      ++at_;
      if (c == '}') return true;
      if (c != ',') return false;
    }
  }

  // The string token [begin, end) (quotes included) is well formed; escaped_
  // says whether it held escapes (then checked by unescaping them).
  bool string(const char* begin, const char* end) {
    if (end - begin < 2 || end[-1] != '"') return false;
    escaped_ = may_escape_ && has_backslash(begin + 1, static_cast<std::size_t>(end - begin - 2));
    if (!escaped_) return true;
    return kernel_.parse_string(reinterpret_cast<const std::uint8_t*>(begin + 1), unescaped_) != nullptr;
  }

  // The number token [p, end) against the JSON grammar,
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, as detail::is_json_number
  // checks it. On the way it reads an integer token into int_value_ (and sets
  // is_int_) when it fits int64, as parse_int64 (what the On-Demand pass
  // reads) says: the integers of the frame then cost no second pass.
  bool number(const char* p, const char* end) noexcept {
    const char* const begin = p;
    const bool negative = p != end && *p == '-';
    if (negative) ++p;
    if (p == end || !is_digit(*p)) return false;
    const char* const digits = p;
    std::uint64_t value = 0;  // wraps past 19 digits, and is then not used
    if (*p == '0') {
      ++p;
    } else {
      // Eight digits at a time while eight remain (a millisecond timestamp
      // has 13): one chain of three multiplications instead of eight.
      for (std::uint64_t eight = 0; end - p >= 8 && eight_digits(p, eight); p += 8) value = value * 100000000 + eight;
      for (; p != end && is_digit(*p); ++p) value = value * 10 + static_cast<unsigned>(*p - '0');
    }
    if (p == end) {
      if (p - digits <= 18) {
        const auto magnitude = static_cast<std::int64_t>(value);
        int_value_ = negative ? -magnitude : magnitude;
        is_int_ = true;
      } else if (const auto n = detail::parse_int64(std::string_view(begin, static_cast<std::size_t>(end - begin)))) {
        int_value_ = *n;
        is_int_ = true;
      }
      return true;
    }
    return is_number_tail(p, end);
  }

  // Checks the scalar at the cursor and moves past it; end: where it ends.
  // A number is read as an integer too (number()) only when Read: for the
  // values of the frame and meta, not for those inside data.
  template <bool Read>
  bool scalar(const char*& end) {
    const char* begin = here();
    end = token_end();
    ++at_;
    switch (*begin) {
      case '"': return string(begin, end);
      case 't': return is_literal(begin, end, "true");
      case 'f': return is_literal(begin, end, "false");
      case 'n': return is_literal(begin, end, "null");
      default: return Read ? number(begin, end) : is_number(begin, end);
    }
  }

  // Checks the array or object at the cursor, whose first level is at depth,
  // and moves past it.
  bool container(std::size_t depth) {
    char closing[kMaxLevels + 1];  // the bracket that closes each open level
    std::size_t level = 0;
    for (;;) {
      // At a value.
      const char c = byte();
      if (c == '{' || c == '[') {
        ++level;
        if (level > kMaxLevels || depth - 1 + level > options_.max_depth) return false;
        closing[level] = c == '{' ? '}' : ']';
        ++at_;
        if (byte() != closing[level]) {
          if (c == '{' && !key()) return false;
          continue;
        }
      } else {
        const char* ignored = nullptr;
        if (!scalar<false>(ignored)) return false;
      }
      // After a value (or at an empty container's closing bracket): close
      // the levels that end here, then step to the next value.
      for (;;) {
        const char next = byte();
        if (next == closing[level]) {
          ++at_;
          if (--level == 0) return true;
          continue;
        }
        if (next != ',') return false;
        ++at_;
        if (closing[level] == '}' && !key()) return false;
        break;
      }
    }
  }

  // A key of an object inside a value and its ':'.
  bool key() {
    if (byte() != '"') return false;
    const char* end = nullptr;
    if (!scalar<false>(end) || byte() != ':') return false;
    ++at_;
    return true;
  }

  // Checks the value at the cursor and moves past it; its bytes, or kNoSpan
  // when it is not valid. depth: the nesting level of a container there.
  // Spans are returned by value, in one register: one written through a
  // reference field by field and then read whole, or an optional<Span> whose
  // flag byte is stored and then read back with the span as one word, stalls
  // the store buffer.
  Span value(std::size_t depth) {
    const char* begin = here();
    const char* end = nullptr;
    if (*begin == '{' || *begin == '[') {
      if (!container(depth)) return kNoSpan;
      end = base_ + at_[-1] + 1;
      is_int_ = false;  // the numbers inside say nothing of the container
    } else {
      escaped_ = false;
      is_int_ = false;
      if (!scalar<true>(end)) return kNoSpan;
    }
    return span(begin, end);
  }

  // A string field's text: in place, or unescaped into side_ when the token
  // holds escapes.
  void read_text(Span token, detail::Text& text) {
    text.is_string = true;
    if (!escaped_) {
      text.span = Span{token.offset + 1, token.size - 2};
      return;
    }
    const auto* end = kernel_.parse_string(reinterpret_cast<const std::uint8_t*>(base_ + token.offset + 1), unescaped_);
    const auto size = static_cast<std::size_t>(end - unescaped_);
    text.in_side = true;
    text.span = Span{static_cast<std::uint32_t>(env_.side_.size()), static_cast<std::uint32_t>(size)};
    env_.side_.append(reinterpret_cast<const char*>(unescaped_), size);
  }

  // A raw key that is not a known one must hold no escape: the On-Demand
  // pass compares unescaped keys, so such a key is left to it. (A known key
  // matched raw holds none.)
  bool raw_key(std::string_view key, int known) const noexcept {
    return known >= 0 || !may_escape_ || !has_backslash(key.data(), key.size());
  }

  bool top_field(std::string_view key, int known, Span key_token, detail::KeySet& keys) {
    if (!raw_key(key, known) || !keys.insert(key, known)) return false;
    const char type = byte();
    const Span bytes = known == static_cast<int>(detail::TopKey::meta) && type == '{' ? meta() : value(2);
    if (bytes.offset == kNoSpan.offset) return false;
    const Member m{key_token, bytes};
    if (known < 0) {
      // Only an unknown key can be a forbidden one.
      if (detail::is_forbidden_top(key)) {
        env_.warnings_.push_back(detail::json_pointer("/", key));
      } else {
        env_.unknown_top_.push_back(m);
      }
      return true;
    }
    // A known key is kept in its slot directly: keep_top's optional result,
    // a byte stored and read back, cost a stalled load per member.
    env_.top_[static_cast<std::size_t>(known)] = m;
    switch (static_cast<detail::TopKey>(known)) {
      case detail::TopKey::job:
      case detail::TopKey::urn:
      case detail::TopKey::trace_id:
        if (type == '"') read_text(m.value, env_.text_of(static_cast<detail::TopKey>(known)));
        break;
      case detail::TopKey::data: env_.data_is_object_ = type == '{'; break;
      case detail::TopKey::attempts: {
        const bool valid = is_int_ && int_value_ >= 0;
        env_.attempts_valid_ = valid;
        env_.attempts_ = valid ? int_value_ : 0;
        break;
      }
      default: break;
    }
    return true;
  }

  // The meta object at the cursor, member by member; its bytes, or kNoSpan.
  Span meta() {
    if (2 > options_.max_depth) return kNoSpan;
    const char* begin = here();
    ++at_;  // the '{'
    detail::KeySet keys;
    detail::KeyLookup lookup(detail::kMetaKeyNames, detail::kMetaKeyNext);
    if (!members(
            [&](std::string_view key, Span key_token) { return meta_field(key, lookup.find(key), key_token, keys); })) {
      return kNoSpan;
    }
    env_.meta_is_object_ = true;
    return span(begin, base_ + at_[-1] + 1);
  }

  bool meta_field(std::string_view key, int known, Span key_token, detail::KeySet& keys) {
    if (!raw_key(key, known) || !keys.insert(key, known)) return false;
    const char type = byte();
    const Span bytes = value(3);
    if (bytes.offset == kNoSpan.offset) return false;
    const Member m{key_token, bytes};
    if (known < 0) {
      if (detail::is_forbidden_meta(key)) {
        env_.warnings_.push_back(detail::json_pointer("/meta/", key));
      } else {
        env_.unknown_meta_.push_back(m);
      }
      return true;
    }
    env_.meta_[static_cast<std::size_t>(known)] = m;
    switch (static_cast<detail::MetaKey>(known)) {
      case detail::MetaKey::id:
      case detail::MetaKey::queue:
      case detail::MetaKey::lang:
        if (type == '"') read_text(m.value, env_.text_of(static_cast<detail::MetaKey>(known)));
        break;
      case detail::MetaKey::schema_version:
      case detail::MetaKey::created_at:
        if (is_int_) env_.integer_of(static_cast<detail::MetaKey>(known)) = detail::Integer{int_value_, true};
        break;
      default: break;
    }
    return true;
  }

  Envelope& env_;
  const DecodeOptions& options_;
  const char* base_;
  std::uint32_t body_end_;
  const std::uint32_t* at_;  // the current token's position
  const simdjson::internal::dom_parser_implementation& kernel_;
  std::uint8_t* unescaped_;
  // Whether the body holds a '\\' at all (one scan of it): most hold none,
  // and then no string is scanned for one.
  bool may_escape_;
  bool escaped_ = false;  // the last string checked held escapes
  // The last value checked was an integer that fits int64, and its value.
  bool is_int_ = false;
  std::int64_t int_value_ = 0;
};

namespace detail {

bool decode_on_indexes(Envelope& env, const DecodeOptions& options) {
  simdjson::dom::parser& parser = thread_dom_parser();
  const std::size_t size = env.body().size();
  if (size == 0) return false;
  if (parser.capacity() < size) {
    // What parse() would do first; the document (the tape stage 2 writes)
    // is left as it is: stage 2 never runs here.
    if (parser.allocate(std::max<std::size_t>(size, 64), parser.max_depth()) != simdjson::SUCCESS) return false;
  }
  auto& kernel = *parser.implementation;
  if (kernel.stage1(reinterpret_cast<const std::uint8_t*>(env.body().data()), size, simdjson::stage1_mode::regular) !=
      simdjson::SUCCESS) {
    return false;
  }
  EnvelopeIndexDecoder decoder(env, options, kernel, unescape_buffer(size));
  if (!decoder.root()) return false;
  decoder.tell_warnings();
  return true;
}

}  // namespace detail

}  // namespace babelqueue
