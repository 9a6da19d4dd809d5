// SPDX-License-Identifier: Apache-2.0
// The one exception tree of the SDK and the error value carried by Result<T>.
//
// Hot-path operations return Result<T> (see result.hpp); configuration and
// programming errors throw babelqueue::Error. Every error says whether trying
// the same operation again may succeed (retriable), so a runtime can decide to
// release a message instead of dead-lettering it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace babelqueue {

/// What kind of failure happened. Stable names (to_string) appear in logs and in
/// the CLI's output, so scripts may match on them.
enum class Errc {
  invalid_argument,  ///< a caller passed a value the SDK cannot use (blank URN, NaN, ...)
  invalid_json,      ///< text that is not JSON (or not the JSON shape required)
  invalid_utf8,      ///< a string that is not valid UTF-8
  rejected,          ///< a message that is not an acceptable envelope (see Rejection)
  not_found,         ///< a named thing (queue, file, handler) does not exist
  unsupported,       ///< the operation is not offered by this transport or build
  connection,        ///< the broker or server could not be reached or dropped us
  timeout,           ///< the operation did not finish in time
  auth,              ///< credentials or certificates were refused
  broker,            ///< the broker answered with an error
  closed,            ///< the object was closed; create a new one
  io,                ///< a local I/O failure (file, pipe, process)
  internal,          ///< a bug in the SDK: please report it
};

/// The code's stable name ("invalid_argument", "connection", ...).
std::string_view to_string(Errc code) noexcept;

/// True for failures where the same call may succeed later (network, timeouts,
/// broker hiccups); false for failures that will repeat (bad input, auth).
bool is_retriable(Errc code) noexcept;

/// The error value: a code and a human-readable message. Cheap to move.
class ErrorInfo {
 public:
  /// Retriable as its code says (is_retriable).
  ErrorInfo(Errc code, std::string message)
      : code_(code), message_(std::move(message)), retriable_(is_retriable(code)) {}
  /// Retriability decided where the error arose, which knows better than the
  /// code: a lookup that may succeed once a replica catches up is not_found
  /// yet retriable; a handler's own bad input is terminal whatever its code.
  ErrorInfo(Errc code, std::string message, bool retriable)
      : code_(code), message_(std::move(message)), retriable_(retriable) {}

  Errc code() const noexcept { return code_; }                      ///< what kind of failure
  const std::string& message() const noexcept { return message_; }  ///< what happened, for a person
  /// May the same call succeed later? A handler's error that is not
  /// retriable is dead-lettered at once instead of retried.
  bool retriable() const noexcept { return retriable_; }

 private:
  Errc code_;
  std::string message_;
  bool retriable_;
};

/// Root of every exception the SDK throws.
class Error : public std::runtime_error {
 public:
  /// The exception of an error value; what() is its message.
  ///@{
  explicit Error(ErrorInfo info);
  Error(Errc code, const std::string& message) : Error(ErrorInfo(code, message)) {}
  ///@}

  Errc code() const noexcept { return info_.code(); }            ///< what kind of failure
  bool retriable() const noexcept { return info_.retriable(); }  ///< may the same call succeed later
  const ErrorInfo& info() const noexcept { return info_; }       ///< the error value

 private:
  ErrorInfo info_;
};

}  // namespace babelqueue
