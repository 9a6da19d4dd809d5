// SPDX-License-Identifier: Apache-2.0
// From the transport's options to an AMQP connection: the credentials (the
// connection string, from the options or AZURE_SERVICEBUS_CONNECTION_STRING,
// else the token provider), the endpoint (TLS on 5671, or plain AMQP with
// UseDevelopmentEmulator=true) and the claims that put a token on $cbs for
// each entity's audience.
//
// Thread-safety: pure functions; the token source they build may be called
// from any one thread at a time (the client's I/O thread).
#pragma once

#include "connection_options.hpp"

#include <babelqueue/servicebus/transport.hpp>

#include <string>
#include <string_view>

namespace babelqueue::servicebus {

// The audience a link to address needs a token for: sb://AUTHORITY/ENTITY,
// where ENTITY is the address without a trailing /$management or
// /$DeadLetterQueue (the entity's token covers both).
std::string audience_of(std::string_view authority, std::string_view address);

// Errc::invalid_argument for missing or malformed credentials or a
// namespace that disagrees with the connection string's; Errc::auth for a
// shared access signature that has expired already.
Result<amqp10::ConnectionOptions> connection_options(const Transport::Options& options);

}  // namespace babelqueue::servicebus
