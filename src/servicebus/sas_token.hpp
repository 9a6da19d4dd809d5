// SPDX-License-Identifier: Apache-2.0
// Shared access signature (SAS) tokens, signed as Microsoft's Service Bus
// clients sign them:
//
//   SharedAccessSignature sr=<audience>&sig=<signature>&se=<expiry>&skn=<key name>
//
// each value form-encoded (quote_plus: letters, digits and "_.-~" stay, a
// space is '+', anything else %XX), where <signature> is the base64 of
// HMAC-SHA256 keyed with the key's UTF-8 bytes (the text itself, not its
// base64 decoding) over "<encoded audience>\n<expiry>", and <expiry> is Unix
// seconds.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace babelqueue::servicebus {

inline constexpr std::string_view kSasTokenType = "servicebus.windows.net:sastoken";

// text form-encoded as Python's urllib.parse.quote_plus does it.
std::string quote_plus(std::string_view text);

std::string sign_sas_token(std::string_view audience, std::string_view key_name, std::string_view key,
                           std::int64_t expiry_unix_seconds);

// The se= field of a SAS token (Unix seconds), if it has one that reads as
// a number.
std::optional<std::int64_t> sas_token_expiry(std::string_view token);

}  // namespace babelqueue::servicebus
