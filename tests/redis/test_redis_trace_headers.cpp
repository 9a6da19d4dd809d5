// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the real Redis
// server: traceparent and tracestate ride in the __bq_frame through a retry,
// the dead-letter copy and a redrive.
#include "redis_test_support.hpp"
#include "trace_headers.hpp"

#include <babelqueue/transport_registry.hpp>

namespace {

babelqueue::test_support::TraceTarget redis() {
  return {"plain", [] {
            babelqueue::redis::register_transport();
            return babelqueue::open_transport(babelqueue::redis_test::plain_url());
          }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Redis, TraceHeaders, testing::Values(redis()), babelqueue::test_support::TraceTarget::name_of);
