// SPDX-License-Identifier: Apache-2.0
#include "json_walk.hpp"
#include "on_demand.hpp"
#include "parser_pool.hpp"
#include "structural_cursor.hpp"

#include <babelqueue/json.hpp>

#include <cfloat>
#include <charconv>
#include <cmath>

namespace babelqueue {
namespace detail {

bool is_json_number(std::string_view t) noexcept {
  std::size_t i = 0;
  const std::size_t n = t.size();
  auto digit = [&](std::size_t k) { return k < n && t[k] >= '0' && t[k] <= '9'; };
  if (i < n && t[i] == '-') ++i;
  if (!digit(i)) return false;
  if (t[i] == '0') {
    ++i;
  } else {
    while (digit(i)) ++i;
  }
  if (i < n && t[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < n && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < n && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == n;
}

std::optional<std::int64_t> parse_int64(std::string_view text) noexcept {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

Value number_value(std::string_view text) {
  const bool integral = text.find_first_of(".eE") == std::string_view::npos;
  if (integral) {
    if (text.front() == '-') {
      if (auto v = parse_int64(text)) return Value(*v);
    } else {
      std::uint64_t u = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), u);
      if (ec == std::errc() && ptr == text.data() + text.size()) {
        if (u <= static_cast<std::uint64_t>(INT64_MAX)) return Value(static_cast<std::int64_t>(u));
        return Value(u);
      }
    }
    return Value(NumberText{std::string(text)});
  }
  double d = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec == std::errc() && std::isfinite(d)) return Value(d);
  return Value(NumberText{std::string(text)});  // overflows a double: keep the text
}

namespace {

constexpr WalkError kMalformed{Rejection::invalid_json, "malformed JSON"};

template <bool Build>
std::optional<WalkError> walk_scalar(od::value& value, od::json_type type, Value* out) {
  std::string_view token;
  if (type == od::json_type::string) {
    std::string_view text;
    if (value.get_string().get(text)) return WalkError{Rejection::invalid_json, "malformed string"};
    if constexpr (Build) *out = std::string(text);
    return std::nullopt;
  }
  token = trim_json_space(value.raw_json_token());
  switch (type) {
    case od::json_type::number:
      if (!is_json_number(token)) return WalkError{Rejection::invalid_json, "malformed number"};
      if constexpr (Build) *out = number_value(token);
      return std::nullopt;
    case od::json_type::boolean:
      if (token != "true" && token != "false") return kMalformed;
      if constexpr (Build) *out = token == "true";
      return std::nullopt;
    case od::json_type::null:
      if (token != "null") return kMalformed;
      if constexpr (Build) *out = nullptr;
      return std::nullopt;
    default: return kMalformed;
  }
}

}  // namespace

template <bool Build>
std::optional<WalkError> walk(od::value value, std::size_t depth, std::size_t max_depth, Value* out) {
  od::json_type type{};
  if (value.type().get(type)) return kMalformed;
  if (type == od::json_type::object || type == od::json_type::array) {
    if (depth > max_depth) return WalkError{Rejection::too_deep, "nesting deeper than the limit"};
  }
  if (type == od::json_type::object) {
    od::object object;
    if (value.get_object().get(object)) return kMalformed;
    if constexpr (Build) *out = Object();
    for (auto field_result : object) {
      od::field field;
      if (std::move(field_result).get(field)) return kMalformed;
      std::string_view key;
      if (field.unescaped_key().get(key)) return WalkError{Rejection::invalid_json, "malformed key"};
      Value* slot = nullptr;
      if constexpr (Build) slot = &out->as_object().set(std::string(key), Value());
      if (auto error = walk<Build>(field.value(), depth + 1, max_depth, slot)) return error;
    }
    return std::nullopt;
  }
  if (type == od::json_type::array) {
    od::array array;
    if (value.get_array().get(array)) return kMalformed;
    if constexpr (Build) *out = Array();
    for (auto item_result : array) {
      od::value item;
      if (std::move(item_result).get(item)) return kMalformed;
      Value* slot = nullptr;
      if constexpr (Build) {
        out->as_array().emplace_back();
        slot = &out->as_array().back();
      }
      if (auto error = walk<Build>(item, depth + 1, max_depth, slot)) return error;
    }
    return std::nullopt;
  }
  return walk_scalar<Build>(value, type, out);
}

template std::optional<WalkError> walk<true>(od::value, std::size_t, std::size_t, Value*);
template std::optional<WalkError> walk<false>(od::value, std::size_t, std::size_t, Value*);

std::optional<WalkError> read_scalar_document(od::document& doc, od::json_type type, std::string_view text,
                                              Value* out) {
  std::string_view token;
  if (doc.raw_json_token().get(token)) return kMalformed;
  token = trim_json_space(token);
  // A root scalar cannot be handed out as an od::value and is only peeked
  // here, so the iterator cannot tell whether anything follows it: compare
  // the token with the whole text instead.
  if (trim_json_space(text) != token)
    return WalkError{Rejection::invalid_json, "trailing content after the JSON value"};
  switch (type) {
    case od::json_type::string: {
      std::string_view s;
      if (doc.get_string().get(s)) return WalkError{Rejection::invalid_json, "malformed string"};
      if (out != nullptr) *out = std::string(s);
      return std::nullopt;
    }
    case od::json_type::number:
      if (!is_json_number(token)) return WalkError{Rejection::invalid_json, "malformed number"};
      if (out != nullptr) *out = number_value(token);
      return std::nullopt;
    case od::json_type::boolean:
    case od::json_type::null:
      if (token == "true" || token == "false") {
        if (out != nullptr) *out = token == "true";
        return std::nullopt;
      }
      if (token == "null") {
        if (out != nullptr) *out = nullptr;
        return std::nullopt;
      }
      return kMalformed;
    default: return kMalformed;
  }
}

std::optional<std::size_t> end_of_first_container(std::string_view text) noexcept {
  std::size_t i = 0;
  while (i < text.size() && is_json_space(text[i])) ++i;
  if (i == text.size() || (text[i] != '{' && text[i] != '[')) return std::nullopt;
  std::size_t depth = 0;
  bool in_string = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::nullopt;
}

}  // namespace detail

namespace {

Result<Value> parse_json_once(std::string_view text, const JsonLimits& limits, bool tape);

// parse_json; tape: whether the DOM fast path may decide.
Result<Value> parse_json_with(std::string_view text, const JsonLimits& limits, bool tape) {
  auto value = parse_json_once(text, limits, tape);
  if (!value && value.error().code() == Errc::invalid_json) {
    // The parser reports a valid value followed by more as truncated or
    // malformed: say what it is.
    const auto at = detail::trailing_content_at(
        text, [&](std::string_view alone) { return parse_json_once(alone, limits, tape).has_value(); });
    if (at) {
      return unexpected(Errc::invalid_json,
                        "invalid_json: trailing content after the JSON value, at byte " + std::to_string(*at));
    }
  }
  return value;
}

}  // namespace

Result<Value> parse_json(std::string_view text, const JsonLimits& limits) {
  return parse_json_with(text, limits, true);
}

Result<Value> detail::parse_json_on_demand(std::string_view text, const JsonLimits& limits) {
  return parse_json_with(text, limits, false);
}

namespace {

// parse_json's fast path: the DOM parser (the kernel chosen at run time)
// validates the text, then its tape becomes a Value. Gives up (false) on what
// the On-Demand pass must decide: a parse error (with its reason), nesting
// over the limit. A double is the parser's, which is the correctly rounded
// value of its text like number_value's, except near zero, where
// number_value (which keeps an underflowing text) reads the text itself: the
// cursor follows the tape over the text for that.
class TapeReader {
 public:
  TapeReader(const char* text, const simdjson::dom::parser& parser, std::size_t max_depth) noexcept
      : tape_(parser.doc), at_(text, parser), max_depth_(max_depth) {}

