// SPDX-License-Identifier: Apache-2.0
// The fast path of Envelope::decode: simdjson's DOM parser validates the whole
// body (UTF-8, strings and their escapes, numbers, literals, structure) with
// the kernel picked for the CPU at run time, then a walk of the frame and of
// meta reads the fields. The parser's structural indexes (where each token
// starts) give the bytes of every member, so `data` and unknown values stay
// spans of the body and are never re-read. The walk reads the tree straight
// from simdjson's tape (one 64-bit word a value, its type in the top byte,
// strings in a side buffer: simdjson's doc/tape.md), which spares the DOM
// accessors' checks on the dozen fields of a frame.
//
// The walk handles the bodies a consumer sees: a valid object within the
// limits, without duplicate frame or meta keys. Anything else (a parse error,
// a duplicate, nesting over the limit) returns false and the On-Demand pass of
// envelope_decode.cpp decides, with its typed reason and message: the two
// agree on every body the walk accepts (docs/adr/0036).
#include "envelope_decode_dom.hpp"

#include "envelope_keys.hpp"
#include "json_walk.hpp"
#include "parser_pool.hpp"
#include "structural_cursor.hpp"

#include <cstdint>
#include <cstring>
#include <optional>

namespace babelqueue {

using detail::Member;
using detail::Span;

namespace {

bool is_container(char type) noexcept { return type == '{' || type == '['; }

}  // namespace

class EnvelopeTapeDecoder {
 public:
  EnvelopeTapeDecoder(Envelope& env, const DecodeOptions& options, const simdjson::dom::parser& parser)
      : env_(env), options_(options), base_(env.buffer_.data()), tape_(parser.doc), at_(base_, parser) {}

  // Reads the root object; false when the On-Demand pass must decide.
  bool root() {
    if (tape_.type(1) != '{') return false;  // 0 is the root word
    at_.advance();                           // the '{'
    detail::KeySet keys;
    detail::KeyLookup lookup(detail::kTopKeyNames, detail::kTopKeyNext);
    for (std::size_t t = 2; tape_.type(t) != '}';) {
      const std::size_t value = t + 1;
      const std::string_view key = tape_.string(t);
      if (!top_field(key, lookup.find(key), value, keys)) return false;
      t = tape_.after(value);
    }
    return at_.byte() == '}';
  }

  // The warnings the walk found, told to on_warning once the walk succeeded.
  void tell_warnings() const {
    if (!options_.on_warning) return;
    for (const auto& pointer : env_.warnings_) options_.on_warning(pointer);
  }

 private:
  Span span(std::string_view token) const noexcept {
    return Span{static_cast<std::uint32_t>(token.data() - base_), static_cast<std::uint32_t>(token.size())};
  }

  // The member whose key token is at the cursor; leaves the cursor after its
  // value and the ',' that may follow. depth: the value's nesting level; a
  // container in it that nests deeper than the limit sets too_deep_. Returned
  // by value (in registers): a Member written field by field on the stack and
  // then copied whole stalls the store buffer.
  Member member(char type, std::size_t depth) {
    const Span key = span(at_.key());
    Span value;
    if (is_container(type)) {
      std::size_t deepest = 0;
      value = span(at_.container(deepest));
      too_deep_ |= depth - 1 + deepest > options_.max_depth;
    } else {
      value = span(at_.scalar());
    }
    at_.skip_comma();
    return Member{key, value};
  }

  // A string field's text: in place, or unescaped into side_ when the token
  // holds escapes (an escape always makes the text shorter than its token).
  void read_text(Span token, std::size_t value, detail::Text& text) {
    text.is_string = true;
    const std::string_view unescaped = tape_.string(value);
    if (unescaped.size() + 2 == token.size) {
      text.span = Span{token.offset + 1, token.size - 2};
      return;
    }
    text.in_side = true;
    text.span = Span{static_cast<std::uint32_t>(env_.side_.size()), static_cast<std::uint32_t>(unescaped.size())};
    env_.side_.append(unescaped);
  }

