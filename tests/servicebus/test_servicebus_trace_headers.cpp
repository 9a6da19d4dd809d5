// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the Service Bus
// test server: traceparent and tracestate ride as AMQP application
// properties through a retry, the dead-letter queue and a redrive.
#include "servicebus_test_env.hpp"
#include "trace_headers.hpp"

#include <babelqueue/transport_registry.hpp>

namespace {

babelqueue::test_support::TraceTarget servicebus() {
  return {"servicebus", [] {
            babelqueue::servicebus::register_transport();
            return babelqueue::open_transport(babelqueue::testing::servicebus_url());
          }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(ServiceBus, TraceHeaders, testing::Values(servicebus()),
                         babelqueue::test_support::TraceTarget::name_of);