  // The value at tape index t (the cursor at its first token) into out.
  bool read(std::size_t t, std::size_t depth, Value& out) {
    switch (tape_.type(t)) {
      case '{': {
        if (depth > max_depth_) return false;
        at_.advance();
        out = Object();
        for (std::size_t i = t + 1; tape_.type(i) != '}'; i = tape_.after(i + 1)) {
          const std::string_view key = tape_.string(i);
          at_.advance(2);  // the key and ':'
          if (!read(i + 1, depth + 1, out.as_object().set(std::string(key), Value()))) return false;
          at_.skip_comma();
        }
        at_.advance();
        return true;
      }
      case '[': {
        if (depth > max_depth_) return false;
        at_.advance();
        out = Array();
        for (std::size_t i = t + 1; tape_.type(i) != ']'; i = tape_.after(i)) {
          out.as_array().emplace_back();
          if (!read(i, depth + 1, out.as_array().back())) return false;
          at_.skip_comma();
        }
        at_.advance();
        return true;
      }
      case '"': out = std::string(tape_.string(t)); break;
      case 'l': out = *tape_.int64(t); break;
      case 'u': out = tape_.number<std::uint64_t>(t); break;
      case 'd': {
        const double d = tape_.number<double>(t);
        if (std::fabs(d) < DBL_MIN) {
          out = detail::number_value(at_.scalar());
          return true;
        }
        out = d;
        break;
      }
      case 't': out = true; break;
      case 'f': out = false; break;
      case 'n': out = nullptr; break;
      default: return false;
    }
    at_.advance();
    return true;
  }

