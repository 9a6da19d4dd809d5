// SPDX-License-Identifier: Apache-2.0
// The fast path of Envelope::decode: simdjson's DOM parser validates the whole
// body (UTF-8, strings and their escapes, numbers, literals, structure) with
// the kernel picked for the CPU at run time, then a walk of the frame and of
// meta reads the fields. The parser's structural indexes (where each token
// starts) give the bytes of every member, so `data` and unknown values stay
// spans of the body and are never re-read.
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

namespace babelqueue {

using detail::Member;
using detail::Span;

class EnvelopeTapeDecoder {
 public:
  EnvelopeTapeDecoder(Envelope& env, const DecodeOptions& options, const simdjson::dom::parser& parser)
      : env_(env), options_(options), base_(env.buffer_.data()), at_(base_, parser) {}

  // Reads the root object; false when the On-Demand pass must decide.
  bool root(simdjson::dom::object object) {
    at_.advance();  // the '{'
    detail::KeySet keys;
    for (const auto field : object) {
      if (!top_field(field.key, field.value, keys)) return false;
    }
    return at_.byte() == '}';
  }

  // The warnings the walk found, told to on_warning once the walk succeeded.
  void tell_warnings() const {
    if (!options_.on_warning) return;
    for (const auto& pointer : env_.warnings_) options_.on_warning(pointer);
  }

 private:
  using Type = simdjson::dom::element_type;

  Span span(std::string_view token) const noexcept {
    return Span{static_cast<std::uint32_t>(token.data() - base_), static_cast<std::uint32_t>(token.size())};
  }

  // The member whose key token is at the cursor; leaves the cursor after its
  // value and the ',' that may follow. depth: the value's nesting level. False
  // when a container in it nests deeper than the limit.
  bool member(Type type, std::size_t depth, Member& out) {
    out.key = span(at_.key());
    if (type == Type::OBJECT || type == Type::ARRAY) {
      std::size_t deepest = 0;
      out.value = span(at_.container(deepest));
      if (depth - 1 + deepest > options_.max_depth) return false;
    } else {
      out.value = span(at_.scalar());
    }
    at_.skip_comma();
    return true;
  }

  // A string field's text: in place, or unescaped into side_ when the token
  // holds escapes (an escape always makes the text shorter than its token).
  void read_text(Span token, simdjson::dom::element value, detail::Text& text) {
    text.is_string = true;
    const std::string_view unescaped = value.get_string().value_unsafe();
    if (unescaped.size() + 2 == token.size) {
      text.span = Span{token.offset + 1, token.size - 2};
      return;
    }
    text.in_side = true;
    text.span = Span{static_cast<std::uint32_t>(env_.side_.size()), static_cast<std::uint32_t>(unescaped.size())};
    env_.side_.append(unescaped);
  }

  // An integer field: its value when the token is an integer that fits int64
  // (what parse_int64 of the token gives: the parser reads such a token, and
  // only such a token, as an INT64).
  static std::optional<std::int64_t> int64_of(simdjson::dom::element value) noexcept {
    if (value.type() != Type::INT64) return std::nullopt;
    return value.get_int64().value_unsafe();
  }

  bool top_field(std::string_view key, simdjson::dom::element value, detail::KeySet& keys) {
    const int known = detail::top_key_index(key);
    if (!keys.insert(key, known)) return false;
    const Type type = value.type();
    Member m;
    if (known == static_cast<int>(detail::TopKey::meta) && type == Type::OBJECT) {
      if (!meta(value.get_object().value_unsafe(), m)) return false;
    } else if (!member(type, 2, m)) {
      return false;
    }
    if (detail::is_forbidden_top(key)) {
      env_.warnings_.push_back(detail::json_pointer("/", key));
      return true;
    }
    if (known < 0) {
      env_.unknown_top_.push_back(m);
      return true;
    }
    const auto which = static_cast<detail::TopKey>(known);
    env_.top_[static_cast<std::size_t>(which)] = m;
    switch (which) {
      case detail::TopKey::job:
      case detail::TopKey::urn:
      case detail::TopKey::trace_id: {
        detail::Text& text = which == detail::TopKey::job   ? env_.job_
                             : which == detail::TopKey::urn ? env_.urn_
                                                            : env_.trace_id_;
        if (type == Type::STRING) read_text(m.value, value, text);
        break;
      }
      case detail::TopKey::data: env_.data_is_object_ = type == Type::OBJECT; break;
      case detail::TopKey::attempts: {
        const std::optional<std::int64_t> n = int64_of(value);
        env_.attempts_valid_ = n.has_value() && *n >= 0;
        env_.attempts_ = env_.attempts_valid_ ? *n : 0;
        break;
      }
      default: break;
    }
    return true;
  }

  // The meta object, member by member; m gets its spans.
  bool meta(simdjson::dom::object object, Member& m) {
    if (2 > options_.max_depth) return false;
    m.key = span(at_.key());
    const char* begin = at_.here();
    at_.advance();  // the '{'
    detail::KeySet keys;
    for (const auto field : object) {
      if (!meta_field(field.key, field.value, keys)) return false;
    }
    if (at_.byte() != '}') return false;
    m.value = Span{static_cast<std::uint32_t>(begin - base_), static_cast<std::uint32_t>(at_.here() + 1 - begin)};
    at_.advance();
    at_.skip_comma();
    env_.meta_is_object_ = true;
    return true;
  }

  bool meta_field(std::string_view key, simdjson::dom::element value, detail::KeySet& keys) {
    const int known = detail::meta_key_index(key);
    if (!keys.insert(key, known)) return false;
    const Type type = value.type();
    Member m;
    if (!member(type, 3, m)) return false;
    if (detail::is_forbidden_meta(key)) {
      env_.warnings_.push_back(detail::json_pointer("/meta/", key));
      return true;
    }
    if (known < 0) {
      env_.unknown_meta_.push_back(m);
      return true;
    }
    const auto which = static_cast<detail::MetaKey>(known);
    env_.meta_[static_cast<std::size_t>(which)] = m;
    switch (which) {
      case detail::MetaKey::id:
      case detail::MetaKey::queue:
      case detail::MetaKey::lang: {
        detail::Text& text = which == detail::MetaKey::id      ? env_.id_
                             : which == detail::MetaKey::queue ? env_.queue_
                                                               : env_.lang_;
        if (type == Type::STRING) read_text(m.value, value, text);
        break;
      }
      case detail::MetaKey::schema_version:
      case detail::MetaKey::created_at: {
        detail::Integer& number = which == detail::MetaKey::schema_version ? env_.schema_version_ : env_.created_at_;
        if (auto n = int64_of(value)) number = detail::Integer{*n, true};
        break;
      }
      default: break;
    }
    return true;
  }

  Envelope& env_;
  const DecodeOptions& options_;
  const char* base_;
  detail::StructuralCursor at_;
};

namespace detail {

bool decode_on_tape(Envelope& env, const DecodeOptions& options) {
  simdjson::dom::parser& parser = thread_dom_parser();
  simdjson::dom::element root;
  if (parser.parse(env.body().data(), env.body().size(), false).get(root)) return false;
  simdjson::dom::object object;
  if (root.get_object().get(object)) return false;
  EnvelopeTapeDecoder decoder(env, options, parser);
  if (!decoder.root(object)) return false;
  decoder.tell_warnings();
  return true;
}

}  // namespace detail

}  // namespace babelqueue
