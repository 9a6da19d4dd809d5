// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/error.hpp>
#include <babelqueue/rejection.hpp>

#include <array>
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
  }
  return "internal";
}

bool is_retriable(Errc code) noexcept {
  return code == Errc::connection || code == Errc::timeout || code == Errc::broker || code == Errc::io;
}

Error::Error(ErrorInfo info)
    : std::runtime_error(std::string(to_string(info.code())) + ": " + info.message()), info_(std::move(info)) {}

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

ErrorInfo to_error_info(const DecodeError& error) {
  Errc code = Errc::rejected;
  if (error.reason == Rejection::invalid_utf8) code = Errc::invalid_utf8;
  if (error.reason == Rejection::invalid_json) code = Errc::invalid_json;
  return ErrorInfo(code, std::string(to_string(error.reason)) + ": " + error.detail);
}

}  // namespace babelqueue
