// SPDX-License-Identifier: Apache-2.0
// OrderCreated: the typed message the examples exchange.
//
// A typed message is a plain struct that names its URN and converts itself to
// and from a babelqueue::Value (the envelope's `data` object). That is all the
// TypedMessage concept asks for; Worker::handle<OrderCreated>, Worker::publish
// and Envelope::make/data_as then work with the struct directly. write_data
// (data_writer.hpp) is optional: publishing then writes the struct straight
// into the envelope's bytes instead of building a Value first.
#pragma once

#include <babelqueue/data_writer.hpp>
#include <babelqueue/typed_message.hpp>
#include <babelqueue/value.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace shop {

struct OrderCreated {
  // The URN routes the message: every SDK of the family (Go, Python, Java...)
  // that handles "urn:babel:orders:created" can consume what this one sends.
  static constexpr std::string_view urn = "urn:babel:orders:created";

  std::int64_t order_id = 0;
  std::string customer;
  // Money as integer minor units: a double would not survive every SDK's JSON
  // reader unchanged, an integer does.
  std::int64_t amount_cents = 0;
  std::string currency;  // ISO 4217, e.g. "EUR"

  // The keys are written in this order, and the canonical bytes keep it.
  babelqueue::Value to_value() const {
    return babelqueue::Value::object(
        {{"order_id", order_id}, {"customer", customer}, {"amount_cents", amount_cents}, {"currency", currency}});
  }

  // The same bytes as to_value(), without the Value: what every publish of an
  // OrderCreated uses (Envelope::make prefers it). A mistake here (a key
  // twice, a missing end_object) fails the publish; nothing is sent.
  void write_data(babelqueue::DataWriter& out) const {
    out.begin_object()
        .member("order_id", order_id)
        .member("customer", customer)
        .member("amount_cents", amount_cents)
        .member("currency", currency)
        .end_object();
  }

  // Throws babelqueue::Error when a field is missing or has the wrong type:
  // inside a handler that is a handler failure (retried, then dead-lettered),
  // never a crash.
  static OrderCreated from_value(const babelqueue::Value& data) {
    return {data["order_id"].as_int64(), data["customer"].as_string(), data["amount_cents"].as_int64(),
            data["currency"].as_string()};
  }

  bool operator==(const OrderCreated&) const = default;

  // "12.50 EUR", for the examples' output.
  std::string amount() const {
    char text[48];
    std::snprintf(text, sizeof text, "%lld.%02lld %s", static_cast<long long>(amount_cents / 100),
                  static_cast<long long>(amount_cents % 100), currency.c_str());
    return text;
  }
};

static_assert(babelqueue::TypedMessage<OrderCreated> && babelqueue::WritesData<OrderCreated>);

// The examples mark one order with this out-of-band header to make the
// worker's handler fail its first delivery (a simulated payment-gateway
// timeout), so the retry path can be watched. Headers ride beside the
// envelope and survive retries (SPEC §8).
inline constexpr std::string_view kFailOnceHeader = "x-demo-fail-once";

}  // namespace shop
