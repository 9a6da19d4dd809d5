// SPDX-License-Identifier: Apache-2.0
// The transport contract against the real broker: a classic queue over TCP,
// a quorum queue (native delivery count), and TLS with verification on.
#include "rabbitmq_test_env.hpp"
#include "transport_contract.hpp"

#include <babelqueue/rabbitmq/transport.hpp>

namespace {

using babelqueue::test_support::ContractTarget;
namespace rmq = babelqueue::rabbitmq::testing;

// The URL is looked up when a test opens the transport, not at static
// initialisation (test discovery runs without the broker).
ContractTarget target(std::string name, std::function<std::string()> url) {
  babelqueue::rabbitmq::register_transport();
  ContractTarget t;
  t.name = std::move(name);
  t.open = [url = std::move(url)] { return babelqueue::open_transport(url()); };
  t.slack = std::chrono::milliseconds(400);
  return t;
}

INSTANTIATE_TEST_SUITE_P(RabbitMQ, TransportContract,
                         testing::Values(target("classic", [] { return rmq::url(); }),
                                         target("quorum", [] { return rmq::url() + "?queue_type=quorum"; }),
                                         target("tls", [] { return rmq::tls_url(); })),
                         ContractTarget::name_of);

}  // namespace
