// SPDX-License-Identifier: Apache-2.0
// The transport contract (tests/support/transport_contract.hpp) against the
// real SQS-compatible server, opened through open_transport(url). The suite's queue names hold '/', which SQS refuses:
// SqsQueueNameAdapter maps them.
#include "sqs_queue_name_adapter.hpp"
#include "sqs_test_support.hpp"
#include "transport_contract.hpp"

namespace bq = babelqueue;
using bq::test_support::ContractTarget;
using namespace std::chrono_literals;

namespace {

ContractTarget target_for(const std::string& name, const std::string& parameters, bool fifo) {
  ContractTarget target;
  target.name = name;
  target.visibility_timeout = 2s;
  target.slack = 400ms;
  target.exact_stats = false;
  target.open = [parameters, fifo]() -> bq::Result<std::unique_ptr<bq::Transport>> {
    bq::testing::use_dummy_aws_credentials();
    bq::sqs::register_transport();
    auto opened = bq::open_transport(bq::testing::sqs_url(parameters));
    if (!opened) return bq::unexpected(opened.error());
    return std::unique_ptr<bq::Transport>(std::make_unique<bq::testing::SqsQueueNameAdapter>(std::move(*opened), fifo));
  };
  return target;
}

}  // namespace

// Standard queues. FIFO queues are left to test_sqs_integration: the suite's
// ReceiveTakesAtMostMax expects the rest of a queue while its first messages
// are held, which a FIFO queue's single message group rightly withholds.
INSTANTIATE_TEST_SUITE_P(Sqs, TransportContract,
                         ::testing::Values(target_for("standard", "create=1&visibility_timeout=2", false)),
                         ContractTarget::name_of);
