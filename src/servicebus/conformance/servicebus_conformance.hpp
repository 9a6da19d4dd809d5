// SPDX-License-Identifier: Apache-2.0
// The conformance suite's `asb` block for babelqueue::servicebus: the
// projection onto native Service Bus fields (computed, and read back from a
// live namespace with --url sb://..., the credentials in
// AZURE_SERVICEBUS_CONNECTION_STRING) and the attempts reconciliation cases.
#pragma once

#include <conformance.hpp>

namespace babelqueue::servicebus {

void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::servicebus
