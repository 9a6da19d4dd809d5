// SPDX-License-Identifier: Apache-2.0
// The transport contract (tests/support/transport_contract.hpp) against the
// Service Bus test server, opened through open_transport(url) with the
// credentials in AZURE_SERVICEBUS_CONNECTION_STRING. The lock duration is
// the visibility timeout: the suite waits for locks to expire.
#include "servicebus_test_env.hpp"
#include "transport_contract.hpp"

namespace bq = babelqueue;
using bq::test_support::ContractTarget;

namespace {

ContractTarget target(std::string name, std::string query) {
  bq::servicebus::register_transport();
  const auto& server = bq::testing::servicebus_server();
  return ContractTarget::from_url(std::move(name), bq::testing::servicebus_url(query))
      .with_visibility_timeout(server.lock_duration)
      .with_slack(400ms);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(ServiceBus, TransportContract,
                         ::testing::Values(target("prefetch", ""), target("prefetch_1", "prefetch=1")),
                         ContractTarget::name_of);
