// SPDX-License-Identifier: Apache-2.0
// Two things done on proton's C objects: the data a proton::value holds,
// read without copying it into C++ containers (a transport's reader reads a
// received message's maps so), and the outcomes proton's C++ objects never
// offered: modified{delivery-failed=true} (proton::delivery::modify() sends
// delivery-failed=false, and Artemis counts a delivery only with true) and
// an outcome sent without settling (rcv-settle-mode second) with an error's
// info map.
//
// The C handle of a value's data sits behind value_base's protected data_
// (and proton::internal::object's protected pn_object()); a pointer to that
// member, formed in a derived class as the access rules allow, reads it from
// any object of the base type.
//
// Thread-safety: a delivery on its connection's thread only; c_data() on a
// value the calling thread owns.
#pragma once

#include "outcome.hpp"

#include <proton/codec.h>
#include <proton/condition.h>
#include <proton/delivery.h>
#include <proton/disposition.h>
#include <proton/link.h>

#include <proton/internal/data.hpp>
#include <proton/value.hpp>

namespace babelqueue::amqp10::detail {

template <class Wrapper, class C>
struct CHandle : Wrapper {
  static C* of(const Wrapper& object) {
    C* (proton::internal::object<C>::*get)() const = &CHandle::pn_object;
    return (object.*get)();
  }
};

// The data a value holds (of a message's body or maps: the message's own),
// or null for a value that never held any.
inline pn_data_t* c_data(const proton::value& v) {
  struct Access : proton::internal::value_base {
    static pn_data_t* of(const proton::internal::value_base& value) {
      proton::internal::data proton::internal::value_base::*member = &Access::data_;
      return CHandle<proton::internal::data, pn_data_t>::of(value.*member);
    }
  };
  return Access::of(v);
}

// Settles d with modified{delivery-failed=true[, undeliverable-here]}.
inline void settle_modified_failed(pn_delivery_t* c, bool undeliverable_here) {
  pn_disposition_t* local = pn_delivery_local(c);
  pn_disposition_set_failed(local, true);
  pn_disposition_set_undeliverable(local, undeliverable_here);
  pn_delivery_update(c, PN_MODIFIED);
  pn_delivery_settle(c);
}

// Sets d's local outcome without settling it (rcv-settle-mode second: the
// broker settles first, then the receiver). rejected carries the outcome's
// condition, with its info as a map of symbol keys to strings.
inline void update_unsettled(pn_delivery_t* c, const Outcome& outcome) {
  pn_disposition_t* local = pn_delivery_local(c);
  switch (outcome.kind) {
    case Outcome::Kind::accepted: pn_delivery_update(c, PN_ACCEPTED); return;
    case Outcome::Kind::released: pn_delivery_update(c, PN_RELEASED); return;
    case Outcome::Kind::failed:
    case Outcome::Kind::failed_undeliverable:
      pn_disposition_set_failed(local, true);
      pn_disposition_set_undeliverable(local, outcome.kind == Outcome::Kind::failed_undeliverable);
      pn_delivery_update(c, PN_MODIFIED);
      return;
    case Outcome::Kind::rejected: {
      pn_condition_t* cond = pn_disposition_condition(local);
      if (!outcome.condition.empty()) pn_condition_set_name(cond, outcome.condition.c_str());
      if (!outcome.description.empty()) pn_condition_set_description(cond, outcome.description.c_str());
      if (!outcome.info.empty()) {
        pn_data_t* info = pn_condition_info(cond);
        pn_data_clear(info);
        pn_data_put_map(info);
        pn_data_enter(info);
        for (const auto& [key, value] : outcome.info) {
          pn_data_put_symbol(info, pn_bytes(key.size(), key.data()));
          pn_data_put_string(info, pn_bytes(value.size(), value.data()));
        }
        pn_data_exit(info);
      }
      pn_delivery_update(c, PN_REJECTED);
      return;
    }
  }
}

}  // namespace babelqueue::amqp10::detail
