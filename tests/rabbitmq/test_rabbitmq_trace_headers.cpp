// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the real
// RabbitMQ broker: traceparent and tracestate ride in the AMQP header table
// through a retry, the dead-letter copy and a redrive, on a classic and a
// quorum queue.
#include "rabbitmq_test_env.hpp"
#include "trace_headers.hpp"

#include <babelqueue/rabbitmq/transport.hpp>
#include <babelqueue/transport_registry.hpp>

namespace {

namespace rmq = babelqueue::rabbitmq::testing;

babelqueue::test_support::TraceTarget rabbitmq(std::string name, std::string query) {
  return {std::move(name), [query] {
            babelqueue::rabbitmq::register_transport();
            return babelqueue::open_transport(rmq::url() + query);
          }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(RabbitMQ, TraceHeaders,
                         testing::Values(rabbitmq("classic", ""), rabbitmq("quorum", "?queue_type=quorum")),
                         babelqueue::test_support::TraceTarget::name_of);