  bool top_field(std::string_view key, int known, std::size_t value, detail::KeySet& keys) {
    if (!keys.insert(key, known)) return false;
    const char type = tape_.type(value);
    Member m;
    if (known == static_cast<int>(detail::TopKey::meta) && type == '{') {
      if (!meta(value, m)) return false;
    } else {
      m = member(type, 2);
      if (too_deep_) return false;
    }
    if (detail::is_forbidden_top(key)) {
      env_.warnings_.push_back(detail::json_pointer("/", key));
      return true;
    }
    const auto which = env_.keep_top(known, m);
    if (!which) return true;
    switch (*which) {
      case detail::TopKey::job:
      case detail::TopKey::urn:
      case detail::TopKey::trace_id: {
        detail::Text& text = env_.text_of(*which);
        if (type == '"') read_text(m.value, value, text);
        break;
      }
      case detail::TopKey::data: env_.data_is_object_ = type == '{'; break;
      case detail::TopKey::attempts: {
        const std::optional<std::int64_t> n = tape_.int64(value);
        env_.attempts_valid_ = n.has_value() && *n >= 0;
        env_.attempts_ = env_.attempts_valid_ ? *n : 0;
        break;
      }
      default: break;
    }
    return true;
  }

  // The meta object, member by member; m gets its spans.
  bool meta(std::size_t object, Member& m) {
    if (2 > options_.max_depth) return false;
    const Span key_token = span(at_.key());
    const char* begin = at_.here();
    at_.advance();  // the '{'
    detail::KeySet keys;
    detail::KeyLookup lookup(detail::kMetaKeyNames, detail::kMetaKeyNext);
    for (std::size_t t = object + 1; tape_.type(t) != '}';) {
      const std::size_t value = t + 1;
      const std::string_view key = tape_.string(t);
      if (!meta_field(key, lookup.find(key), value, keys)) return false;
      t = tape_.after(value);
    }
    if (at_.byte() != '}') return false;
    m = Member{key_token,
               Span{static_cast<std::uint32_t>(begin - base_), static_cast<std::uint32_t>(at_.here() + 1 - begin)}};
    at_.advance();
    at_.skip_comma();
    env_.meta_is_object_ = true;
    return true;
  }

  bool meta_field(std::string_view key, int known, std::size_t value, detail::KeySet& keys) {
    if (!keys.insert(key, known)) return false;
    const char type = tape_.type(value);
    const Member m = member(type, 3);
    if (too_deep_) return false;
    if (detail::is_forbidden_meta(key)) {
      env_.warnings_.push_back(detail::json_pointer("/meta/", key));
      return true;
    }
    const auto which = env_.keep_meta(known, m);
    if (!which) return true;
    switch (*which) {
      case detail::MetaKey::id:
      case detail::MetaKey::queue:
      case detail::MetaKey::lang: {
        detail::Text& text = env_.text_of(*which);
        if (type == '"') read_text(m.value, value, text);
        break;
      }
      case detail::MetaKey::schema_version:
      case detail::MetaKey::created_at: {
        detail::Integer& number = env_.integer_of(*which);
        if (auto n = tape_.int64(value)) number = detail::Integer{*n, true};
        break;
      }
      default: break;
    }
    return true;
  }

  Envelope& env_;
  const DecodeOptions& options_;
  const char* base_;
  detail::Tape tape_;
  detail::StructuralCursor at_;
  bool too_deep_ = false;
};

namespace detail {

bool decode_on_tape(Envelope& env, const DecodeOptions& options) {
  simdjson::dom::parser& parser = thread_dom_parser();
  if (parser.parse(env.body().data(), env.body().size(), false).error()) return false;
  EnvelopeTapeDecoder decoder(env, options, parser);
  if (!decoder.root()) return false;
  decoder.tell_warnings();
  return true;
}

}  // namespace detail

}  // namespace babelqueue
