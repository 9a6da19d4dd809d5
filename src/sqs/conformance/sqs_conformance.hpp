// SPDX-License-Identifier: Apache-2.0
// The conformance suite's `sqs` block for babelqueue::sqs: the projected
// MessageAttributes (computed, and read back from a live server with
// --url sqs://...) and the attempts reconciliation cases.
#pragma once

#include <conformance.hpp>

namespace babelqueue::sqs {

void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::sqs
