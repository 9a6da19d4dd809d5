// SPDX-License-Identifier: Apache-2.0
// A received message's body as the envelope's bytes, shared by the Artemis
// and Service Bus projections: a string, binary (a Data section) or symbol
// body is its bytes, an absent or null body is empty, and any other AMQP
// value is printed (the decoder then rejects it as not an envelope, with
// its bytes kept for the dead-letter queue).
#pragma once

#include "c_message.hpp"

#include <proton/codec.h>
#include <proton/message.h>

#include <cstddef>
#include <proton/binary.hpp>
#include <proton/symbol.hpp>
#include <proton/value.hpp>
#include <string>
#include <string_view>

namespace babelqueue::amqp10 {

namespace detail {

inline std::string_view view(pn_bytes_t bytes) { return {bytes.start, bytes.size}; }

// The body's bytes straight off the message's C data, without converting
// the value to C++ types first; false for a type other than string, binary,
// symbol or null.
inline bool read_body_bytes(pn_data_t* b, std::string& out) {
  if (b == nullptr) return true;
  pn_data_rewind(b);
  if (!pn_data_next(b)) return true;
  switch (pn_data_type(b)) {
    case PN_BINARY: out.assign(view(pn_data_get_binary(b))); return true;
    case PN_STRING: out.assign(view(pn_data_get_string(b))); return true;
    case PN_SYMBOL: out.assign(view(pn_data_get_symbol(b))); return true;
    case PN_NULL: return true;
    default: return false;
  }
}

}  // namespace detail

// Empties out for a body. out keeps its storage for the next message (a
// reader's recycled Delivery), but not what one large message grew it to:
// kept in a read that waits for reuse, that memory would stay allocated
// however small the messages after it.
inline void clear_body(std::string& out) {
  constexpr std::size_t kLargestBodyKept = 64 * 1024;
  if (out.capacity() > kLargestBodyKept) std::string().swap(out);
  out.clear();
}

// The body's bytes into out (replacing what it held; see clear_body()).
inline void read_body(pn_message_t* message, std::string& out) {
  clear_body(out);
  if (detail::read_body_bytes(pn_message_body(message), out)) return;
  out = proton::to_string(cpp_message_of(message).body());
}

}  // namespace babelqueue::amqp10
