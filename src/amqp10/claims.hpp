// SPDX-License-Identifier: Apache-2.0
// Claims: claims-based security (CBS), the AMQP 1.0 extension Azure Service
// Bus authorises links with. Before a link to an address opens, the client
// puts a token for that address's audience on the `$cbs` node of the same
// connection (a put-token request answered with a status code), and puts a
// fresh one before it expires; tokens belong to a connection, so a
// reconnect puts them again.
//
// Thread-safety: a plain value. The functions are called on the client's
// I/O thread: they must be quick (sign a token, or hand out a cached one)
// and must not call back into the client.
#pragma once

#include <babelqueue/result.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace babelqueue::amqp10 {

// A token as the put-token request carries it.
struct ClaimsToken {
  std::string token;  // the token's text (a secret: never logged)
  std::string type;   // "servicebus.windows.net:sastoken" or "jwt"
  std::chrono::system_clock::time_point expires_at;
};

struct Claims {
  // The token for an audience; empty: the connection uses no CBS. An error
  // fails the links that wait for the token with that error.
  std::function<Result<ClaimsToken>(const std::string& audience)> token;
  // The audience whose token a link to address needs (for Service Bus the
  // entity's URI, sb://host/entity).
  std::function<std::string(std::string_view address)> audience_of;
  // A token is put again once this share of its lifetime has passed.
  double refresh_after = 0.8;
  // A put-token unanswered for this long fails its links with Errc::timeout.
  std::chrono::milliseconds put_timeout{std::chrono::seconds(30)};
};

}  // namespace babelqueue::amqp10
