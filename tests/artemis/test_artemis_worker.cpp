// SPDX-License-Identifier: Apache-2.0
// The runtime semantics suite (tests/support/worker_semantics.hpp) on the
// real Artemis broker, each test in queues of its own (QueueNamespace).
#include "artemis_test_env.hpp"
#include "queue_namespace.hpp"
#include "worker_semantics.hpp"

namespace {

babelqueue::test_support::SemanticsTarget artemis(std::string name, std::string query) {
  return {std::move(name), [query]() -> babelqueue::Result<std::unique_ptr<babelqueue::Transport>> {
            babelqueue::artemis::register_transport();
            auto opened = babelqueue::open_transport(babelqueue::testing::artemis_url(query));
            if (!opened) return babelqueue::unexpected(opened.error());
            return std::unique_ptr<babelqueue::Transport>(
                std::make_unique<babelqueue::test_support::QueueNamespace>(std::move(*opened)));
          }};
}

INSTANTIATE_TEST_SUITE_P(Artemis, WorkerTest,
                         testing::Values(artemis("credit_window", ""), artemis("credit_1", "credit=1")),
                         babelqueue::test_support::SemanticsTarget::name_of);

}  // namespace
