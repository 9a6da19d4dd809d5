// SPDX-License-Identifier: Apache-2.0
// The transports and conformance sections built into this build of the
// project's programs (see CMakeLists.txt next to this file).
#pragma once

#include "conformance.hpp"

namespace babelqueue::builtin {

// Registers every transport library this build contains with the URL
// registry (memory:// is always there), and their idempotency stores with
// idempotency::open_store(). Safe to call more than once.
void register_transports();

// Adds the core sections, every transport's binding section and the
// optional components' sections (idempotency, payload_schema) to a runner.
void add_conformance_sections(conformance::Runner& runner);

}  // namespace babelqueue::builtin
