// SPDX-License-Identifier: Apache-2.0
// The `rabbitmq` section of the conformance suite: the AMQP property and
// header projection, checked on what the transport computes and — with
// --url amqp://... — on what a real broker hands back to a plain client.
#pragma once

#include "conformance.hpp"

namespace babelqueue::rabbitmq {

void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::rabbitmq
