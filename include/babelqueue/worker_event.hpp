// SPDX-License-Identifier: Apache-2.0
// WorkerEvent: what a Worker tells its middleware happened to its messages
// (Middleware::on_event, docs/adr/0027), so a component can count, time and
// gauge a worker without the Worker knowing it: every change of
// WorkerMetrics comes with one, plus where a delivery is (buffered, in a
// handler thread).
//
// Per delivery: received (when taken from the transport, into the buffer),
// then either started ... finished around its processing by a handler
// thread, with decoded once its URN is known and the outcomes of that
// processing between them, or returned (released unstarted when a run
// stops). Per transport: reconnected, when the receiving thread sees that its
// transport's reconnect count has grown.
#pragma once

#include <babelqueue/dead_letter.hpp>

#include <cstddef>
#include <optional>
#include <string_view>

namespace babelqueue {

class Envelope;
class Transport;

/// What happened to a delivery (the order is in the file comment). received
/// and the outcomes, handled to settle_error, each go with the WorkerMetrics
/// counter of the same name (handled with succeeded, settle_error with
/// settle_errors); started, decoded, finished and returned have no counter:
/// they say where a delivery is. reconnected has none either: it carries the
/// transport's own total.
enum class WorkerEventKind {
  received,       ///< count deliveries taken from the transport into the buffer (queue only)
  started,        ///< a handler thread took a delivery from the buffer
  decoded,        ///< its URN is known (urn, envelope; urn empty for poison)
  finished,       ///< the handler thread is done with it, whatever the outcome
  returned,       ///< count buffered deliveries released unstarted (a run stopping)
  handled,        ///< handled and acked (WorkerMetrics::succeeded)
  failed,         ///< a handler failure, including an unknown URN under "fail"
  retried,        ///< republished with attempts+1
  dead_lettered,  ///< published to the dead-letter queue (reason)
  poison,         ///< a poison message seen
  unknown_urn,    ///< a message with no handler
  dropped,        ///< acked without being handled or dead-lettered, by choice
  released,       ///< handed back to the broker for redelivery
  settle_error,   ///< an ack, release or republish that failed
  /// the transport re-established lost connections (transport; count is its
  /// total since it was opened, Transport::connection_stats()); no queue
  reconnected,
};

/// One thing a Worker did, handed to every Middleware::on_event() on the
/// thread that did it. Its views and envelope point into the Worker's own
/// state and are valid only during that call: copy what you keep.
struct WorkerEvent {
  WorkerEventKind kind;                    ///< what happened
  std::string_view queue;                  ///< the queue the delivery came from
  std::string_view urn;                    ///< empty when not known
  const Envelope* envelope = nullptr;      ///< once decoded; null when not known (as urn)
  std::size_t count = 1;                   ///< received, returned: how many; reconnected: the total
  std::optional<DeadLetterReason> reason;  ///< dead_lettered: why
  const Transport* transport = nullptr;    ///< reconnected: the transport
};

}  // namespace babelqueue
