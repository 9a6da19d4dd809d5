// SPDX-License-Identifier: Apache-2.0
// Envelope::decode. The body is first read by the fast path
// (envelope_decode_indexes.cpp); when that declines, one strict pass of
// simdjson On-Demand over the body decides and says why.
//
// The body is copied once into the envelope (with simdjson's padding); every
// field is then a span of that copy. Values the SDK does not interpret (data,
// unknown keys, dead_letter) are still walked to the end so that the whole body
// is validated, not only the parts that are read.
#include "envelope_builder.hpp"
#include "envelope_decode_indexes.hpp"
#include "envelope_keys.hpp"
#include "json_walk.hpp"
#include "on_demand.hpp"
#include "parser_pool.hpp"

#include <babelqueue/envelope.hpp>

#include <array>
#include <limits>

namespace babelqueue {

namespace {

namespace od = detail::od;

using detail::index_of;
using detail::is_forbidden_meta;
using detail::is_forbidden_top;
using detail::json_pointer;
using detail::KeySet;
using detail::kMetaKeyNames;
using detail::kTopKeyNames;

// The index of a raw (still escaped) key among names, or -1. Comparing the
// raw bytes spares unescaping the key, which is all a canonical body needs;
// a key spelled with escapes falls back to the unescaped comparison.
template <std::size_t N>
int raw_index_of(const std::array<std::string_view, N>& names, od::raw_json_string raw) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    if (raw.unsafe_is_equal(names[i])) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

class EnvelopeDecoder {
 public:
  EnvelopeDecoder(Envelope& env, const DecodeOptions& options, od::document& doc)
      : env_(env), options_(options), doc_(doc), base_(env.buffer_.data()) {}

  std::optional<DecodeError> decode_root() {
    od::json_type type{};
    if (auto code = doc_.type().get(type)) return error(detail::rejection_for(code), simdjson::error_message(code));
    if (type != od::json_type::object) return not_an_object(type);
    od::object root;
    if (auto code = doc_.get_object().get(root))
      return error(detail::rejection_for(code), simdjson::error_message(code));
    KeySet keys;
    for (auto field_result : root) {
      od::field field;
      if (auto code = std::move(field_result).get(field))
        return error(detail::rejection_for(code), "malformed envelope object");
      if (auto e = top_field(field, keys)) return e;
    }
    if (!detail::at_document_end(doc_))
      return error(Rejection::invalid_json, "trailing content after the envelope object");
    return std::nullopt;
  }

 private:
  using Member = detail::Member;
  using Span = detail::Span;

  static DecodeError error(Rejection reason, std::string detail) { return DecodeError{reason, std::move(detail)}; }
  static DecodeError error(Rejection reason, const char* detail) { return DecodeError{reason, std::string(detail)}; }

  // A root that is not an object: it is still walked, so that a body that is
  // not JSON at all says invalid_json rather than not_an_object.
  std::optional<DecodeError> not_an_object(od::json_type type) {
    if (type == od::json_type::array) {
      od::value root;
      if (doc_.get_value().get(root)) return error(Rejection::invalid_json, "malformed JSON");
      if (auto e = detail::walk<false>(root, 1, options_.max_depth, nullptr))
        return error(e->reason, std::string(e->what));
      if (!detail::at_document_end(doc_))
        return error(Rejection::invalid_json, "trailing content after the JSON value");
      return error(Rejection::not_an_object, "the body is a JSON array, not an object");
    }
    if (detail::read_scalar_document(doc_, type, env_.body(), nullptr)) {
      return error(Rejection::invalid_json, "the body is not JSON");
    }
    return error(Rejection::not_an_object, "the body is a JSON scalar, not an object");
  }

  Span span(const char* begin, const char* end) const noexcept {
    return Span{static_cast<std::uint32_t>(begin - base_), static_cast<std::uint32_t>(end - begin)};
  }

  // The key's JSON token: from its opening quote to the quote before the ':'
  // that precedes the value.
  Span key_span(const char* key_begin, const char* value_begin) const noexcept {
    const char* p = value_begin - 1;
    while (detail::is_json_space(*p)) --p;
    --p;  // the ':'
    while (detail::is_json_space(*p)) --p;
    return span(key_begin, p + 1);
  }

