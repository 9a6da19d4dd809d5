// SPDX-License-Identifier: Apache-2.0
// Why a message body is not an acceptable envelope.
//
// The first group is found while decoding (the bytes are not a JSON object the
// SDK will read); the second by accepts() (the object breaks an envelope rule of
// the wire contract); the last by a transport's bq-schema-version gate. Every
// rejected message is poison: it never reaches a handler.
#pragma once

#include <babelqueue/error.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace babelqueue {

/// Why a body is not an acceptable envelope: decode() or accepts() said so.
enum class Rejection {
  /// decoding
  too_large,      ///< the body is over DecodeOptions::max_bytes
  invalid_utf8,   ///< the body is not valid UTF-8
  invalid_json,   ///< the body is not JSON
  not_an_object,  ///< the body is JSON but not an object
  too_deep,       ///< nesting deeper than DecodeOptions::max_depth
  duplicate_key,  ///< a key appears twice in the frame or in meta
  /// accepts(), checked in this order
  missing_urn,                 ///< neither `job` nor `urn` is a non-blank string
  missing_meta,                ///< `meta` is absent or not an object
  unsupported_schema_version,  ///< meta.schema_version is not the integer 1
  invalid_data,                ///< `data` is absent or not an object
  missing_trace_id,            ///< `trace_id` is absent, blank or not a string
  invalid_attempts,            ///< `attempts` is present but not an integer >= 0
  /// transports
  schema_version_gate,  ///< the native bq-schema-version property is not "1"
};

/// Stable snake_case name, e.g. "unsupported_schema_version".
std::string_view to_string(Rejection reason) noexcept;
/// Inverse of to_string; empty for an unknown name.
std::optional<Rejection> rejection_from_string(std::string_view name) noexcept;

/// A decode failure: the typed reason plus a sentence for humans (it names the
/// offending key or the position where it could). It answers the questions
/// every error answers (code, message, retriable) and converts to ErrorInfo,
/// which keeps the reason (ErrorInfo::rejection()), so decode failures travel
/// in the same error type as everything else.
struct DecodeError {
  Rejection reason;    ///< the typed reason
  std::string detail;  ///< the sentence

  /// invalid_utf8, invalid_json, or rejected for every other reason.
  Errc code() const noexcept;
  /// "<reason>: <detail>".
  std::string message() const;
  /// Never: the same bytes fail the same way (the message is poison).
  bool retriable() const noexcept { return false; }
  /// The same failure as an ErrorInfo: code(), message(), not retriable, the
  /// reason kept as its rejection().
  operator ErrorInfo() const;  // NOLINT: implicit by design, one error type
};

/// What DecodeError becomes when Result::value() throws: ErrorInfo(error).
ErrorInfo to_error_info(const DecodeError& error);

}  // namespace babelqueue
