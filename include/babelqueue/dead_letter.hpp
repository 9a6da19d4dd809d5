// SPDX-License-Identifier: Apache-2.0
// The `dead_letter` block a message gains when it is put on a dead-letter queue.
//
// Always written with all seven keys, in this order: reason, error, exception,
// failed_at, original_queue, attempts, lang (absent error/exception as null).
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/value.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace babelqueue {

/// Why a message was dead-lettered: its handler failed, no handler has its
/// URN, or it is not an acceptable envelope.
enum class DeadLetterReason { failed, unknown_urn, poison };

/// The reason's name in the dead_letter block ("failed", "unknown_urn", "poison").
std::string_view to_string(DeadLetterReason reason) noexcept;
/// The reason of a name; empty for any other text.
std::optional<DeadLetterReason> dead_letter_reason_from_string(std::string_view name) noexcept;

/// The dead_letter block a dead-lettered message carries (docs/encoding.md).
struct DeadLetter {
  /// Kept as text so a block written by another SDK reads back unchanged.
  std::string reason;
  std::optional<std::string> error;      ///< the failure's message
  std::optional<std::string> exception;  ///< the exception's type name
  std::int64_t failed_at = 0;            ///< Unix epoch ms, UTC
  std::string original_queue;            ///< the queue it failed on
  std::int64_t attempts = 0;             ///< deliveries it had
  std::string lang;                      ///< the SDK that dead-lettered the message

  /// A block stamped now by this SDK (lang "cpp").
  static DeadLetter make(DeadLetterReason reason, std::string original_queue, std::int64_t attempts,
                         std::optional<std::string> error = std::nullopt,
                         std::optional<std::string> exception = std::nullopt);

  /// Reads a block from its JSON object form. Missing keys keep their defaults.
  static Result<DeadLetter> from_value(const Value& block);

  bool operator==(const DeadLetter&) const = default;  ///< every field equal
};

/// Appends the canonical JSON object of block to out.
Result<void> write_dead_letter(std::string& out, const DeadLetter& block);

/// The C++ type name of the exception, demangled ("std::runtime_error",
/// "app::PaymentDeclined"): what the block's `exception` field carries.
std::string exception_type_name(const std::exception& error);
/// The same for the exception currently being handled (inside a catch block);
/// "unknown" for a thrown value of another type.
std::string current_exception_type_name();

}  // namespace babelqueue
