// SPDX-License-Identifier: Apache-2.0
// The one exception tree of the SDK and the error value carried by Result<T>.
//
// Hot-path operations return Result<T> (see result.hpp); configuration and
// programming errors throw babelqueue::Error. Every error says what the
// caller may do next (docs/errors.md):
// - retriable: the same call may succeed later (a dropped connection, a
//   timeout before anything was sent, a broker hiccup);
// - terminal: it will fail the same way (bad input, refused credentials, a
//   file that is not a database);
// - outcome unknown (Errc::outcome_unknown): a publish was sent but its
//   confirmation never came, so the broker may hold the message or not;
//   publishing the same bytes again (same meta.id) is safe where consumers
//   deduplicate on meta.id, and may otherwise deliver it twice.
// Retriability is decided where the error arises, which knows better than
// the code alone; the broker's own code and text are kept beside it.
//
// Errc is a std::error_code enum (babelqueue::error_category()): an
// ErrorInfo or Error gives its std::error_code, and codes that have a
// portable meaning compare equal to it (Errc::timeout == std::errc::timed_out).
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace babelqueue {

/// What kind of failure happened. Stable names (to_string) appear in logs and in
/// the CLI's output, so scripts may match on them. New codes are added at the
/// end, so the numeric values of a std::error_code stay stable.
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
  /// A publish was sent but its confirmation did not arrive (no answer in
  /// time, or the connection dropped after the send): the broker may hold
  /// the message. Not "not sent": publishing it again may make a duplicate,
  /// which consumers deduplicating on meta.id absorb.
  outcome_unknown,
};

/// Why a message body is not an acceptable envelope (rejection.hpp).
enum class Rejection;

/// The code's stable name ("invalid_argument", "connection", ...).
std::string_view to_string(Errc code) noexcept;

/// What a code means when nothing better is known: true for failures where
/// the same call may succeed later (connection, timeout, broker, io,
/// outcome_unknown); false for failures that will repeat (bad input, auth).
/// The place an error arises overrides it when it knows better (ErrorInfo's
/// three-argument constructor).
bool is_retriable(Errc code) noexcept;

/// The std::error_category of Errc: name() "babelqueue", message() the code's
/// name. Its default_error_condition maps the codes with a portable meaning
/// to std::errc (invalid_argument, timed_out, operation_not_supported,
/// permission_denied, io_error, not_connected for connection).
const std::error_category& error_category() noexcept;
/// The code as a std::error_code of error_category() (found by ADL, so an
/// Errc converts to std::error_code).
std::error_code make_error_code(Errc code) noexcept;

/// The error value: a code, a human-readable message, whether retrying may
/// help, and what the broker or library said in its own terms. Cheap to move
/// and to copy (the broker's details are shared).
class ErrorInfo {
 public:
  /// Retriable as its code says (is_retriable).
  ErrorInfo(Errc code, std::string message)
      : code_(code), message_(std::move(message)), retriable_(is_retriable(code)) {}
  /// Retriability decided where the error arose, which knows better than the
  /// code: a lookup that may succeed once a replica catches up is not_found
  /// yet retriable; a handler's own bad input is terminal whatever its code;
  /// a file that is not a database is io yet terminal.
  ErrorInfo(Errc code, std::string message, bool retriable)
      : code_(code), message_(std::move(message)), retriable_(retriable) {}

  Errc code() const noexcept { return code_; }                      ///< what kind of failure
  const std::string& message() const noexcept { return message_; }  ///< what happened, for a person
  /// May the same call succeed later? A handler's error that is not
  /// retriable is dead-lettered at once instead of retried.
  bool retriable() const noexcept { return retriable_; }
  /// A publish whose confirmation did not arrive: the broker may hold it.
  bool outcome_unknown() const noexcept { return code_ == Errc::outcome_unknown; }

  /// The broker's or library's own code for this failure, as it names it
  /// ("NOT_FOUND", "312 NO_ROUTE", "SQLITE_NOTADB", "OOM", "AccessDenied",
  /// "RD_KAFKA_RESP_ERR__MSG_TIMED_OUT"); empty when it gave none.
  std::string_view native_code() const noexcept;
  /// Its own text for it, verbatim; empty when it gave none.
  std::string_view native_message() const noexcept;
  /// Keeps the broker's code and text with this error.
  ///@{
  ErrorInfo& with_native(std::string code, std::string message = {}) &;
  ErrorInfo&& with_native(std::string code, std::string message = {}) &&;
  ///@}

  /// Set when the error is a decode failure (DecodeError): why the bytes are
  /// not an acceptable envelope.
  std::optional<Rejection> rejection() const noexcept;
  /// Keeps the decode failure's reason with this error.
  ///@{
  ErrorInfo& with_rejection(Rejection reason) &;
  ErrorInfo&& with_rejection(Rejection reason) &&;
  ///@}

  /// The code as a std::error_code (babelqueue::error_category()).
  std::error_code error_code() const noexcept { return make_error_code(code_); }

  /// The same error with another message (context added by a caller),
  /// everything else kept.
  ErrorInfo with_message(std::string message) const {
    ErrorInfo copy = *this;
    copy.message_ = std::move(message);
    return copy;
  }

 private:
  struct Native {
    std::string code;
    std::string message;
  };
  Errc code_;
  std::string message_;
  bool retriable_;
  bool has_rejection_ = false;
  int rejection_ = 0;  ///< a Rejection, when has_rejection_
  std::shared_ptr<const Native> native_;
};

/// Root of every exception the SDK throws. A std::system_error (and so a
/// std::runtime_error) whose code() is the Errc as a std::error_code; what()
/// is "<code name>: <message>".
class Error : public std::system_error {
 public:
  /// The exception of an error value; what() is its message.
  ///@{
  explicit Error(ErrorInfo info);
  Error(Errc code, const std::string& message) : Error(ErrorInfo(code, message)) {}
  ///@}

  /// The Errc (std::system_error::code() gives it as a std::error_code).
  Errc errc() const noexcept { return info_.code(); }
  /// May the same call succeed later (ErrorInfo::retriable)?
  bool retriable() const noexcept { return info_.retriable(); }
  /// The error value it carries (native code and text, rejection).
  const ErrorInfo& info() const noexcept { return info_; }
  /// "<code name>: <message>".
  const char* what() const noexcept override;

  /// Kept for source compatibility: the Errc, as errc() gives it. Hides
  /// std::system_error::code(); reach that one through a reference to the base.
  Errc code() const noexcept { return info_.code(); }

 private:
  ErrorInfo info_;
  std::shared_ptr<const std::string> what_;  ///< shared: copying an exception must not throw
};

}  // namespace babelqueue

template <>
struct std::is_error_code_enum<babelqueue::Errc> : std::true_type {};
