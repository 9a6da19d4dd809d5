// SPDX-License-Identifier: Apache-2.0
// The parts of reading a received AMQP message into a transport's Delivery
// that the Artemis and Service Bus readers share: emptying a recycled
// Delivery for the next message, and the application properties read the
// slow way, decoded into a map.
//
// Thread-safety: functions over the caller's objects.
#pragma once

#include "amqp_values.hpp"
#include "c_message.hpp"

#include <babelqueue/transport.hpp>

#include <map>
#include <proton/error.hpp>
#include <proton/message.hpp>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/type_id.hpp>
#include <proton/value.hpp>
#include <string>
#include <string_view>

namespace babelqueue::amqp10 {

// Empties d for a message received from queue, every field as a fresh
// Delivery has it but the body (read_body() replaces it), keeping the
// storage d's strings have: d is a reader's recycled Read.
inline void begin_delivery(std::string_view queue, Delivery& d) {
  d.queue.assign(queue);
  d.headers.clear();
  d.native_attempts.reset();
  d.gate_rejection.reset();
  d.attempts_merge = Delivery{}.attempts_merge;
  d.ordering_key.clear();
  d.lease_deadline.reset();
  d.token = DeliveryToken{};
}

// The application properties of message decoded into a map, for the
// values a reader's fast path does not take: schema_version is the gate
// (d.gate_rejection), the others not owned(name) by the binding become
// headers as text. It reads whatever a peer put there without throwing:
// AMQP allows only string keys and simple values, but a list or an array
// value is printed as proton prints it (and fails the gate), a key that is
// not a string is printed too, and a section that is no map at all adds no
// headers.
template <class Owned>
void read_properties_decoded(pn_message_t* message, std::string_view schema_version, Owned owned, Delivery& d) {
  std::map<proton::value, proton::value> props;
  try {
    proton::get(cpp_message_of(message).properties().value(), props);
  } catch (const proton::error&) {
    return;  // not a map
  }
  for (const auto& [key, value] : props) {
    const std::string name = key.type() == proton::STRING   ? proton::get<std::string>(key)
                             : key.type() == proton::SYMBOL ? std::string(proton::get<proton::symbol>(key))
                                                            : proton::to_string(key);
    const bool scalar = proton::type_id_is_scalar(value.type());
    if (name == schema_version) {
      d.gate_rejection =
          scalar ? schema_version_gate(proton::get<proton::scalar>(value)) : Rejection::schema_version_gate;
    } else if (!owned(name)) {
      d.headers.emplace(name, scalar ? text_of(proton::get<proton::scalar>(value)) : proton::to_string(value));
    }
  }
}

}  // namespace babelqueue::amqp10
