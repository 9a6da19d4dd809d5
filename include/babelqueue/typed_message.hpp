// SPDX-License-Identifier: Apache-2.0
// Typed messages: a struct that knows its URN and how to convert to and from a
// Value can be published and handled directly. A type that publishes often
// can write its data straight into the envelope instead (data_writer.hpp).
//
//   struct OrderCreated {
//     static constexpr std::string_view urn = "urn:babel:orders:created";
//     std::int64_t order_id = 0;
//     babelqueue::Value to_value() const { return babelqueue::Value::object({{"order_id", order_id}}); }
//     static OrderCreated from_value(const babelqueue::Value& v) { return {v["order_id"].as_int64()}; }
//   };
#pragma once

#include <babelqueue/data_writer.hpp>
#include <babelqueue/value.hpp>

#include <concepts>
#include <string_view>

namespace babelqueue {

template <class T>
concept TypedMessage = requires(const T& message, const Value& value) {
  { T::urn } -> std::convertible_to<std::string_view>;
  { message.to_value() } -> std::convertible_to<Value>;
  { T::from_value(value) } -> std::convertible_to<T>;
};

/// What Envelope::make, Publisher::publish and Worker::publish take as a
/// message: one that writes its own data, or converts to a Value.
template <class T>
concept PublishableMessage = WritesData<T> || TypedMessage<T>;

}  // namespace babelqueue
