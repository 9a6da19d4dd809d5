// SPDX-License-Identifier: Apache-2.0
#include "pending_context.hpp"

#include <babelqueue/otel/tracer.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <utility>

namespace babelqueue::otel {

namespace {

std::uint64_t now_unix_nano() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Ids need to be unique, not secret: a generator per thread, seeded once
// from the system's entropy, costs a few nanoseconds and no lock.
std::mt19937_64& id_generator() {
  thread_local std::mt19937_64 generator = [] {
    std::random_device entropy;
    std::seed_seq seed{entropy(), entropy(), entropy(), entropy()};
    return std::mt19937_64(seed);
  }();
  return generator;
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& bytes) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t word = id_generator()();
      std::memcpy(bytes.data() + i, &word, std::min<std::size_t>(8, N - i));
    }
  } while (std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; }));
}

// The innermost scope's context: a ContextScope's, or else (null here) the
// innermost PendingScope's, made when first asked for.
thread_local const SpanContext* current_context = nullptr;
thread_local detail::PendingContext* pending_context = nullptr;

}  // namespace

// ---- Span ----------------------------------------------------------------------------

Span::Span(Span&& other) noexcept
    : context_(std::move(other.context_)), data_(std::move(other.data_)), sink_(std::move(other.sink_)) {}

Span& Span::operator=(Span&& other) noexcept {
  if (this != &other) {
    end();
    context_ = std::move(other.context_);
    data_ = std::move(other.data_);
    sink_ = std::move(other.sink_);
  }
  return *this;
}

Span::~Span() { end(); }

void Span::set_name(std::string name) {
  if (data_) data_->name = std::move(name);
}

void Span::set_attribute(std::string key, AttributeValue value) {
  if (!data_) return;
  for (Attribute& a : data_->attributes) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  data_->attributes.push_back(Attribute{std::move(key), std::move(value)});
}

void Span::set_error(std::string_view message, std::string_view exception_type) {
  if (!data_) return;
  data_->status = StatusCode::error;
  data_->status_message = std::string(message);
  SpanEvent event{"exception", now_unix_nano(), {}};
  if (!exception_type.empty()) event.attributes.push_back({"exception.type", std::string(exception_type)});
  event.attributes.push_back({"exception.message", std::string(message)});
  data_->events.push_back(std::move(event));
}

void Span::end() noexcept {
  if (data_) end(now_unix_nano());  // no clock read for a span that records nothing
}

void Span::end(std::uint64_t end_unix_nano) noexcept {
  if (!data_) return;
  data_->end_unix_nano = end_unix_nano;
  std::unique_ptr<SpanData> data = std::move(data_);
  if (sink_) sink_->on_end(std::move(*data));
}

// ---- Tracer ----------------------------------------------------------------------------

Tracer::Tracer(TracerOptions options) : options_(std::move(options)) {}

Span Tracer::start_span(SpanKind kind, const SpanStart& start) const {
  Span span;
  const SpanContext* parent = start.parent && start.parent->valid() ? &*start.parent : nullptr;
  if (parent != nullptr) {
    span.context_.trace_id = parent->trace_id;
    span.context_.trace_state = parent->trace_state;
  } else if (start.trace_id && start.trace_id->valid()) {
    span.context_.trace_id = *start.trace_id;
  } else {
    fill_random(span.context_.trace_id.bytes);
  }
  fill_random(span.context_.span_id.bytes);
  span.context_.sampled = options_.sampler.should_sample(parent, span.context_.trace_id);
  if (!span.context_.sampled || !options_.sink) return span;
  span.data_ = std::make_unique<SpanData>();
  span.data_->context = span.context_;
  if (parent != nullptr) {
    span.data_->parent_span_id = parent->span_id;
    span.data_->parent_remote = parent->remote;
  }
  span.data_->kind = kind;
  span.data_->start_unix_nano = start.start_unix_nano != 0 ? start.start_unix_nano : now_unix_nano();
  span.sink_ = options_.sink;
  return span;
}

bool Tracer::records(const SpanContext* parent, const TraceId& trace_id) const noexcept {
  return options_.sink != nullptr && options_.sampler.should_sample(parent, trace_id);
}

Span Tracer::start_span(std::string name, SpanKind kind, const SpanStart& start) const {
  Span span = start_span(kind, start);
  span.set_name(std::move(name));
  return span;
}

// ---- the current span context ----------------------------------------------------------

std::optional<SpanContext> current_span_context() {
  if (current_context != nullptr) return *current_context;
  if (pending_context == nullptr) return std::nullopt;
  if (!pending_context->made) pending_context->made = pending_context->make(pending_context->arg);
  return *pending_context->made;
}

ContextScope::ContextScope(const SpanContext& context) : context_(context), previous_(current_context) {
  current_context = &context_;
}

ContextScope::~ContextScope() { current_context = previous_; }

detail::PendingScope::PendingScope(PendingContext& pending) noexcept
    : previous_context_(current_context), previous_pending_(pending_context) {
  current_context = nullptr;
  pending_context = &pending;
}

detail::PendingScope::~PendingScope() {
  current_context = previous_context_;
  pending_context = previous_pending_;
}

}  // namespace babelqueue::otel
