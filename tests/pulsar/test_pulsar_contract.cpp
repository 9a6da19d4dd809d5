// SPDX-License-Identifier: Apache-2.0
// The transport contract (tests/support/transport_contract.hpp) against the
// real Pulsar broker, opened through open_transport(url). Pulsar has no
// visibility timeout (a held message stays held until settled or its
// connection drops): the suite's timeout tests skip themselves.
#include "pulsar_test_env.hpp"
#include "transport_contract.hpp"

namespace bq = babelqueue;
using bq::test_support::ContractTarget;

namespace {

ContractTarget target(std::string name, std::string query) {
  bq::pulsar::register_transport();
  return ContractTarget::from_url(std::move(name), bq::testing::pulsar_url(query)).with_slack(400ms);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Pulsar, TransportContract,
                         ::testing::Values(target("queue_1000", ""), target("queue_1", "receiver_queue=1")),
                         ContractTarget::name_of);
