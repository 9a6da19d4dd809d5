// SPDX-License-Identifier: Apache-2.0
// Reading JSON text into a Value and writing a Value as canonical JSON.
//
// The writer is the canonical encoder of the BabelQueue wire contract: compact,
// raw UTF-8, only `"`, `\` and U+0000..U+001F escaped (short forms for
// \b \f \n \r \t, else lowercase \u00xx), exact integers, and doubles as the
// shortest round-trip digits laid out like Python's repr (1.0, 0.0001, 1e-05,
// 1e+16). NaN, infinities and invalid UTF-8 are errors, never written.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/value.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace babelqueue {

/// How much JSON text the reader takes.
struct JsonLimits {
  std::size_t max_depth = 512;                  ///< nesting of arrays and objects
  std::size_t max_bytes = 16U * 1024U * 1024U;  ///< size of the text
};

/// Parses one JSON document. Integers become int64 or uint64, other numbers
/// double; numbers that fit neither (or overflow a double) are kept as
/// NumberText. Duplicate keys keep the first position and the last value.
Result<Value> parse_json(std::string_view text, const JsonLimits& limits = {});

/// The JSON kernel the decoders run on this machine: the name of simdjson's
/// implementation (`icelake`, `haswell`, `westmere`, `arm64`, `fallback`...),
/// chosen once per process from what the CPU supports. The environment
/// variable BABELQUEUE_JSON_KERNEL, read on the first decode, overrides the
/// choice: `portable` (or `fallback`) forces the scalar kernel, another
/// implementation's name forces that one when the CPU supports it; an unknown
/// or unsupported name leaves the best kernel in place.
std::string_view json_kernel() noexcept;

/// Appends the canonical JSON form of value to out. On error out is left with
/// what was written before the failing part; callers discard it.
Result<void> write_json(std::string& out, const Value& value);

/// The canonical JSON form of value.
Result<std::string> to_json(const Value& value);

/// Appends a JSON string literal (with quotes) for text, escaped canonically.
/// Fails on invalid UTF-8.
Result<void> write_json_string(std::string& out, std::string_view text);

/// Appends a double in the canonical layout. Fails on NaN and infinities.
Result<void> write_json_double(std::string& out, double value);

}  // namespace babelqueue
