// SPDX-License-Identifier: Apache-2.0
// The runtime semantics suite (tests/support/worker_semantics.hpp) on the
// Service Bus test server, each test in queues of its own (QueueNamespace).
#include "queue_namespace.hpp"
#include "servicebus_test_env.hpp"
#include "worker_semantics.hpp"

namespace {

babelqueue::test_support::SemanticsTarget servicebus(std::string name, std::string query) {
  return {std::move(name), [query]() -> babelqueue::Result<std::unique_ptr<babelqueue::Transport>> {
            babelqueue::servicebus::register_transport();
            auto opened = babelqueue::open_transport(babelqueue::testing::servicebus_url(query));
            if (!opened) return babelqueue::unexpected(opened.error());
            return std::unique_ptr<babelqueue::Transport>(
                std::make_unique<babelqueue::test_support::QueueNamespace>(std::move(*opened)));
          }};
}

INSTANTIATE_TEST_SUITE_P(ServiceBus, WorkerTest, testing::Values(servicebus("prefetch", "")),
                         babelqueue::test_support::SemanticsTarget::name_of);

}  // namespace
