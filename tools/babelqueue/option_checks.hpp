// SPDX-License-Identifier: Apache-2.0
// Checks of option values that say in words what is wrong. CLI11's own
// (PositiveNumber, NonNegativeNumber) accept "-1" for unsigned options,
// answer "not in range" for text that is not a number and print the range
// as 0 to 1.8e308 written out in full; these run on the text before it is
// converted, so a usage error names the value and the rule it broke.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>

namespace babelqueue::cli {

// A whole number (digits only) from min to max: "--count: must be a whole
// number of at least 1, got '0'".
CLI::Validator whole_number(std::uint64_t min, std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

// A number of seconds, fractions allowed: "--wait: not a number: 'abc'";
// 0 is allowed unless positive.
CLI::Validator seconds_value(bool positive = false);

// A decimal number from min to max inclusive.
CLI::Validator number_between(double min, double max);

}  // namespace babelqueue::cli
