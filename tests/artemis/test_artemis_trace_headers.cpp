// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the real
// Artemis broker: traceparent and tracestate ride as AMQP application
// properties through a retry, the dead-letter queue and a redrive.
#include "artemis_test_env.hpp"
#include "trace_headers.hpp"

#include <babelqueue/transport_registry.hpp>

namespace {

babelqueue::test_support::TraceTarget artemis() {
  return {"artemis", [] {
            babelqueue::artemis::register_transport();
            return babelqueue::open_transport(babelqueue::testing::artemis_url());
          }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Artemis, TraceHeaders, testing::Values(artemis()),
                         babelqueue::test_support::TraceTarget::name_of);
