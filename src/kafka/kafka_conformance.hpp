// SPDX-License-Identifier: Apache-2.0
// The conformance suite's `kafka` block for babelqueue::kafka: the bq- header
// projection and the bq-attempts reconciliation, checked offline and, given a
// kafka:// URL, against the broker (records read back with a plain librdkafka
// consumer, and records of another producer received through the transport).
#pragma once

#include <conformance.hpp>

namespace babelqueue::kafka {

void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::kafka
