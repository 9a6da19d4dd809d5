// SPDX-License-Identifier: Apache-2.0
// The conformance suite's `artemis` block for babelqueue::artemis: the
// AMQP projection (computed, and read back from a live broker with
// --url artemis://...) and the attempts reconciliation cases.
#pragma once

#include <conformance.hpp>

namespace babelqueue::artemis {

void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::artemis
