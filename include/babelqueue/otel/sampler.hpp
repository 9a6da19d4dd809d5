// SPDX-License-Identifier: Apache-2.0
// Sampler: which new spans are recorded, OpenTelemetry's built-in samplers
// with their names from OTEL_TRACES_SAMPLER. A span that is not sampled
// costs no allocation and is never exported, but its context still travels:
// a traceparent with flags 00, so the next hop knows.
#pragma once

#include <babelqueue/otel/trace_context.hpp>

#include <optional>
#include <string_view>

namespace babelqueue::otel {

/// Decides whether a new span is sampled (recorded and exported), as one of
/// OpenTelemetry's built-in samplers. A small value, copied freely and never
/// changed once made, so one is safe to use from every thread.
class Sampler {
 public:
  /// parentbased_always_on: OpenTelemetry's default.
  Sampler() = default;

  /// Every span sampled, or none, whatever its parent says.
  ///@{
  static Sampler always_on() noexcept { return Sampler(Root::always_on, 1.0, false); }
  static Sampler always_off() noexcept { return Sampler(Root::always_off, 0.0, false); }
  ///@}
  /// A trace id is sampled when its last 8 bytes, as a number, are below
  /// ratio * 2^64 (OpenTelemetry's TraceIdRatioBased): every SDK keeps the
  /// same traces at the same ratio. ratio is clamped to 0..1.
  static Sampler trace_id_ratio(double ratio) noexcept;
  /// A span with a parent follows the parent's sampled flag; a root span is
  /// decided by root.
  static Sampler parent_based(Sampler root) noexcept;

  /// OTEL_TRACES_SAMPLER's names (always_on, always_off, traceidratio,
  /// parentbased_always_on, parentbased_always_off, parentbased_traceidratio)
  /// with OTEL_TRACES_SAMPLER_ARG as the ratio (1.0 when empty); empty for an
  /// unknown name or a ratio that is not a number from 0 to 1.
  static std::optional<Sampler> from_name(std::string_view name, std::string_view arg = {});

  /// Whether a new span in trace trace_id is sampled. parent is its parent's
  /// context, null (or invalid) for a root span; a parent-based sampler
  /// follows a valid parent's sampled flag, else its root rule decides.
  bool should_sample(const SpanContext* parent, const TraceId& trace_id) const noexcept;

 private:
  enum class Root { always_on, always_off, ratio };
  Sampler(Root root, double ratio, bool parent_based) noexcept
      : root_(root), ratio_(ratio), parent_based_(parent_based) {}
  Root root_ = Root::always_on;
  double ratio_ = 1.0;
  bool parent_based_ = true;
};

}  // namespace babelqueue::otel
