// SPDX-License-Identifier: Apache-2.0
// Outcome: how a received AMQP 1.0 message is settled.
#pragma once

#include <map>
#include <string>

namespace babelqueue::amqp10 {

struct Outcome {
  enum class Kind {
    accepted,  // done: the broker forgets the message
    released,  // given back untouched: the delivery is not counted
    // modified{delivery-failed=true}: given back and counted (Artemis
    // increments delivery-count only for this one; Service Bus "abandon")
    failed,
    // modified{delivery-failed=true, undeliverable-here=true}
    failed_undeliverable,
    rejected,  // rejected{error}: the broker dead-letters or drops it
  };
  Kind kind = Kind::accepted;
  // rejected: the error condition's name and description.
  std::string condition;
  std::string description;
  // rejected: the error condition's info map, as strings (Service Bus reads
  // DeadLetterReason and DeadLetterErrorDescription here).
  std::map<std::string, std::string> info;

  static Outcome accepted() { return {Kind::accepted, {}, {}, {}}; }
  static Outcome released() { return {Kind::released, {}, {}, {}}; }
  static Outcome failed() { return {Kind::failed, {}, {}, {}}; }
};

}  // namespace babelqueue::amqp10
