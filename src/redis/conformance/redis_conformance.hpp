// SPDX-License-Identifier: Apache-2.0
// The `redis` section of the conformance suite: payload identity against a
// live Redis (the runner's --url redis://... or rediss://...).
#pragma once

#include <conformance.hpp>

namespace babelqueue::redis {

// Registers the manifest's `redis` block with the runner.
void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::redis
