// SPDX-License-Identifier: Apache-2.0
// The tracing middleware (library babelqueue::otel): the family's
// OpenTelemetry spans (SPEC ADR-0025, ADR-0028) on a Worker.
//
//   auto tracer = std::make_shared<babelqueue::otel::Tracer>(options);
//   worker.use(std::make_shared<babelqueue::otel::Middleware>(tracer));
//
// Consume: a CONSUMER span "process <urn>" around the handler (and every
// middleware added after this one), current on the handler's thread while
// it runs. Its parent is the delivery's traceparent header when that parses,
// else the trace_id's synthetic parent (trace_context.hpp). Attributes, as
// the family sets them: messaging.system "babelqueue", messaging.operation
// "process", messaging.destination.name (meta.queue),
// messaging.message.id (meta.id), messaging.message.conversation_id
// (trace_id), messaging.babelqueue.attempts. A handler that fails (an error,
// an exception, a retry or dead-letter outcome) sets status error with the
// reason; the failure goes on to the Worker unchanged. A message handed back
// (ReleaseDelivery) or acked by an outcome is not an error.
//
// Publish (Worker::publish): a PRODUCER span "publish <urn>" whose parent is
// the thread's current span context (a handler's consumer span), else a
// valid traceparent the caller put in PublishParams::headers, else none: a
// root span in the trace the envelope's trace_id maps to. With a parent, the
// envelope's trace_id is stamped with the parent's trace (as a UUID) when it
// differs, as the family's publish does. traceparent (and tracestate) go
// into the publish's headers, replacing the caller's. Attributes:
// messaging.system, messaging.operation "publish",
// messaging.destination.name (the URN, as the family has it) and, once
// sent, messaging.message.id.
//
// Order: add it first, so that its span covers the other middleware
// (docs/adr/0018): consume span -> metrics -> idempotency -> handler.
//
// Retries, dead-letter copies and redrives keep a message's headers, so a
// retried message stays in its trace on every transport.
#pragma once

#include <babelqueue/middleware.hpp>
#include <babelqueue/otel/tracer.hpp>

#include <memory>

namespace babelqueue::otel {

/// The tracing middleware: a consumer span around each handler, a producer
/// span and the traceparent header on each publish (the file comment has
/// the rules). It keeps no state but what it reads from its tracer when made
/// (a tracer's options are fixed), so one serves every thread.
class Middleware final : public babelqueue::Middleware {
 public:
  /// Shares tracer. A null tracer is an Errc::invalid_argument Error.
  explicit Middleware(std::shared_ptr<const Tracer> tracer);

  /// Runs next inside a "process <urn>" consumer span, current on this
  /// thread meanwhile; the result (or exception) passes through unchanged.
  Result<void> handle(const Message& message, const MessageHandler& next) override;
  /// Runs next inside a "publish <urn>" producer span, its traceparent (and
  /// tracestate) in request's headers and, with a parent, its trace stamped
  /// on the envelope's trace_id; the result passes through unchanged.
  Result<void> publish(PublishRequest& request, const PublishStep& next) override;

  /// The tracer its spans come from.
  const Tracer& tracer() const noexcept { return *tracer_; }

 private:
  std::shared_ptr<const Tracer> tracer_;
  bool records_nothing_;  // no span of tracer_ records, whatever its parent
};

}  // namespace babelqueue::otel
