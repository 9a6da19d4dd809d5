// SPDX-License-Identifier: Apache-2.0
// Reading AMQP application property values the way the bindings read them:
// as text, and as the bq-schema-version gate, which takes a string as the
// text bindings do and an integral AMQP value (int, long, ...) as the typed
// ones do. Shared by the Artemis and Service Bus transports.
//
// Thread-safety: pure functions over values.
#pragma once

#include <babelqueue/binding.hpp>
#include <babelqueue/rejection.hpp>

#include <cstdint>
#include <optional>
#include <proton/binary.hpp>
#include <proton/scalar.hpp>
#include <proton/symbol.hpp>
#include <proton/types.hpp>
#include <string>
#include <string_view>

namespace babelqueue::amqp10 {

inline std::string text_of(const proton::scalar& s) {
  switch (s.type()) {
    case proton::STRING: return proton::get<std::string>(s);
    case proton::SYMBOL: return proton::get<proton::symbol>(s);
    case proton::BINARY: {
      const auto b = proton::get<proton::binary>(s);
      return std::string(b.begin(), b.end());
    }
    default: return proton::to_string(s);
  }
}

inline bool is_integral(proton::type_id t) {
  switch (t) {
    case proton::BYTE:
    case proton::UBYTE:
    case proton::SHORT:
    case proton::USHORT:
    case proton::INT:
    case proton::UINT:
    case proton::LONG:
    case proton::ULONG: return true;
    default: return false;
  }
}

// The gate on a bq-schema-version value: a string as the text bindings read
// it, an integral AMQP value as the typed ones do; any other type is poison.
inline std::optional<Rejection> schema_version_gate(const proton::scalar& value) {
  if (value.type() == proton::STRING || value.type() == proton::SYMBOL) {
    return binding::schema_version_gate(std::optional<std::string_view>(text_of(value)));
  }
  if (value.type() == proton::NULL_TYPE) return std::nullopt;
  if (is_integral(value.type())) {
    if (value.type() == proton::ULONG) {
      const auto u = proton::get<std::uint64_t>(value);
      return binding::schema_version_gate(u > 1 ? std::int64_t{2} : static_cast<std::int64_t>(u));
    }
    return binding::schema_version_gate(proton::coerce<std::int64_t>(value));
  }
  // A float, a boolean, a binary...: even a double 1.0 is not the integer 1
  // (the Python SDK rejects it too).
  return Rejection::schema_version_gate;
}

}  // namespace babelqueue::amqp10
