#include "builtin.hpp"

#include "builtin_transports.hpp"

#include <mutex>

namespace babelqueue::builtin {

void register_transports() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const detail::BuiltinTransport& transport : detail::builtin_transports()) transport.register_transport();
  });
}

void add_conformance_sections(conformance::Runner& runner) {
  conformance::add_core_sections(runner);
  detail::add_each_conformance_section(runner);
}

}  // namespace babelqueue::builtin
