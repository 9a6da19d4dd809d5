// SPDX-License-Identifier: Apache-2.0
#include "servicebus_connection.hpp"

#include "connection_string.hpp"
#include "sas_token.hpp"

#include <babelqueue/error.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>

namespace babelqueue::servicebus {

namespace {

constexpr std::uint16_t kTlsPort = 5671;
constexpr std::uint16_t kPlainPort = 5672;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool ends_with_ci(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && lower(text.substr(text.size() - suffix.size())) == lower(suffix);
}

std::string utc(std::int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string audience_of(std::string_view authority, std::string_view address) {
  std::string_view entity = address;
  for (const std::string_view suffix : {std::string_view("/$management"), std::string_view("/$DeadLetterQueue")}) {
    if (ends_with_ci(entity, suffix)) entity.remove_suffix(suffix.size());
  }
  while (!entity.empty() && entity.front() == '/') entity.remove_prefix(1);
  return "sb://" + std::string(authority) + "/" + std::string(entity);
}

Result<amqp10::ConnectionOptions> connection_options(const Transport::Options& options) {
  std::string text = options.connection_string;
  if (text.empty() && !options.token_provider) {
    if (const char* env = std::getenv(kConnectionStringVariable); env != nullptr) text = env;
  }
  std::optional<ConnectionString> cs;
  if (!text.empty()) {
    auto parsed = ConnectionString::parse(text);
    if (!parsed) return unexpected(parsed.error());
    cs = std::move(*parsed);
  } else if (!options.token_provider) {
    return unexpected(Errc::invalid_argument,
                      std::string("servicebus: no credentials: give a connection string (Options::connection_string "
                                  "or the environment variable ") +
                          kConnectionStringVariable + ") or a token provider");
  }

  amqp10::ConnectionOptions c;
  std::string host = options.namespace_host;
  std::optional<std::uint16_t> port = options.port;
  std::string authority;
  if (cs) {
    if (!host.empty() && lower(host) != lower(cs->host)) {
      return unexpected(Errc::invalid_argument, "servicebus: the URL names the namespace '" + host +
                                                    "' but the connection string's endpoint is '" + cs->host + "'");
    }
    // A port in the URL wins for the TCP connection: the way to reach the
    // namespace through a local proxy or a port forward. The connection
    // string's endpoint stays the namespace: the AMQP hostname and the
    // tokens' audience (ADR 0046).
    host = cs->host;
    if (!port) port = cs->port;
    authority = cs->authority;
  }
  if (host.empty()) {
    return unexpected(Errc::invalid_argument,
                      "servicebus: no namespace: name it in the URL (sb://NAMESPACE) or in a connection string");
  }
  const bool emulator = cs && cs->use_development_emulator;
  if (emulator &&
      (!options.tls.ca_file.empty() || !options.tls.cert_file.empty() || !options.tls.server_name.empty())) {
    return unexpected(Errc::invalid_argument,
                      "servicebus: TLS options with UseDevelopmentEmulator=true, which speaks plain AMQP");
  }
  if (authority.empty()) authority = port ? host + ":" + std::to_string(*port) : host;

  c.host = host;
  c.port = port.value_or(emulator ? kPlainPort : kTlsPort);
  c.tls = options.tls;
  c.tls.enabled = !emulator;
  c.virtual_host = host;
  c.container_id = options.container_id;
  c.connect_timeout = options.connect_timeout;
  c.idle_timeout = options.idle_timeout;
  c.reconnect = options.reconnect;
  c.credit_window = options.prefetch;
  c.max_message_size = options.max_message_size;
  c.receiver_settles_second = true;  // PeekLock: the service confirms each settlement
  c.log = options.log;

  c.claims.audience_of = [authority](std::string_view address) { return audience_of(authority, address); };
  if (options.token_provider) {
    c.claims.token = [provider = options.token_provider](const std::string& audience) -> Result<amqp10::ClaimsToken> {
      auto token = provider(audience);
      if (!token)
        return unexpected(token.error().code(),
                          "the token provider failed for '" + audience + "': " + token.error().message());
      return amqp10::ClaimsToken{token->token, "jwt", token->expires_at};
    };
  } else if (!cs->shared_access_signature.empty()) {
    const std::string signature = cs->shared_access_signature;
    const auto expiry = sas_token_expiry(signature);
    if (expiry && *expiry <= unix_now()) {
      return unexpected(Errc::auth, "servicebus: the connection string's SharedAccessSignature expired at " +
                                        utc(*expiry) +
                                        "; it cannot be renewed: give a fresh one, or a SharedAccessKey");
    }
    c.claims.token = [signature, expiry](const std::string& /*audience*/) -> Result<amqp10::ClaimsToken> {
      if (expiry && *expiry <= unix_now()) {
        return unexpected(Errc::auth, "the connection string's SharedAccessSignature expired at " + utc(*expiry) +
                                          "; it cannot be renewed: give a fresh one, or a SharedAccessKey");
      }
      // Without se= it is taken to last: put once per connection.
      const auto expires_at = std::chrono::system_clock::time_point(std::chrono::seconds(expiry.value_or(
          unix_now() + std::chrono::duration_cast<std::chrono::seconds>(std::chrono::hours(24 * 365)).count())));
      return amqp10::ClaimsToken{signature, std::string(kSasTokenType), expires_at};
    };
  } else {
    c.claims.token = [key_name = cs->key_name, key = cs->key,
                      lifetime = options.token_lifetime](const std::string& audience) -> Result<amqp10::ClaimsToken> {
      const std::int64_t expiry = unix_now() + lifetime.count();
      return amqp10::ClaimsToken{sign_sas_token(audience, key_name, key, expiry), std::string(kSasTokenType),
                                 std::chrono::system_clock::time_point(std::chrono::seconds(expiry))};
    };
  }
  return c;
}

}  // namespace babelqueue::servicebus
