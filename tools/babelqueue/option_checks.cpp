// SPDX-License-Identifier: Apache-2.0
#include "option_checks.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <system_error>

namespace babelqueue::cli {

namespace {

// The text as a finite decimal number, or false. from_chars: no locale, no
// leading '+', no surrounding blanks, and all of the text must be read.
bool parse_decimal(const std::string& text, double& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value, std::chars_format::general);
  return error == std::errc() && stop == end && std::isfinite(value);
}

// 0.5 as "0.5", 1000 as "1000": no trailing zeros.
std::string shown(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

CLI::Validator whole_number(std::uint64_t min, std::uint64_t max) {
  std::string rule = min == 0 ? "a whole number (0 or more)" : "a whole number of at least " + std::to_string(min);
  if (max != std::numeric_limits<std::uint64_t>::max()) {
    rule = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  }
  return CLI::Validator(
      [min, max, rule](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || stop != end || error == std::errc::invalid_argument) {
          return "must be " + rule + ", got '" + text + "'";
        }
        if (error == std::errc::result_out_of_range) return "'" + text + "' is too large";
        if (value < min || value > max) return "must be " + rule + ", got '" + text + "'";
        return {};
      },
      "");
}

CLI::Validator seconds_value(bool positive) {
  return CLI::Validator(
      [positive](std::string& text) -> std::string {
        double value = 0;
        if (!parse_decimal(text, value)) return "not a number: '" + text + "' (seconds, e.g. 1 or 0.5)";
        if (value < 0 || (positive && value == 0)) {
          return std::string("must be ") + (positive ? "more than 0" : "0 or more") + " seconds, got '" + text + "'";
        }
        return {};
      },
      "");
}

CLI::Validator number_between(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        double value = 0;
        if (!parse_decimal(text, value)) return "not a number: '" + text + "'";
        if (value < min || value > max) {
          return "must be from " + shown(min) + " to " + shown(max) + ", got '" + text + "'";
        }
        return {};
      },
      "");
}

}  // namespace babelqueue::cli
