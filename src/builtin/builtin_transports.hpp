// SPDX-License-Identifier: Apache-2.0
// What is generated from the project's list of transports
// (builtin_transports.cpp.in): the transports this build contains.
#pragma once

#include "conformance.hpp"

#include <string_view>
#include <vector>

namespace babelqueue::builtin::detail {

struct BuiltinTransport {
  std::string_view name;
  void (*register_transport)();  // babelqueue::NAME::register_transport
};

// Every transport built, in the order of the list.
const std::vector<BuiltinTransport>& builtin_transports();

// Calls babelqueue::NAME::add_conformance_section(runner) of every transport
// built that has a conformance section.
void add_each_conformance_section(conformance::Runner& runner);

// Calls babelqueue::NAME::register_idempotency_store() of every transport
// built that has an idempotency store (when babelqueue::idempotency is).
void register_each_idempotency_store();

}  // namespace babelqueue::builtin::detail