  // The end of a value that was walked to its end: for a scalar the end of its
  // token, for a container the position the document iterator reached, both
  // without trailing whitespace.
  std::optional<const char*> value_end(std::string_view token, od::json_type type) {
    const char* end = nullptr;
    if (type == od::json_type::object || type == od::json_type::array) {
      if (doc_.current_location().get(end)) return std::nullopt;
    } else {
      end = token.data() + token.size();
    }
    while (end > token.data() && detail::is_json_space(end[-1])) --end;
    return end;
  }

  // Reads the raw extent of field's value, walking it unless it was read by
  // the caller (strings and numbers the decoder interprets are read in
  // place). Returns the member spans.
  std::optional<DecodeError> member(od::field& field, const char* key_begin, std::size_t depth, Member& out,
                                    od::json_type& type, std::string_view& token) {
    od::value& value = field.value();
    token = value.raw_json_token();
    if (auto code = value.type().get(type)) return error(detail::rejection_for(code), "malformed value");
    if (type != od::json_type::string && type != od::json_type::number) {
      if (auto e = detail::walk<false>(value, depth, options_.max_depth, nullptr)) {
        return error(e->reason, std::string(e->what));
      }
    } else if (type == od::json_type::string && token.find('\\') == std::string_view::npos) {
      // A string read in place must still be consumed: a value the object
      // iterator skips is not checked for what follows it, and
      // {"x":"y":} would pass (found by the fuzzer). Strings with escapes are
      // consumed when read_text / check_scalar unescape them.
      if (value.get_raw_json_string().error()) return error(Rejection::invalid_json, "malformed string");
    }
    out.key = key_span(key_begin, token.data());
    const char* begin = token.data();
    if (type == od::json_type::string || type == od::json_type::number) {
      token = detail::trim_json_space(token);
    }
    auto end = value_end(token, type);
    if (!end) return error(Rejection::invalid_json, "malformed value");
    out.value = span(begin, *end);
    return std::nullopt;
  }

  // A string field: keep where its text is, unescaping into side_ only when
  // the token holds escapes.
  std::optional<DecodeError> read_text(od::field& field, std::string_view token, detail::Text& text) {
    text.is_string = true;
    if (token.find('\\') == std::string_view::npos) {
      text.span = span(token.data() + 1, token.data() + token.size() - 1);
      return std::nullopt;
    }
    std::string_view unescaped;
    if (field.value().get_string().get(unescaped)) return error(Rejection::invalid_json, "malformed string");
    text.in_side = true;
    text.span = Span{static_cast<std::uint32_t>(env_.side_.size()), static_cast<std::uint32_t>(unescaped.size())};
    env_.side_.append(unescaped);
    return std::nullopt;
  }

  // Strings and numbers the decoder reads must still be fully validated.
  std::optional<DecodeError> check_scalar(od::field& field, od::json_type type, std::string_view token) {
    if (type == od::json_type::number) {
      if (!detail::is_json_number(token)) return error(Rejection::invalid_json, "malformed number");
    } else if (type == od::json_type::string && token.find('\\') != std::string_view::npos) {
      std::string_view ignored;
      if (field.value().get_string().get(ignored)) return error(Rejection::invalid_json, "malformed string");
    }
    return std::nullopt;
  }

