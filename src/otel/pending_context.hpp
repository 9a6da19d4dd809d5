// SPDX-License-Identifier: Apache-2.0
// A current span context made only if something asks for it: the context of
// a consumer span that records nothing. Such a span shows its ids nowhere
// unless the handler publishes (its producer span is then a child of it) or
// reads current_span_context(); reading the traceparent, deriving the trace
// id and drawing a random span id for every message would be most of what
// unsampled tracing costs a consume loop (docs/adr/0045).
//
// A PendingScope makes it current on its thread like a ContextScope (scopes
// of either kind nest); current_span_context() then calls make once and
// keeps what it made.
#pragma once

#include <babelqueue/otel/trace_context.hpp>

#include <optional>

namespace babelqueue::otel::detail {

struct PendingContext {
  SpanContext (*make)(const void* arg);
  const void* arg;
  std::optional<SpanContext> made;
};

class PendingScope {
 public:
  explicit PendingScope(PendingContext& pending) noexcept;
  ~PendingScope();
  PendingScope(const PendingScope&) = delete;
  PendingScope& operator=(const PendingScope&) = delete;

 private:
  const SpanContext* previous_context_;
  PendingContext* previous_pending_;
};

}  // namespace babelqueue::otel::detail
