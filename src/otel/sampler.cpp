// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/otel/sampler.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace babelqueue::otel {

Sampler Sampler::trace_id_ratio(double ratio) noexcept {
  if (!(ratio >= 0.0)) ratio = 0.0;  // NaN too
  return Sampler(Root::ratio, std::min(ratio, 1.0), false);
}

Sampler Sampler::parent_based(Sampler root) noexcept {
  root.parent_based_ = true;
  return root;
}

std::optional<Sampler> Sampler::from_name(std::string_view name, std::string_view arg) {
  double ratio = 1.0;
  if (!arg.empty()) {
    auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), ratio);
    if (ec != std::errc() || end != arg.data() + arg.size() || !(ratio >= 0.0 && ratio <= 1.0)) return std::nullopt;
  }
  if (name == "always_on") return always_on();
  if (name == "always_off") return always_off();
  if (name == "traceidratio") return trace_id_ratio(ratio);
  if (name == "parentbased_always_on") return parent_based(always_on());
  if (name == "parentbased_always_off") return parent_based(always_off());
  if (name == "parentbased_traceidratio") return parent_based(trace_id_ratio(ratio));
  return std::nullopt;
}

bool Sampler::should_sample(const SpanContext* parent, const TraceId& trace_id) const noexcept {
  if (parent_based_ && parent != nullptr && parent->valid()) return parent->sampled;
  switch (root_) {
    case Root::always_on: return true;
    case Root::always_off: return false;
    case Root::ratio: {
      if (ratio_ >= 1.0) return true;
      std::uint64_t low = 0;
      for (std::size_t i = 8; i < 16; ++i) low = (low << 8) | trace_id.bytes[i];
      // ratio * 2^64, as OpenTelemetry's TraceIdRatioBased bound.
      const auto bound = static_cast<std::uint64_t>(std::ldexp(ratio_, 64));
      return low < bound;
    }
  }
  return false;
}

}  // namespace babelqueue::otel