  std::optional<DecodeError> top_field(od::field& field, KeySet& keys) {
    // The raw key must be taken before unescaped_key(), which consumes it.
    const od::raw_json_string raw = field.key();
    const char* key_begin = raw.raw() - 1;
    int known = raw_index_of(kTopKeyNames, raw);
    std::string_view key;
    if (known >= 0) {
      key = kTopKeyNames[static_cast<std::size_t>(known)];
    } else {
      if (field.unescaped_key().get(key)) return error(Rejection::invalid_json, "malformed key");
      known = index_of(kTopKeyNames, key);
    }
    if (!keys.insert(key, known)) {
      return error(Rejection::duplicate_key, "duplicate key \"" + std::string(key) + "\" in the envelope");
    }
    Member m;
    od::json_type type{};
    std::string_view token;
    if (known == static_cast<int>(detail::TopKey::meta)) {
      return meta_field(field, key_begin, m);
    }
    if (auto e = member(field, key_begin, 2, m, type, token)) return e;
    if (is_forbidden_top(key)) return check_then_warn(field, type, token, json_pointer("/", key));
    if (known < 0) {
      if (auto e = check_scalar(field, type, token)) return e;
    }
    const auto kept = env_.keep_top(known, m);
    if (!kept) return std::nullopt;
    const detail::TopKey which = *kept;
    switch (which) {
      case detail::TopKey::job:
      case detail::TopKey::urn:
      case detail::TopKey::trace_id: {
        detail::Text& text = env_.text_of(which);
        if (type == od::json_type::string) return read_text(field, token, text);
        return check_scalar(field, type, token);
      }
      case detail::TopKey::data:
        env_.data_is_object_ = type == od::json_type::object;
        return check_scalar(field, type, token);
      case detail::TopKey::attempts: {
        if (auto e = check_scalar(field, type, token)) return e;
        std::optional<std::int64_t> n;
        if (type == od::json_type::number) n = detail::parse_int64(token);
        env_.attempts_valid_ = n.has_value() && *n >= 0;
        env_.attempts_ = env_.attempts_valid_ ? *n : 0;
        return std::nullopt;
      }
      default: return check_scalar(field, type, token);
    }
  }

  std::optional<DecodeError> check_then_warn(od::field& field, od::json_type type, std::string_view token,
                                             std::string pointer) {
    if (auto e = check_scalar(field, type, token)) return e;
    if (options_.on_warning) options_.on_warning(pointer);
    env_.warnings_.push_back(std::move(pointer));
    return std::nullopt;
  }

  std::optional<DecodeError> meta_field(od::field& field, const char* key_begin, Member& m) {
    od::value& value = field.value();
    std::string_view token;
    od::json_type type{};
    token = value.raw_json_token();
    if (value.type().get(type)) return error(Rejection::invalid_json, "malformed meta");
    if (type != od::json_type::object) {
      od::json_type ignored{};
      if (auto e = member(field, key_begin, 2, m, ignored, token)) return e;
      if (auto e = check_scalar(field, type, token)) return e;
      env_.top_[static_cast<std::size_t>(detail::TopKey::meta)] = m;
      return std::nullopt;
    }
    if (2 > options_.max_depth) return error(Rejection::too_deep, "nesting deeper than the limit");
    m.key = key_span(key_begin, token.data());
    const char* begin = token.data();
    od::object meta;
    if (value.get_object().get(meta)) return error(Rejection::invalid_json, "malformed meta");
    KeySet keys;
    for (auto field_result : meta) {
      od::field inner;
      if (auto code = std::move(field_result).get(inner))
        return error(detail::rejection_for(code), "malformed meta object");
      if (auto e = meta_member(inner, keys)) return e;
    }
    auto end = value_end(token, type);
    if (!end) return error(Rejection::invalid_json, "malformed meta");
    m.value = span(begin, *end);
    env_.top_[static_cast<std::size_t>(detail::TopKey::meta)] = m;
    env_.meta_is_object_ = true;
    return std::nullopt;
  }

