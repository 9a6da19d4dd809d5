// SPDX-License-Identifier: Apache-2.0
// Internal: a strict, depth-limited walk over a simdjson On-Demand value.
//
// On-Demand only validates what it reads, so every value the SDK keeps as raw
// bytes (data, unknown keys) is walked to the end: each string is unescaped
// (validating escapes), each number's text is checked against the JSON
// grammar, each literal compared exactly. With Build=true the walk also builds
// a Value. Both parse_json and the envelope decoder use it.
#pragma once

#include <babelqueue/rejection.hpp>
#include <babelqueue/value.hpp>

#include <simdjson.h>

#include <cstddef>
#include <optional>
#include <string_view>

namespace babelqueue::detail {

namespace od = simdjson::ondemand;

struct WalkError {
  Rejection reason;
  std::string_view what;  // static text
};

// Maps a simdjson error to the rejection a caller reports.
inline Rejection rejection_for(simdjson::error_code code) noexcept {
  switch (code) {
    case simdjson::UTF8_ERROR: return Rejection::invalid_utf8;
    case simdjson::DEPTH_ERROR: return Rejection::too_deep;
    case simdjson::CAPACITY: return Rejection::too_large;
    default: return Rejection::invalid_json;
  }
}

// The first test settles most bytes (every one after a token of a compact
// body) in one comparison.
inline bool is_json_space(char c) noexcept {
  return static_cast<unsigned char>(c) <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t');
}

inline std::string_view trim_json_space(std::string_view s) noexcept {
  while (!s.empty() && is_json_space(s.back())) s.remove_suffix(1);
  while (!s.empty() && is_json_space(s.front())) s.remove_prefix(1);
  return s;
}

// True once the document iterator has consumed the whole input: anything
// left after the root value is trailing garbage.
// Where the first JSON object or array of text ends (one past its closing
// bracket), found by matching brackets outside strings; nothing when text
// does not start (after white space) with '{' or '[', or the brackets never
// close. It does not validate: a decoder that failed asks it whether the
// text is one value followed by something else, then checks that value.
std::optional<std::size_t> end_of_first_container(std::string_view text) noexcept;

// The error of a text that is a valid JSON value followed by more than white
// space: "trailing content after the JSON value, at byte N" (what), when
// value_is_valid(text.substr(0, end)) says the value alone is fine;
// nothing otherwise. For the failure paths of the decoders, whose parser
// reports such a text as truncated or malformed instead.
template <class ValueIsValid>
std::optional<std::size_t> trailing_content_at(std::string_view text, ValueIsValid value_is_valid) {
  const auto end = end_of_first_container(text);
  if (!end || trim_json_space(text.substr(*end)).empty()) return std::nullopt;
  if (!value_is_valid(text.substr(0, *end))) return std::nullopt;
  std::size_t at = *end;
  while (at < text.size() && is_json_space(text[at])) ++at;
  return at;
}

inline bool at_document_end(od::document& doc) noexcept {
  return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

// The JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view text) noexcept;

// A number's text as the narrowest Value: int64, uint64, double, or the text
// itself when no C++ type holds it.
Value number_value(std::string_view text);

// Parses an integer token that fits int64 (no fraction, no exponent).
std::optional<std::int64_t> parse_int64(std::string_view text) noexcept;

// Walks one value (already positioned by the caller) to its end.
// depth is the nesting level of this value (the root object is depth 1).
template <bool Build>
std::optional<WalkError> walk(od::value value, std::size_t depth, std::size_t max_depth, Value* out);

// Reads a document whose root is a scalar (of the given type) into out (when
// not null), checking that nothing follows it in text.
std::optional<WalkError> read_scalar_document(od::document& doc, od::json_type type, std::string_view text, Value* out);

extern template std::optional<WalkError> walk<true>(od::value, std::size_t, std::size_t, Value*);
extern template std::optional<WalkError> walk<false>(od::value, std::size_t, std::size_t, Value*);

}  // namespace babelqueue::detail
