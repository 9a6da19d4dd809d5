// SPDX-License-Identifier: Apache-2.0
// The transports of the installed package, generated from the project's list
// of transports (registration.cpp.in).
#pragma once

#include <string_view>
#include <vector>

struct PackagedTransport {
  std::string_view name;
  void (*register_transport)();  // babelqueue::NAME::register_transport
};

const std::vector<PackagedTransport>& packaged_transports();