  std::optional<DecodeError> meta_member(od::field& field, KeySet& keys) {
    const od::raw_json_string raw = field.key();
    const char* key_begin = raw.raw() - 1;
    int known = raw_index_of(kMetaKeyNames, raw);
    std::string_view key;
    if (known >= 0) {
      key = kMetaKeyNames[static_cast<std::size_t>(known)];
    } else {
      if (field.unescaped_key().get(key)) return error(Rejection::invalid_json, "malformed key");
      known = index_of(kMetaKeyNames, key);
    }
    if (!keys.insert(key, known)) {
      return error(Rejection::duplicate_key, "duplicate key \"" + std::string(key) + "\" in meta");
    }
    Member m;
    od::json_type type{};
    std::string_view token;
    if (auto e = member(field, key_begin, 3, m, type, token)) return e;
    if (is_forbidden_meta(key)) return check_then_warn(field, type, token, json_pointer("/meta/", key));
    if (known < 0) {
      if (auto e = check_scalar(field, type, token)) return e;
    }
    const auto kept = env_.keep_meta(known, m);
    if (!kept) return std::nullopt;
    const detail::MetaKey which = *kept;
    switch (which) {
      case detail::MetaKey::id:
      case detail::MetaKey::queue:
      case detail::MetaKey::lang: {
        detail::Text& text = env_.text_of(which);
        if (type == od::json_type::string) return read_text(field, token, text);
        return check_scalar(field, type, token);
      }
      case detail::MetaKey::schema_version:
      case detail::MetaKey::created_at: {
        if (auto e = check_scalar(field, type, token)) return e;
        detail::Integer& number = env_.integer_of(which);
        if (type == od::json_type::number) {
          if (auto n = detail::parse_int64(token)) number = detail::Integer{*n, true};
        }
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  }

  Envelope& env_;
  const DecodeOptions& options_;
  od::document& doc_;
  const char* base_;
};

// Defined, not defaulted in the class, so that `Envelope()` runs the member
// initializers only instead of zero-filling its 500 bytes first.
Envelope::Envelope() noexcept = default;

// Both functions return the one Result they fill, so that it is built in the
// caller's place: an Envelope is large and moving it costs a tenth of
// decoding a small body.
Result<Envelope, DecodeError> EnvelopeBuilder::decode(std::string_view body, const DecodeOptions& options, bool fast) {
  Result<Envelope, DecodeError> out = decode_once(body, options, fast);
  if (!out && out.error().reason == Rejection::invalid_json) {
    // simdjson reports a whole envelope followed by more bytes as a document
    // that "ended early": name the real fault. The envelope alone counts as
    // whole when it decodes, or fails for a reason other than its JSON.
    const auto at = detail::trailing_content_at(body, [&](std::string_view alone) {
      auto prefix = decode_once(alone, options, fast);
      return prefix.has_value() || prefix.error().reason != Rejection::invalid_json;
    });
    if (at) {
      const bool object = detail::trim_json_space(body).front() == '{';
      out = unexpected(DecodeError{Rejection::invalid_json, std::string("trailing content after the ") +
                                                                (object ? "envelope object" : "JSON value") +
                                                                ", at byte " + std::to_string(*at)});
    }
  }
  return out;
}

Result<Envelope, DecodeError> EnvelopeBuilder::decode_once(std::string_view body, const DecodeOptions& options,
                                                           bool fast) {
  Result<Envelope, DecodeError> out(std::in_place);
  if (body.size() > options.max_bytes || body.size() >= std::numeric_limits<std::uint32_t>::max()) {
    out = unexpected(DecodeError{Rejection::too_large, "the body has " + std::to_string(body.size()) +
                                                           " bytes, over the limit of " +
                                                           std::to_string(options.max_bytes)});
    return out;
  }
  Envelope& env = *out;
  env.buffer_.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  env.buffer_.assign(body);
  env.buffer_.append(simdjson::SIMDJSON_PADDING, '\0');
  env.body_size_ = body.size();

  if (fast && detail::decode_on_indexes(env, options)) {
    env.rejection_ = accepts(env).reason();
    env.judged_ = true;
    return out;
  }
  // The fast path declined: decode again from a clean layout, keeping the buffer.
  Envelope exact;
  exact.buffer_ = std::move(env.buffer_);
  exact.body_size_ = env.body_size_;
  out = decode_on_demand(std::move(exact), options);
  return out;
}

Result<Envelope, DecodeError> EnvelopeBuilder::decode_on_demand(Envelope env, const DecodeOptions& options) {
  od::parser& parser = detail::thread_parser(options.max_depth);
  od::document doc;
  if (auto code = parser.iterate(env.buffer_.data(), env.body_size_, env.buffer_.size()).get(doc)) {
    return unexpected(DecodeError{detail::rejection_for(code), simdjson::error_message(code)});
  }
  EnvelopeDecoder decoder(env, options, doc);
  if (auto e = decoder.decode_root()) return unexpected(std::move(*e));
  env.rejection_ = accepts(env).reason();
  env.judged_ = true;
  return env;
}

Result<Envelope, DecodeError> Envelope::decode(std::string_view body, const DecodeOptions& options) {
  return EnvelopeBuilder::decode(body, options);
}

Result<Envelope, DecodeError> detail::decode_on_demand(std::string_view body, const DecodeOptions& options) {
  return EnvelopeBuilder::decode(body, options, false);
}

}  // namespace babelqueue
