// SPDX-License-Identifier: Apache-2.0
#include "pending_context.hpp"

#include <babelqueue/dead_letter.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/handler_outcome.hpp>
#include <babelqueue/message.hpp>
#include <babelqueue/otel/middleware.hpp>
#include <babelqueue/release_delivery.hpp>

#include <string>
#include <utility>

namespace babelqueue::otel {

namespace {

constexpr std::string_view kSystem = "babelqueue";

std::string span_name(std::string_view operation, std::string_view urn) {
  std::string name;
  name.reserve(operation.size() + 1 + urn.size());
  name.append(operation).append(1, ' ').append(urn);
  return name;
}

// A header's value, if present and not blank.
std::string_view header_of(const Headers& headers, std::string_view name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string_view() : std::string_view(it->second);
}

// The synthetic parent of a delivery without a traceparent. Its span id (a
// SHA-256) is computed only for a span that records: a span that does not
// shows its parent's span id nowhere (its context, and so the traceparent
// and the children it propagates to, carry the trace id and its own span
// id). The sampler reads only the parent's validity and sampled flag, which
// the stand-in shares with the synthetic id (never all zero), so it decides
// as it would with the real one.
SpanContext synthetic_parent_when_recorded(std::string_view trace_id, const Tracer& tracer) {
  SpanContext parent;
  parent.trace_id = trace_id_of(trace_id);
  parent.sampled = true;
  parent.remote = true;
  parent.span_id.bytes.back() = 1;  // the stand-in
  if (tracer.records(&parent, parent.trace_id)) parent.span_id = synthetic_span_id_of(trace_id);
  return parent;
}

// The parent a consumer span of message starts from: its traceparent, else
// the synthetic parent (whose span id only a recording span computes).
SpanContext consumer_parent(const Message& message, const Tracer& tracer) {
  if (auto parent = parse_traceparent(message.header(kTraceparentHeader), message.header(kTracestateHeader))) {
    return *std::move(parent);
  }
  return synthetic_parent_when_recorded(message.trace_id(), tracer);
}

// True when the tracer records no span whatever its parent: a sampler that
// ignores the parent and samples no trace id (always_off, a ratio of 0), or
// no sink. The parent need not be read then. The zero trace id is the one a
// ratio sampler takes first (it samples ids whose low half is under a bound).
// A tracer's sampler and sink are fixed once it is made: asked once, when
// the middleware is.
bool records_nothing(const Tracer& tracer) noexcept {
  const TraceId zero{};
  SpanContext stand_in;
  stand_in.trace_id.bytes.back() = 1;
  stand_in.span_id.bytes.back() = 1;
  stand_in.sampled = true;
  if (tracer.records(&stand_in, zero)) return false;
  stand_in.sampled = false;
  if (tracer.records(&stand_in, zero)) return false;
  return !tracer.records(nullptr, zero);
}

// A consumer span that records nothing: its context, made only if the
// handler asks for it (detail::PendingContext), as start_span would have.
struct UnrecordedConsumer {
  const Tracer* tracer;
  const Message* message;
  std::optional<SpanContext> parent;  // empty: not read yet

