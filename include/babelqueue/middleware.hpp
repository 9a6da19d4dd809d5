// SPDX-License-Identifier: Apache-2.0
// Middleware: the one seam through which optional components (idempotency,
// payload schemas, tracing, field encryption, metrics) and user
// code join the runtime, at the two moments they all need — a delivery on
// its way to its handler, and a publish on its way out (docs/adr/0018).
//
// A Middleware overrides either side or both; the default of each passes
// straight through. A chain applies them in one documented order, as layers:
// the first added is the outermost layer, so a delivery reaches it first and
// a publish leaves through it last. Adding tracing, metrics, idempotency, encryption and schema
// checks in that order gives the family's order: on consume span → metrics →
// idempotency claim → decryption → schema check → handler, on publish schema
// check of the cleartext → encryption → span → send.
//
// Scope: the publish side sees new messages (Worker::publish); the Worker's
// own re-emits of a consumed message (a retry, a dead-letter copy) keep that
// message's bytes and do not pass through it. What the Worker does with its
// messages (received, retried, dead-lettered, ...) reaches every middleware
// as a WorkerEvent (worker_event.hpp, docs/adr/0027), for metrics.
//
// Thread-safety: a middleware is called from every handler thread and every
// publishing thread at once; it must be thread-safe.
#pragma once

#include <babelqueue/envelope.hpp>
#include <babelqueue/message.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/worker_event.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue {

/// A handler of one delivery: returns normally or an ok Result to ack it,
/// throws or returns an error to fail it (retry, then dead-letter), throws
/// ReleaseDelivery to hand it back unhandled.
using MessageHandler = std::function<Result<void>(const Message&)>;

/// A publish on its way out, as the publish side of a middleware sees it.
struct PublishRequest {
  /// Where it goes.
  std::string queue;
  /// The envelope, built and encoded (its bytes are envelope.body()). A
  /// middleware that changes the message replaces it with another envelope.
  Envelope envelope;
  /// The data the envelope was made from, when the publisher has it: a check
  /// reads it instead of parsing envelope.data_json() again. Null otherwise;
  /// it no longer describes the envelope once a middleware replaced that.
  const Value* data = nullptr;
  /// Headers, delay, ordering key and deduplication id. The contract fields
  /// (PublishOptions::contract) are filled by the final step from the
  /// envelope as it is then.
  PublishOptions options;
};

/// The rest of a publish chain, ending in the transport's publish.
using PublishStep = std::function<Result<void>(PublishRequest&)>;

/// A layer around handlers and publishes (this header's opening comment gives
/// the order of a chain).
class Middleware {
 public:
  virtual ~Middleware() = default;

  /// Around a delivery's handler. Call next(message) to go on. Returning
  /// without calling it skips the handler: an ok result acks the message,
  /// an error fails it.
  virtual Result<void> handle(const Message& message, const MessageHandler& next) { return next(message); }

  /// Around a publish. Call next(request) to send; an error returned before
  /// that means nothing was sent.
  virtual Result<void> publish(PublishRequest& request, const PublishStep& next) { return next(request); }

  /// What the Worker did (worker_event.hpp), from the thread that did it,
  /// right after it counted it in WorkerMetrics. It must be quick and must not
  /// throw: it runs on the handler's and the receiving thread's path.
  virtual void on_event(const WorkerEvent& event) noexcept { (void)event; }
};

/// An ordered list of middleware, composed once: the Worker holds one, and a
/// standalone publisher reuses it the same way (wrap its send with
/// compose_publish). Not thread-safe while being added to; its composed
/// functions are.
class MiddlewareChain {
 public:
  /// An empty chain, or one of these in this order (the first outermost).
  ///@{
  MiddlewareChain() = default;
  explicit MiddlewareChain(std::vector<std::shared_ptr<Middleware>> middleware);
  ///@}

  /// Adds one after (inside) those already added. A null pointer is an
  /// Errc::invalid_argument Error.
  void add(std::shared_ptr<Middleware> middleware);

  bool empty() const noexcept { return middleware_.empty(); }       ///< no middleware
  std::size_t size() const noexcept { return middleware_.size(); }  ///< how many

  /// handler as the chain runs it: each middleware's handle() around it, the
  /// first added outermost.
  MessageHandler wrap(MessageHandler handler) const;

  /// send as the chain runs it: each middleware's publish() on the way out,
  /// the last added first and the first added last, then send.
  PublishStep compose_publish(PublishStep send) const;

  /// Hands event to every middleware's on_event(), in the order added.
  void notify(const WorkerEvent& event) const noexcept {
    for (const auto& m : middleware_) m->on_event(event);
  }

 private:
  std::vector<std::shared_ptr<Middleware>> middleware_;
};

}  // namespace babelqueue
