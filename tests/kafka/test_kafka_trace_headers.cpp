// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the real Kafka
// broker: traceparent and tracestate ride as record headers through a
// retry, the dead-letter topic and a redrive.
#include "broker_env.hpp"
#include "trace_headers.hpp"

#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/transport_registry.hpp>

namespace {

babelqueue::test_support::TraceTarget kafka() {
  babelqueue::test_support::TraceTarget t;
  t.name = "kafka";
  t.open = [] {
    babelqueue::kafka::register_transport();
    return babelqueue::open_transport(babelqueue::testing::broker_url("kafka") + "?group=trace-" +
                                      babelqueue::uuid_v4().substr(0, 8));
  };
  t.patience = std::chrono::seconds(40);  // a consumer joins its group on its first receive
  return t;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Kafka, TraceHeaders, testing::Values(kafka()), babelqueue::test_support::TraceTarget::name_of);
