// SPDX-License-Identifier: Apache-2.0
// The runtime semantics suite (tests/support/worker_semantics.hpp) on the
// real Pulsar broker, each test in queues of its own (QueueNamespace).
#include "pulsar_test_env.hpp"
#include "queue_namespace.hpp"
#include "worker_semantics.hpp"

namespace {

babelqueue::test_support::SemanticsTarget pulsar(std::string name, std::string query) {
  return {std::move(name), [query]() -> babelqueue::Result<std::unique_ptr<babelqueue::Transport>> {
            babelqueue::pulsar::register_transport();
            auto opened = babelqueue::open_transport(babelqueue::testing::pulsar_url(query));
            if (!opened) return babelqueue::unexpected(opened.error());
            return std::unique_ptr<babelqueue::Transport>(
                std::make_unique<babelqueue::test_support::QueueNamespace>(std::move(*opened)));
          }};
}

INSTANTIATE_TEST_SUITE_P(Pulsar, WorkerTest,
                         testing::Values(pulsar("queue_1000", ""), pulsar("queue_1", "receiver_queue=1")),
                         babelqueue::test_support::SemanticsTarget::name_of);

}  // namespace
