// SPDX-License-Identifier: Apache-2.0
#include "sas_token.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <charconv>

namespace babelqueue::servicebus {

namespace {

std::string base64(const unsigned char* data, std::size_t size) {
  std::string out(4 * ((size + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

}  // namespace

std::string quote_plus(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
        c == '-' || c == '~') {
      out.push_back(ch);
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0x0F]);
    }
  }
  return out;
}

std::string sign_sas_token(std::string_view audience, std::string_view key_name, std::string_view key,
                           std::int64_t expiry_unix_seconds) {
  const std::string encoded_audience = quote_plus(audience);
  const std::string expiry = std::to_string(expiry_unix_seconds);
  const std::string signed_text = encoded_audience + "\n" + expiry;
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), digest.data(), &size);
  const std::string signature = base64(digest.data(), size);
  std::string token =
      "SharedAccessSignature sr=" + encoded_audience + "&sig=" + quote_plus(signature) + "&se=" + expiry;
  if (!key_name.empty()) token += "&skn=" + quote_plus(key_name);
  return token;
}

std::optional<std::int64_t> sas_token_expiry(std::string_view token) {
  constexpr std::string_view kPrefix = "SharedAccessSignature ";
  if (token.substr(0, kPrefix.size()) == kPrefix) token.remove_prefix(kPrefix.size());
  while (!token.empty()) {
    const auto amp = token.find('&');
    const std::string_view field = token.substr(0, amp);
    token = amp == std::string_view::npos ? std::string_view{} : token.substr(amp + 1);
    if (field.substr(0, 3) != "se=") continue;
    const std::string_view digits = field.substr(3);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec == std::errc() && end == digits.data() + digits.size()) return value;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace babelqueue::servicebus
