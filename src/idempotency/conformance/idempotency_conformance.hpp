// SPDX-License-Identifier: Apache-2.0
// The `idempotency` section of the conformance suite: the manifest's
// delivery sequences through the idempotency middleware, on every store
// this program has (store_registry.hpp), each with and without the claim;
// and its dedup_key (meta.id verbatim, never trace_id). Internal.
#pragma once

#include "conformance.hpp"

namespace babelqueue::idempotency {

// Local stores (memory://, and sqlite:// on a file in a temporary directory)
// always run; a store on a server (redis://) runs when --url names one.
void add_conformance_section(conformance::Runner& runner);

}  // namespace babelqueue::idempotency
