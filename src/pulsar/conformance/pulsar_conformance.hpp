// SPDX-License-Identifier: Apache-2.0
// The conformance suite's `pulsar` block for babelqueue::pulsar: the property
// projection (computed, and read back from a live broker with
// --url pulsar://...) and the attempts reconciliation cases.
#pragma once

#include <conformance.hpp>

namespace babelqueue::pulsar {

void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::pulsar
