// SPDX-License-Identifier: Apache-2.0
// Broker URLs: scheme://[user[:password]@]host[:port][/path][?key=value&...]
//
// The forms follow the Python SDK's, so one BABELQUEUE_URL serves a Python and
// a C++ service alike: redis://, amqp://, sqs://region?endpoint=..., kafka://,
// plus this SDK's memory:// and sqlite://PATH.
//
// Parsing rules, so every transport reads the same fields the same way:
//   - The scheme is lowercased; user, password, host, path and query are
//     percent-decoded ('+' is a space in the query only).
//   - The last '@' of the authority ends the user information.
//   - An IPv6 literal is written in brackets, [::1]:6379, and stored without
//     them: host "::1", port 6379.
//   - Several hosts, h1:9092,h2:9092, stay in host exactly as written and no
//     port is parsed; the transport splits them.
//   - path is what follows the authority's '/', without that '/'. For
//     sqlite:// this means (see sqlite::Transport):
//       sqlite://data/q.db  -> host "data", path "q.db"  -> file "data/q.db"
//                              (relative to the working directory)
//       sqlite:///var/q.db  -> host "",     path "var/q.db" -> file "/var/q.db"
//   - A '#fragment' is ignored. A repeated query key keeps its last value.
//
// Thread-safety: a Url is a plain value; parse() may run on any thread.
#pragma once

#include <babelqueue/result.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace babelqueue {

/// A transport URL, split and percent-decoded (Url::parse).
struct Url {
  std::string scheme;                 ///< lowercase, e.g. "redis"
  std::string user;                   ///< percent-decoded
  std::string password;               ///< percent-decoded
  std::string host;                   ///< "" when absent; several "h1:p1,h2:p2" stay as written
  std::optional<std::uint16_t> port;  ///< empty when absent
  std::string path;                   ///< after the authority, without the leading '/', percent-decoded
  std::map<std::string, std::string, std::less<>> query;  ///< percent-decoded

  /// The text of a query parameter, or fallback.
  std::string param(std::string_view key, std::string_view fallback = {}) const;
  /// A query parameter read as a boolean: 1/true/yes/on and 0/false/no/off.
  Result<bool> flag(std::string_view key, bool fallback) const;
  /// A query parameter read as a number.
  Result<double> number(std::string_view key, double fallback) const;

  /// The URL with the password, the values of query parameters whose names
  /// say they are secrets (password, secret, token, credential, signature,
  /// access_key, sas_key), and the password of a URL given as a parameter's
  /// value (?endpoint=http://user:password@host) replaced by "***", for logs
  /// and errors.
  std::string redacted() const;

  /// Errc::invalid_argument naming what is wrong; the message never holds
  /// what may be a credential of text (see redact_secrets).
  static Result<Url> parse(std::string_view text);
};

/// message with everything of url_text that is, or may be, a credential
/// replaced by "***": the password (as written and percent-decoded, whole and
/// in pieces, even where a stray '/', '?' or '#' cut the URL early), the values
/// of secret parameters, and the passwords of URLs inside the query. For the
/// errors of code that reads a URL which may not even parse.
std::string redact_secrets(std::string message, std::string_view url_text);

}  // namespace babelqueue
