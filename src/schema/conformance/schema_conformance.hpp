// SPDX-License-Identifier: Apache-2.0
// The `payload_schema` section of the conformance suite: each case's data
// against the block's schema, through babelqueue::schema. Internal.
#pragma once

#include "conformance.hpp"

namespace babelqueue::schema {

void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::schema
