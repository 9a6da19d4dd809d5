// SPDX-License-Identifier: Apache-2.0
// CMessage: a C message (proton's pn_message_t) with an owner, and the way
// between it and a proton::message.
//
// The client decodes each delivery into one C message its reader reads
// (message_reader.hpp): pn_message_decode() into a reused pn_message_t is
// the cheapest decoding proton has. What holds a proton::message instead (a
// test, the conformance checks, a message handed over without a reader)
// goes through the message's encoding, which costs a copy each way.
//
// Thread-safety: functions over the caller's objects.
#pragma once

#include <proton/error.h>
#include <proton/message.h>

#include <cstddef>
#include <memory>
#include <proton/message.hpp>
#include <vector>

namespace babelqueue::amqp10 {

struct CMessageFree {
  void operator()(pn_message_t* message) const { pn_message_free(message); }
};
using CMessage = std::unique_ptr<pn_message_t, CMessageFree>;

inline CMessage new_c_message() { return CMessage(pn_message()); }

// message as a C message. Empty (null) when proton cannot encode it.
inline CMessage c_message_of(const proton::message& message) {
  std::vector<char> bytes;
  message.encode(bytes);
  CMessage c = new_c_message();
  if (pn_message_decode(c.get(), bytes.data(), bytes.size()) != 0) return nullptr;
  return c;
}

// The C message as a proton::message; an empty one when proton cannot
// encode it.
inline proton::message cpp_message_of(pn_message_t* message) {
  std::vector<char> bytes(1024);
  for (;;) {
    std::size_t size = bytes.size();
    const int err = pn_message_encode(message, bytes.data(), &size);
    if (err == 0) {
      bytes.resize(size);
      break;
    }
    if (err != PN_OVERFLOW) return {};
    bytes.resize(bytes.size() * 2);
  }
  proton::message m;
  m.decode(bytes);
  return m;
}

}  // namespace babelqueue::amqp10
