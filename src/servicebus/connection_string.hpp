// SPDX-License-Identifier: Apache-2.0
// A Service Bus connection string, read as Microsoft's Python client reads
// it: `Key=Value` pairs separated by ';' (a trailing ';' allowed), the value
// being everything after the first '=', keys matched without regard to case.
//
//   Endpoint=sb://NAMESPACE/;SharedAccessKeyName=NAME;SharedAccessKey=KEY[;EntityPath=QUEUE]
//   Endpoint=sb://NAMESPACE/;SharedAccessSignature=SharedAccessSignature sr=...[;EntityPath=...]
//   ...;UseDevelopmentEmulator=true
//
// Thread-safety: a plain value and a pure function.
#pragma once

#include <babelqueue/result.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace babelqueue::servicebus {

struct ConnectionString {
  // The endpoint's host and port, and both as written (host[:port]): the
  // namespace part of the token audiences sb://<authority>/<entity>.
  std::string host;
  std::optional<std::uint16_t> port;
  std::string authority;
  std::string key_name;
  std::string key;  // a secret
  std::string entity_path;
  std::string shared_access_signature;  // a secret: a ready-made token
  bool use_development_emulator = false;

  // Errc::invalid_argument naming what is wrong, never a secret value.
  static Result<ConnectionString> parse(std::string_view text);
};

}  // namespace babelqueue::servicebus
