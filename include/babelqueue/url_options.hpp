// SPDX-License-Identifier: Apache-2.0
// UrlOptionReader: how every transport reads the query of its URL. A
// transport declares each key once — its name, where the value goes, what
// it accepts, and older spellings kept working — then finish() refuses any
// key nobody declared:
//
//   UrlOptionReader read(url);
//   read.duration("visibility_timeout", options.visibility_timeout, {.min = 1ms});
//   read.integer("max_connections", options.max_connections, 1, 1024);
//   read.tls(options.tls, "rediss://");
//   if (auto done = read.finish(); !done) return unexpected(done.error());
//
// Rules shared by every transport:
//   - Durations use the one syntax of duration.hpp (500ms, 5s, 2m, 1h, or a
//     bare number in the key's unit); flags are true/false, yes/no, on/off,
//     1/0; integers are decimal digits.
//   - A key given with an empty value (?key=) counts as not given: the
//     default stays, as when Python's parse_qs reads the same URL.
//   - A declaration leaves its destination untouched unless the key is given
//     and valid, so destinations hold the defaults beforehand.
//   - Errors are Errc::invalid_argument with one text per kind:
//       redis:// URL: unknown parameter 'visiblity_timeout' (known: visibility_timeout, ...)
//       redis:// URL: parameter 'connect_timeout' is 'abc', expected a duration (500ms, 5s,
//         2m, or a number of seconds) between 1ms and 1h
//       redis:// URL: parameters 'tls_ca' and 'cacert' are one option; give one of them
//       redis:// URL: parameter 'tls_ca' needs TLS (rediss://)
//     The value of a parameter whose name says it is a secret (password,
//     token, secret, ...) is shown as '***'; no error shows the URL's
//     password.
//
// Thread-safety: a reader is used by one thread; it refers to url, which must
// outlive it.
#pragma once

#include <babelqueue/duration.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/tls_options.hpp>
#include <babelqueue/url.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <ratio>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace babelqueue {

/// Reads a URL's query parameters by their rules (this header's opening comment
/// gives them): each read checks and converts one, and every parameter left
/// unread is an error at finish(), so a misspelt one is never ignored.
class UrlOptionReader {
 public:
  /// Older spellings of a key; giving one of them and the key at once is an error.
  using Aliases = std::initializer_list<std::string_view>;

  explicit UrlOptionReader(const Url& url);  ///< reads url's parameters

  /// Any text.
  void text(std::string_view name, std::string& into, Aliases aliases = {});
  /// true/false, yes/no, on/off, 1/0 (any case).
  void flag(std::string_view name, bool& into, Aliases aliases = {});
  /// A whole number from min to max (both must fit T).
  template <std::integral T>
  void integer(std::string_view name, T& into, std::int64_t min, std::int64_t max, Aliases aliases = {}) {
    if (const auto value = read_integer(name, min, max, aliases)) into = static_cast<T>(*value);
  }
  /// A duration under rule. A destination coarser than milliseconds (e.g.
  /// std::chrono::seconds) accepts only whole multiples of its unit.
  template <class Rep, class Period>
  void duration(std::string_view name, std::chrono::duration<Rep, Period>& into, DurationRule rule,
                Aliases aliases = {}) {
    using Destination = std::chrono::duration<Rep, Period>;
    if constexpr (std::ratio_greater_v<Period, std::milli>) {
      rule.step = std::max(rule.step, std::chrono::duration_cast<std::chrono::milliseconds>(Destination(1)));
    }
    if (const auto value = read_duration(name, rule, aliases)) into = std::chrono::duration_cast<Destination>(*value);
  }
  /// A comma-separated list of durations, each under rule ("5s,30s,5m").
  void durations(std::string_view name, std::vector<std::chrono::milliseconds>& into, const DurationRule& rule,
                 Aliases aliases = {});
  /// One of the named values: choice("synchronous", mode, {{"normal", Mode::normal}, {"full", Mode::full}}).
  template <class T>
  void choice(std::string_view name, T& into, std::initializer_list<std::pair<std::string_view, T>> choices,
              Aliases aliases = {}) {
    std::vector<std::string_view> names;
    names.reserve(choices.size());
    for (const auto& entry : choices) names.push_back(entry.first);
    if (const auto index = read_choice(name, names, aliases)) into = (choices.begin() + *index)->second;
  }
  /// Every key that starts with prefix ("rdkafka.") and is longer, stored
  /// under the rest of its name ("rdkafka.linger.ms=5" -> into["linger.ms"]).
  void prefixed(std::string_view prefix, std::map<std::string, std::string>& into);
  /// The TLS names of tls_options.hpp (with their older spellings) into tls.
  /// tls.enabled is the transport's to set beforehand; when it is false,
  /// tls_ca, tls_cert, tls_key and tls_server_name are refused, naming
  /// how_to_enable ("rediss://", "tls=true").
  void tls(TlsOptions& into, std::string_view how_to_enable);

  /// Whether name (or one of its aliases) was given with a value; for rules
  /// between keys. Call after declaring it.
  bool given(std::string_view name) const;

  /// The first error of the declarations, or the first key nobody declared.
  Result<void> finish() const;

 private:
  struct Given {
    std::string_view key;  ///< as written in the URL: the name or an alias
    std::string_view value;
  };

  std::optional<Given> take(std::string_view name, Aliases aliases);
  std::optional<std::int64_t> read_integer(std::string_view name, std::int64_t min, std::int64_t max, Aliases aliases);
  std::optional<std::chrono::milliseconds> read_duration(std::string_view name, const DurationRule& rule,
                                                         Aliases aliases);
  std::optional<std::size_t> read_choice(std::string_view name, std::span<const std::string_view> names,
                                         Aliases aliases);
  void malformed(const Given& given, std::string_view expected);
  void fail(std::string message);

  const Url& url_;
  std::string prefix_;                        ///< "redis:// URL: "
  std::vector<std::string> declared_;         ///< names and prefixes ("rdkafka.*"), for the known list
  std::set<std::string, std::less<>> read_;   ///< query keys a declaration took
  std::set<std::string, std::less<>> given_;  ///< declared names given with a value
  std::optional<ErrorInfo> error_;            ///< the first one
};

}  // namespace babelqueue
