// SPDX-License-Identifier: Apache-2.0
// Which simdjson kernel the DOM parsers use (docs/adr/0036).
#include "parser_pool.hpp"

#include <babelqueue/json.hpp>

#include <cstdlib>
#include <string_view>

namespace babelqueue {
namespace detail {

namespace {

// The implementation BABELQUEUE_JSON_KERNEL asks for, when this CPU runs it.
const simdjson::implementation* requested_kernel() noexcept {
  const char* name = std::getenv("BABELQUEUE_JSON_KERNEL");  // NOLINT(concurrency-mt-unsafe): read once
  if (name == nullptr || *name == '\0') return nullptr;
  std::string_view wanted(name);
  if (wanted == "portable") wanted = "fallback";
  const simdjson::implementation* kernel = simdjson::get_available_implementations()[wanted];
  if (kernel == nullptr || !kernel->supported_by_runtime_system()) return nullptr;
  return kernel;
}

const simdjson::implementation& choose_kernel() noexcept {
  if (const auto* kernel = requested_kernel()) simdjson::get_active_implementation() = kernel;
  // The first use resolves simdjson's "best supported" placeholder; from here
  // on the parsers allocated by this process run this kernel.
  const simdjson::implementation* active = simdjson::get_active_implementation();
  const simdjson::implementation* best = simdjson::get_available_implementations()[active->name()];
  return best != nullptr ? *best : *active;
}

}  // namespace

const simdjson::implementation& json_implementation() noexcept {
  static const simdjson::implementation& kernel = choose_kernel();
  return kernel;
}

}  // namespace detail

std::string_view json_kernel() noexcept {
  const std::string& name = detail::json_implementation().name();
  return name;
}

}  // namespace babelqueue
