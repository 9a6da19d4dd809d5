// SPDX-License-Identifier: Apache-2.0
// Telling "this port does not speak TLS" from other TLS failures, for the
// transports' messages. Internal to the transports.
//
// A TLS client on a plain port fails in ways that point elsewhere: a Redis
// server waits silently for the rest of a command, so the handshake times out;
// a RabbitMQ server answers with its own protocol header, which OpenSSL
// reports like any handshake failure. After such a failure (or a silence) a
// transport asks the port, on a new connection, a question in its plain
// protocol: an answer that is not a TLS record means the port is plain.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace babelqueue::detail {

// What the transports say when answers_in_plain_text() is true.
inline constexpr std::string_view kNotATlsPort = "the server did not answer TLS: is this a TLS port?";

// Connects to host:port (a new connection, within timeout), sends request —
// a question in the server's plain protocol, e.g. "PING\r\n" — and reads the
// first byte of the answer: true when one arrives within timeout and is not
// the first byte of a TLS record (content types 20 to 23), which a TLS server
// would answer with, if at all. False when the port cannot be reached, says
// nothing or answers TLS. Never throws.
bool answers_in_plain_text(const std::string& host, std::uint16_t port, std::string_view request,
                           std::chrono::milliseconds timeout) noexcept;

}  // namespace babelqueue::detail
