// SPDX-License-Identifier: Apache-2.0
// The trace-header suite (tests/support/trace_headers.hpp) on the
// SQS-compatible server: traceparent and tracestate ride as String message
// attributes through a retry, the dead-letter queue and a redrive.
#include "sqs_test_support.hpp"
#include "trace_headers.hpp"

#include <babelqueue/transport_registry.hpp>

namespace {

babelqueue::test_support::TraceTarget sqs() {
  return {"standard", [] {
            babelqueue::testing::use_dummy_aws_credentials();
            babelqueue::sqs::register_transport();
            return babelqueue::open_transport(babelqueue::testing::sqs_url("create=1&visibility_timeout=2"));
          }};
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Sqs, TraceHeaders, testing::Values(sqs()), babelqueue::test_support::TraceTarget::name_of);
