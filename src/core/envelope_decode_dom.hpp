// SPDX-License-Identifier: Apache-2.0
// Internal: the fast path of Envelope::decode (envelope_decode_dom.cpp).
#pragma once

#include <babelqueue/envelope.hpp>

namespace babelqueue::detail {

// Fills env's layout from its body (already copied, with simdjson's padding)
// through simdjson's DOM parser. False when the body is not a valid envelope
// object within the limits, or has a duplicate frame or meta key: env's
// layout is then half filled and the caller decodes the body again with the
// On-Demand pass, which says why. on_warning is called only on success.
bool decode_on_tape(Envelope& env, const DecodeOptions& options);

}  // namespace babelqueue::detail