  static SpanContext make(const void* arg) {
    const auto& self = *static_cast<const UnrecordedConsumer*>(arg);
    SpanStart start;
    start.parent = self.parent ? *self.parent : consumer_parent(*self.message, *self.tracer);
    return self.tracer->start_span(SpanKind::consumer, start).context();
  }
};

}  // namespace

Middleware::Middleware(std::shared_ptr<const Tracer> tracer)
    : tracer_(std::move(tracer)), records_nothing_(tracer_ && records_nothing(*tracer_)) {
  if (!tracer_) throw Error(Errc::invalid_argument, "the tracing middleware needs a tracer");
}

Result<void> Middleware::handle(const Message& message, const MessageHandler& next) {
  // A span that will not record costs nothing up front: its parent is read,
  // and its own id drawn, only if the handler asks for its context. It has
  // no status to set, so the handler's result and exceptions pass as they are.
  if (records_nothing_) {
    UnrecordedConsumer unrecorded{tracer_.get(), &message, std::nullopt};
    detail::PendingContext pending{&UnrecordedConsumer::make, &unrecorded, std::nullopt};
    const detail::PendingScope current(pending);
    return next(message);
  }
  SpanStart start;
  start.parent = consumer_parent(message, *tracer_);
  if (!tracer_->records(&*start.parent, start.parent->trace_id)) {
    UnrecordedConsumer unrecorded{tracer_.get(), &message, std::move(start.parent)};
    detail::PendingContext pending{&UnrecordedConsumer::make, &unrecorded, std::nullopt};
    const detail::PendingScope current(pending);
    return next(message);
  }
  Span span = tracer_->start_span(SpanKind::consumer, start);
  if (span.recording()) {
    const Envelope& env = message.envelope();
    span.set_name(span_name("process", message.urn()));
    span.set_attribute("messaging.system", std::string(kSystem));
    span.set_attribute("messaging.operation", std::string("process"));
    span.set_attribute("messaging.destination.name", std::string(env.queue()));
    span.set_attribute("messaging.message.id", std::string(env.id()));
    span.set_attribute("messaging.message.conversation_id", std::string(env.trace_id()));
    span.set_attribute("messaging.babelqueue.attempts", message.attempts());
  }
  const ContextScope current(span.context());
  try {
    auto result = next(message);
    if (!result) span.set_error(result.error().message(), to_string(result.error().code()));
    return result;
  } catch (const ReleaseDelivery&) {
    throw;  // handed back unhandled: not a failure
  } catch (const OutcomeException& decided) {
    const auto kind = decided.outcome().kind();
    if (kind == HandlerOutcome::Kind::retry || kind == HandlerOutcome::Kind::dead_letter) {
      span.set_error(decided.outcome().reason());
    }
    throw;
  } catch (const std::exception& e) {
    span.set_error(e.what(), exception_type_name(e));
    throw;
  } catch (...) {
    span.set_error("a handler threw a non-standard exception", current_exception_type_name());
    throw;
  }
}

Result<void> Middleware::publish(PublishRequest& request, const PublishStep& next) {
  SpanStart start;
  start.parent = current_span_context();
  if (!start.parent) {
    start.parent = parse_traceparent(header_of(request.options.headers, kTraceparentHeader),
                                     header_of(request.options.headers, kTracestateHeader));
  }
  if (!start.parent) start.trace_id = trace_id_of(request.envelope.trace_id());
  Span span = tracer_->start_span(SpanKind::producer, start);
  if (start.parent) {
    // The family's publish: the message's trace_id names the span's trace,
    // so a consumer without the header still finds it.
    std::string stamped = uuid_of(span.context().trace_id);
    if (request.envelope.trace_id() != stamped) {
      auto moved = request.envelope.with_trace_id(stamped);
      if (!moved) return unexpected(moved.error());
      request.envelope = std::move(*moved);
    }
  }
  const std::string_view urn = request.envelope.urn();
  if (span.recording()) {
    span.set_name(span_name("publish", urn));
    span.set_attribute("messaging.system", std::string(kSystem));
    span.set_attribute("messaging.operation", std::string("publish"));
    span.set_attribute("messaging.destination.name", std::string(urn));
  }
  request.options.headers[std::string(kTraceparentHeader)] = format_traceparent(span.context());
  if (span.context().trace_state.empty()) {
    request.options.headers.erase(std::string(kTracestateHeader));
  } else {
    request.options.headers[std::string(kTracestateHeader)] = span.context().trace_state;
  }
  auto sent = next(request);
  if (!sent) {
    span.set_error(sent.error().message(), to_string(sent.error().code()));
  } else if (span.recording()) {
    span.set_attribute("messaging.message.id", std::string(request.envelope.id()));
  }
  return sent;
}

}  // namespace babelqueue::otel