 private:
  detail::Tape tape_;
  detail::StructuralCursor at_;
  std::size_t max_depth_;
};

std::optional<Value> parse_on_tape(const simdjson::padded_string& text, std::size_t max_depth) {
  simdjson::dom::parser& parser = detail::thread_dom_parser();
  if (parser.parse(text).error()) return std::nullopt;
  TapeReader reader(text.data(), parser, max_depth);
  Value out;
  if (!reader.read(1, 1, out)) return std::nullopt;  // 0 is the root word
  return out;
}

Result<Value> parse_json_once(std::string_view text, const JsonLimits& limits, bool tape) {
  namespace od = detail::od;
  auto fail = [](Rejection reason, std::string_view what) {
    return unexpected(reason == Rejection::invalid_utf8 ? Errc::invalid_utf8 : Errc::invalid_json,
                      std::string(to_string(reason)) + ": " + std::string(what));
  };
  if (text.size() > limits.max_bytes) return fail(Rejection::too_large, "text is larger than the limit");
  simdjson::padded_string padded(text);
  if (tape) {
    if (auto value = parse_on_tape(padded, limits.max_depth)) return std::move(*value);
  }
  od::parser& parser = detail::thread_parser(limits.max_depth);
  od::document doc;
  if (auto code = parser.iterate(padded).get(doc))
    return fail(detail::rejection_for(code), simdjson::error_message(code));
  od::json_type type{};
  if (auto code = doc.type().get(type)) return fail(detail::rejection_for(code), simdjson::error_message(code));

  Value out;
  if (type != od::json_type::object && type != od::json_type::array) {
    if (auto error = detail::read_scalar_document(doc, type, text, &out)) return fail(error->reason, error->what);
    return out;
  }
  od::value root;
  if (auto code = doc.get_value().get(root)) return fail(detail::rejection_for(code), simdjson::error_message(code));
  if (auto error = detail::walk<true>(root, 1, limits.max_depth, &out)) return fail(error->reason, error->what);
  if (!detail::at_document_end(doc)) return fail(Rejection::invalid_json, "trailing content after the JSON value");
  return out;
}

}  // namespace

}  // namespace babelqueue
