// SPDX-License-Identifier: Apache-2.0
// The transport contract (tests/support/transport_contract.hpp) against the
// real Artemis broker, opened through open_transport(url). Artemis has no
// visibility timeout (a held message stays held until settled or its
// connection drops): the suite's timeout tests skip themselves.
#include "artemis_test_env.hpp"
#include "transport_contract.hpp"

namespace bq = babelqueue;
using bq::test_support::ContractTarget;

namespace {

ContractTarget target(std::string name, std::string query) {
  bq::artemis::register_transport();
  return ContractTarget::from_url(std::move(name), bq::testing::artemis_url(query)).with_slack(400ms);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Artemis, TransportContract,
                         ::testing::Values(target("credit_window", ""), target("credit_1", "credit=1"),
                                           target("connections_3", "connections=3")),
                         ContractTarget::name_of);
