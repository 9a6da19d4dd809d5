// SPDX-License-Identifier: Apache-2.0
// Reads 64-bit IEEE-754 bit patterns (16 hex digits, one per line) and prints
// each double as the canonical encoder writes it, one per line. The test
// doubles_match_python.py compares the output with Python's json.dumps.
#include <babelqueue/json.hpp>

#include <bit>
#include <cstdint>
#include <iostream>
#include <string>

int main() {
  std::string line;
  std::string out;
  while (std::getline(std::cin, line)) {
    const auto bits = static_cast<std::uint64_t>(std::stoull(line, nullptr, 16));
    out.clear();
    if (!babelqueue::write_json_double(out, std::bit_cast<double>(bits))) out = "error";
    std::cout << out << '\n';
  }
  return 0;
}
