// SPDX-License-Identifier: Apache-2.0
// Writing a message through proton's C API, as the Artemis and Service Bus
// encoders do: text handed to pn_data_* as a byte view (no copy), a
// message-id or correlation-id as a string atom, the epoch clock in
// milliseconds for delay annotations, and a message encoded that way read
// back as a proton::message (for tests and for messages built once).
//
// Thread-safety: pure functions; decoded() builds a new message.
#pragma once

#include "client.hpp"

#include <proton/codec.h>
#include <proton/types.h>

#include <chrono>
#include <cstdint>
#include <proton/message.hpp>
#include <string_view>
#include <vector>

namespace babelqueue::amqp10 {

inline pn_bytes_t bytes_of(std::string_view text) { return pn_bytes(text.size(), text.data()); }

inline pn_atom_t string_atom(std::string_view text) {
  pn_atom_t atom{};
  atom.type = PN_STRING;
  atom.u.as_bytes = bytes_of(text);
  return atom;
}

// Now on the system clock, in milliseconds since the epoch: what delivery
// time annotations count from.
inline std::int64_t epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The first message of encoded, as proton decodes it off the wire.
inline proton::message decoded(const EncodedMessages& encoded) {
  const std::string_view bytes = encoded[0];
  proton::message m;
  m.decode(std::vector<char>(bytes.begin(), bytes.end()));
  return m;
}

}  // namespace babelqueue::amqp10
