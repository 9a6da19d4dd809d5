// SPDX-License-Identifier: Apache-2.0
// Internal: the fast path of Envelope::decode (envelope_decode_indexes.cpp).
#pragma once

#include <babelqueue/envelope.hpp>

namespace babelqueue::detail {

// Fills env's layout from its body (already copied, with simdjson's padding)
// through stage 1 of simdjson's DOM parser and one validating walk over the
// token positions it finds. False when the body is not a valid envelope
// object within the limits, has a duplicate frame or meta key, or a frame or
// meta key spelled with escapes: env's layout is then half filled and the
// caller decodes the body again with the On-Demand pass, which says why.
// on_warning is called only on success.
bool decode_on_indexes(Envelope& env, const DecodeOptions& options);

}  // namespace babelqueue::detail
