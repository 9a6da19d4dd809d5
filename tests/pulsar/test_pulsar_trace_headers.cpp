// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the real
// Pulsar broker: traceparent and tracestate ride as message properties
// through a retry, the dead-letter topic and a redrive.
#include "pulsar_test_env.hpp"
#include "trace_headers.hpp"

#include <babelqueue/transport_registry.hpp>

namespace {

babelqueue::test_support::TraceTarget pulsar() {
  return {"pulsar", [] {
            babelqueue::pulsar::register_transport();
            return babelqueue::open_transport(babelqueue::testing::pulsar_url());
          }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Pulsar, TraceHeaders, testing::Values(pulsar()),
                         babelqueue::test_support::TraceTarget::name_of);
