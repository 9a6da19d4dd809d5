// SPDX-License-Identifier: Apache-2.0
// Rules of URL query values shared by Url and UrlOptionReader, so each is
// written once.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace babelqueue::url_detail {

// Whether a query parameter's name says its value is a secret (password,
// secret, token, credential, signature, access_key, sas_key): such values
// are never printed.
bool is_secret_parameter(std::string_view key);

// A parameter's value as errors and redacted() show it: "***" for a secret
// parameter, else the value with the password of any URL in it
// (http://user:password@host) replaced by "***".
std::string shown_value(std::string_view key, std::string_view value);

// true/false, yes/no, on/off, 1/0 in any case; nullopt for anything else.
std::optional<bool> parse_flag(std::string_view text);

}  // namespace babelqueue::url_detail
