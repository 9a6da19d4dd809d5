// SPDX-License-Identifier: Apache-2.0
// Registers every transport of an installed BabelQueue, one after the other:
// each must add URL schemes to the registry, and opening a URL of each new
// scheme (at a closed port) must reach the transport: it opens, or fails with
// the transport's own error, never with "no transport for this scheme".
#include "registration.hpp"

#include <babelqueue/transport_registry.hpp>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

int main() {
  int failures = 0;
  for (const PackagedTransport& transport : packaged_transports()) {
    const std::vector<std::string> before = babelqueue::registered_schemes();
    transport.register_transport();
    std::vector<std::string> added;
    for (const std::string& scheme : babelqueue::registered_schemes()) {
      if (std::find(before.begin(), before.end(), scheme) == before.end()) added.push_back(scheme);
    }
    if (added.empty()) {
      std::cout << transport.name << ": registered no URL scheme\n";
      ++failures;
    }
    for (const std::string& scheme : added) {
      const std::string url = scheme + "://127.0.0.1:1";
      auto opened = babelqueue::open_transport(url);
      const bool unknown_scheme = !opened && opened.error().message().find("no transport for") != std::string::npos;
      std::cout << transport.name << ": " << url << ": " << (opened ? std::string("opened") : opened.error().message())
                << '\n';
      if (unknown_scheme) ++failures;
    }
  }
  std::cout << (failures == 0 ? "transports: ok" : "transports: FAILED") << '\n';
  return failures == 0 ? 0 : 1;
}
