// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the memory and
// SQLite transports; each broker's own test program runs it on that broker.
#include "temp_dir.hpp"
#include "trace_headers.hpp"

#include <babelqueue/transport_registry.hpp>
#if BQ_HAVE_SQLITE
#include <babelqueue/sqlite/transport.hpp>
#endif

namespace {

namespace bq = babelqueue;

bq::test_support::TraceTarget memory() {
  return {"memory", [] { return bq::open_transport("memory://trace-" + bq::uuid_v4()); }};
}

#if BQ_HAVE_SQLITE
bq::test_support::TraceTarget sqlite() {
  return {"sqlite", [] {
            static bq::test_support::TempDir dir("bq-trace-headers");
            bq::sqlite::register_transport();
            return bq::open_transport("sqlite://" + (dir.path() / (bq::uuid_v4() + ".db")).string() +
                                      "?visibility_timeout=1");
          }};
}
#endif

}  // namespace

#if BQ_HAVE_SQLITE
INSTANTIATE_TEST_SUITE_P(Local, TraceHeaders, testing::Values(memory(), sqlite()),
                         bq::test_support::TraceTarget::name_of);
#else
INSTANTIATE_TEST_SUITE_P(Local, TraceHeaders, testing::Values(memory()), bq::test_support::TraceTarget::name_of);
#endif
