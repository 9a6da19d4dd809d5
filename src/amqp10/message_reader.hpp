// SPDX-License-Identifier: Apache-2.0
// MessageReader: what a transport makes of a received message, made on the
// connection's thread while proton's decoded message is at hand.
//
// The client decodes every delivery of a connection into one C message
// (proton's pn_message_t), so that object is hot in the cache when the
// reader runs. Reading it there into the transport's own compact form (a
// Delivery) keeps it so; handing a message over instead means buffering a
// decoded message per delivery (several kilobytes spread over a dozen
// allocations) and reading it later on another core. The C message, not a
// proton::message: decoding into the latter copies its maps again.
//
// Thread-safety: a reader runs on the connection's thread only, one message
// at a time.
#pragma once

#include <proton/message.h>

#include <functional>
#include <memory>
#include <string_view>

namespace babelqueue::amqp10 {

// A reader's result: the transport's own type, derived from this one.
struct Read {
  virtual ~Read() = default;
};

// Reads message, received from address (valid for the call only). reuse, when not null, is a Read
// this reader made earlier, handed back by Client::recycle(): filling it
// again keeps the storage it already has (its strings' capacity, the object
// itself) instead of allocating. It must not throw: a reader that throws
// gets the message handed over as if there were no reader.
using MessageReader =
    std::function<std::unique_ptr<Read>(std::string_view address, pn_message_t* message, std::unique_ptr<Read> reuse)>;

// Reads message from its encoded bytes (valid for the call only), before
// proton decodes it: what a reader of encoded_message.hpp makes, which
// skips proton's decoding (ADR 0060). reuse is as for a MessageReader, and
// is taken only by a read that is returned. nullptr declines the message
// (one that reading does not cover): the client then decodes it and hands
// it to the MessageReader, as without this one. It must not throw: a
// throw declines too.
using EncodedReader = std::function<std::unique_ptr<Read>(std::string_view address, std::string_view encoded,
                                                          std::unique_ptr<Read>& reuse)>;

}  // namespace babelqueue::amqp10
