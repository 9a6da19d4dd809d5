// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/rejection.hpp>

#include <array>
#include <memory>
#include <utility>

namespace babelqueue {

std::string_view to_string(Errc code) noexcept {
  switch (code) {
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::invalid_json: return "invalid_json";
    case Errc::invalid_utf8: return "invalid_utf8";
    case Errc::rejected: return "rejected";
    case Errc::not_found: return "not_found";
    case Errc::unsupported: return "unsupported";
    case Errc::connection: return "connection";
    case Errc::timeout: return "timeout";
    case Errc::auth: return "auth";
    case Errc::broker: return "broker";
    case Errc::closed: return "closed";
    case Errc::io: return "io";
    case Errc::internal: return "internal";
    case Errc::outcome_unknown: return "outcome_unknown";
  }
  return "internal";
}

bool is_retriable(Errc code) noexcept {
  return code == Errc::connection || code == Errc::timeout || code == Errc::broker || code == Errc::io ||
         code == Errc::outcome_unknown;
}

namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "babelqueue"; }

  std::string message(int value) const override { return std::string(to_string(static_cast<Errc>(value))); }

  std::error_condition default_error_condition(int value) const noexcept override {
    switch (static_cast<Errc>(value)) {
      case Errc::invalid_argument: return std::errc::invalid_argument;
      case Errc::timeout: return std::errc::timed_out;
      case Errc::unsupported: return std::errc::operation_not_supported;
      case Errc::auth: return std::errc::permission_denied;
      case Errc::io: return std::errc::io_error;
      case Errc::connection: return std::errc::not_connected;
      default: return {value, *this};
    }
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

std::error_code make_error_code(Errc code) noexcept { return {static_cast<int>(code), error_category()}; }

std::string_view ErrorInfo::native_code() const noexcept { return native_ ? native_->code : std::string_view(); }

std::string_view ErrorInfo::native_message() const noexcept { return native_ ? native_->message : std::string_view(); }

ErrorInfo& ErrorInfo::with_native(std::string code, std::string message) & {
  native_ = std::make_shared<const Native>(Native{std::move(code), std::move(message)});
  return *this;
}

ErrorInfo&& ErrorInfo::with_native(std::string code, std::string message) && {
  return std::move(with_native(std::move(code), std::move(message)));
}

std::optional<Rejection> ErrorInfo::rejection() const noexcept {
  if (!has_rejection_) return std::nullopt;
  return static_cast<Rejection>(rejection_);
}

ErrorInfo& ErrorInfo::with_rejection(Rejection reason) & {
  has_rejection_ = true;
  rejection_ = static_cast<int>(reason);
  return *this;
}

ErrorInfo&& ErrorInfo::with_rejection(Rejection reason) && { return std::move(with_rejection(reason)); }

Error::Error(ErrorInfo info)
    : std::system_error(make_error_code(info.code())),
      info_(std::move(info)),
      what_(std::make_shared<const std::string>(std::string(to_string(info_.code())) + ": " + info_.message())) {}

const char* Error::what() const noexcept { return what_->c_str(); }

namespace {
constexpr std::array<std::pair<Rejection, std::string_view>, 13> kRejectionNames{{
    {Rejection::too_large, "too_large"},
    {Rejection::invalid_utf8, "invalid_utf8"},
    {Rejection::invalid_json, "invalid_json"},
    {Rejection::not_an_object, "not_an_object"},
    {Rejection::too_deep, "too_deep"},
    {Rejection::duplicate_key, "duplicate_key"},
    {Rejection::missing_urn, "missing_urn"},
    {Rejection::missing_meta, "missing_meta"},
    {Rejection::unsupported_schema_version, "unsupported_schema_version"},
    {Rejection::invalid_data, "invalid_data"},
    {Rejection::missing_trace_id, "missing_trace_id"},
    {Rejection::invalid_attempts, "invalid_attempts"},
    {Rejection::schema_version_gate, "schema_version_gate"},
}};
}  // namespace

std::string_view to_string(Rejection reason) noexcept {
  for (const auto& [r, name] : kRejectionNames) {
    if (r == reason) return name;
  }
  return "invalid_json";
}

std::optional<Rejection> rejection_from_string(std::string_view name) noexcept {
  for (const auto& [r, n] : kRejectionNames) {
    if (n == name) return r;
  }
  return std::nullopt;
}

Errc DecodeError::code() const noexcept {
  if (reason == Rejection::invalid_utf8) return Errc::invalid_utf8;
  if (reason == Rejection::invalid_json) return Errc::invalid_json;
  return Errc::rejected;
}

std::string DecodeError::message() const { return std::string(to_string(reason)) + ": " + detail; }

DecodeError::operator ErrorInfo() const { return ErrorInfo(code(), message(), false).with_rejection(reason); }

ErrorInfo to_error_info(const DecodeError& error) { return ErrorInfo(error); }

}  // namespace babelqueue
