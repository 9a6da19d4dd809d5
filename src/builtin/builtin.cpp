// SPDX-License-Identifier: Apache-2.0
#include "builtin.hpp"

#include "builtin_transports.hpp"

#if defined(BQ_BUILTIN_IDEMPOTENCY)
#include "idempotency_conformance.hpp"
#endif
#if defined(BQ_BUILTIN_SCHEMA)
#include "schema_conformance.hpp"
#endif

#include <mutex>

namespace babelqueue::builtin {

void register_transports() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const detail::BuiltinTransport& transport : detail::builtin_transports()) transport.register_transport();
    detail::register_each_idempotency_store();
  });
}

void add_conformance_sections(conformance::Runner& runner) {
  conformance::add_core_sections(runner);
  detail::add_each_conformance_section(runner);
#if defined(BQ_BUILTIN_IDEMPOTENCY)
  register_transports();  // the stores to check are those registered
  idempotency::add_conformance_section(runner);
#endif
#if defined(BQ_BUILTIN_SCHEMA)
  schema::add_conformance_section(runner);
#endif
}

}  // namespace babelqueue::builtin
