// SPDX-License-Identifier: Apache-2.0
// The Redis header frame shared with the Go and Python SDKs: a list element
// that carries out-of-band headers beside the envelope,
//   {"__bq_frame":1,"headers":{"traceparent":"00-..."},"body":"<envelope as a JSON string>"}
// Internal to babelqueue::redis.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>

#include <string>
#include <string_view>

namespace babelqueue::redis_detail {

// Drops headers with an empty name or value, as the Go and Python SDKs do.
Headers sanitized(const Headers& headers);

// The list element for body and headers: body itself (byte for byte) when no
// header survives sanitizing, else the frame (keys __bq_frame, headers, body
// in that order; header names sorted; compact JSON with only ", \ and control
// characters escaped, as Python writes it). A body that is not valid UTF-8
// cannot ride inside a JSON string: it is stored bare, keeping its bytes, and
// its headers are dropped. Errc::invalid_utf8 when a header is not UTF-8.
Result<std::string> frame(std::string_view body, const Headers& headers);

struct Unframed {
  std::string body;
  Headers headers;
  bool framed = false;
};

// Reads a list element. It is a frame when it starts with '{', contains
// "__bq_frame", parses as a JSON object whose __bq_frame is a non-zero number
// and whose body is a string; then body and the sanitized string headers come
// from it. Anything else (a bare envelope, any other bytes, a frame whose
// body is missing or not a string) is returned verbatim with no headers, so
// the runtime sees those bytes and treats them as poison if they are not an
// envelope. Never fails.
Unframed unframe(std::string_view element);

}  // namespace babelqueue::redis_detail
