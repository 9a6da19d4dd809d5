// SPDX-License-Identifier: Apache-2.0
// Internal: Envelope::decode and parse_json without their DOM fast path, the
// On-Demand pass alone. Each must agree with its fast path on every input;
// the differential fuzzer (fuzz/decode_fuzz.cpp) checks that they do.
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>

#include <string_view>

namespace babelqueue::detail {

Result<Envelope, DecodeError> decode_on_demand(std::string_view body, const DecodeOptions& options);

Result<Value> parse_json_on_demand(std::string_view text, const JsonLimits& limits);

}  // namespace babelqueue::detail
