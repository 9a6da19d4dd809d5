// SPDX-License-Identifier: Apache-2.0
#include "sigv4_signer.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <ctime>
#include <utility>
#include <vector>

namespace babelqueue::sqs {
namespace {

using Digest = std::array<unsigned char, 32>;

Digest sha256(std::string_view data) {
  Digest out{};
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &size, EVP_sha256(), nullptr);
  return out;
}

Digest hmac(std::string_view key, std::string_view data) {
  Digest out{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), out.data(), &size);
  return out;
}

std::string_view as_view(const Digest& digest) { return {reinterpret_cast<const char*>(digest.data()), digest.size()}; }

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0F]);
  }
  return out;
}

Digest signing_key(std::string_view secret, std::string_view date, std::string_view region, std::string_view service) {
  const Digest k_date = hmac("AWS4" + std::string(secret), date);
  const Digest k_region = hmac(as_view(k_date), region);
  const Digest k_service = hmac(as_view(k_region), service);
  return hmac(as_view(k_service), "aws4_request");
}

bool unreserved(unsigned char c) { return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~'; }

// RFC 3986 encoding, as SigV4 requires for query names and values.
std::string uri_encode(std::string_view text) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 0x0F]);
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string canonical_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    const std::string_view name = part.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : part.substr(eq + 1);
    pairs.emplace_back(uri_encode(percent_decode(name)), uri_encode(percent_decode(value)));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Header values are trimmed and inner runs of spaces collapse to one.
std::string trim_value(std::string_view value) {
  std::string out;
  bool space = false;
  for (const char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

struct UrlParts {
  std::string host;  // with a non-default port
  std::string path;
  std::string query;
};

Result<UrlParts> split_url(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return unexpected(Errc::invalid_argument,
                      "cannot sign a request to '" + std::string(url) + "': not an absolute URL");
  }
  const std::string scheme = lowercase(url.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") {
    return unexpected(Errc::invalid_argument, "cannot sign a request to '" + std::string(url) + "': not http(s)");
  }
  std::string_view rest = url.substr(scheme_end + 3);
  const auto path_start = rest.find_first_of("/?");
  UrlParts parts;
  parts.host = lowercase(rest.substr(0, path_start));
  rest = path_start == std::string_view::npos ? std::string_view{} : rest.substr(path_start);
  const auto query_start = rest.find('?');
  parts.path = std::string(rest.substr(0, query_start));
  if (parts.path.empty()) parts.path = "/";
  if (query_start != std::string_view::npos) parts.query = std::string(rest.substr(query_start + 1));
  // The default port is not part of the Host header.
  const std::string default_port = scheme == "https" ? ":443" : ":80";
  if (parts.host.size() > default_port.size() && parts.host.ends_with(default_port)) {
    parts.host.resize(parts.host.size() - default_port.size());
  }
  if (parts.host.empty()) {
    return unexpected(Errc::invalid_argument, "cannot sign a request to '" + std::string(url) + "': no host");
  }
  return parts;
}

std::string amz_date(std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::array<char, 20> text{};
  std::strftime(text.data(), text.size(), "%Y%m%dT%H%M%SZ", &utc);
  return std::string(text.data());
}

}  // namespace

std::string sha256_hex(std::string_view data) { return hex(as_view(sha256(data))); }

std::string sigv4_signing_key_hex(std::string_view secret_access_key, std::string_view date, std::string_view region,
                                  std::string_view service) {
  return hex(as_view(signing_key(secret_access_key, date, region, service)));
}

Result<void> sign_v4(std::string_view method, HttpRequest& request, const AwsCredentials& credentials,
                     std::string_view region, std::string_view service, std::chrono::system_clock::time_point when) {
  auto url = split_url(request.url);
  if (!url) return unexpected(url.error());
  const std::string timestamp = amz_date(when);
  const std::string_view date = std::string_view(timestamp).substr(0, 8);

  request.headers.emplace_back("X-Amz-Date", timestamp);
  if (!credentials.session_token.empty())
    request.headers.emplace_back("X-Amz-Security-Token", credentials.session_token);

  std::vector<std::pair<std::string, std::string>> canonical;
  canonical.reserve(request.headers.size() + 1);
  canonical.emplace_back("host", url->host);
  for (const auto& [name, value] : request.headers) {
    std::string lower = lowercase(name);
    if (lower == "host" || lower == "authorization") continue;
    canonical.emplace_back(std::move(lower), trim_value(value));
  }
  std::sort(canonical.begin(), canonical.end());

  std::string headers_block;
  std::string signed_headers;
  for (std::size_t i = 0; i < canonical.size(); ++i) {
    // Repeated names join their values with commas, in order.
    if (i > 0 && canonical[i].first == canonical[i - 1].first) {
      headers_block.pop_back();
      headers_block += "," + canonical[i].second + "\n";
      continue;
    }
    headers_block += canonical[i].first + ":" + canonical[i].second + "\n";
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers += canonical[i].first;
  }

  std::string canonical_request;
  canonical_request.reserve(256 + headers_block.size());
  canonical_request.append(method).append("\n");
  canonical_request.append(url->path).append("\n");
  canonical_request.append(canonical_query(url->query)).append("\n");
  canonical_request.append(headers_block).append("\n");
  canonical_request.append(signed_headers).append("\n");
  canonical_request.append(sha256_hex(request.body));

  const std::string scope =
      std::string(date) + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n" + timestamp + "\n" + scope + "\n" + sha256_hex(canonical_request);
  const Digest key = signing_key(credentials.secret_access_key, date, region, service);
  const std::string signature = hex(as_view(hmac(as_view(key), string_to_sign)));

  request.headers.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" +
                                                    scope + ", SignedHeaders=" + signed_headers +
                                                    ", Signature=" + signature);
  return {};
}

}  // namespace babelqueue::sqs
