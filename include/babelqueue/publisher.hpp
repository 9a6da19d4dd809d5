// SPDX-License-Identifier: Apache-2.0
// Publisher: publishes envelopes without a Worker — a web request handler, a
// batch job, a producer process.
//
// Every publish reports the broker's confirmation: a publish succeeds only
// once the transport says the broker holds the message (confirmed,
// acknowledged, committed). The answer comes back synchronously (publish,
// publish_batch), through a callback, or through a std::future
// (publish_async). A failure is never lost: each publish_async calls its
// callback (or fulfils its future) exactly once, with the receipt or the
// error, also when the Publisher is destroyed with publishes pending.
//
// A failed publish is tried again under PublisherOptions::retry_backoff when
// its error is retriable (ErrorInfo::retriable) and its outcome is known;
// an Errc::outcome_unknown error (sent, confirmation lost: the broker may
// hold it) is tried again only with retry_outcome_unknown, since the second
// copy may then arrive too — with the same meta.id, which consumers
// deduplicate on. A batch is re-sent whole, so its retries follow the same
// rule: messages before a failure may have been accepted.
//
// Queues come from one source: meta.queue is the queue a message is sent
// to. Messages made here get it; an envelope made elsewhere whose meta.queue
// names another queue is refused (Errc::invalid_argument, nothing sent),
// because its dead letter would point back to the wrong queue.
//
// The publish side of the middleware (middleware.hpp) sees every message,
// in the chain's order, exactly as with Worker::publish.
//
// Thread-safety: every method may be called from any thread at once. The
// transport is borrowed (it must outlive the Publisher) or owned.
#pragma once

#include <babelqueue/backoff.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/log_sink.hpp>
#include <babelqueue/middleware.hpp>
#include <babelqueue/publish_params.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/typed_message.hpp>
#include <babelqueue/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue {

/// How a Publisher sends: its default queue, retries, middleware and the
/// bound on publishes waiting to be sent.
struct PublisherOptions {
  /// The queue of a publish whose PublishParams::queue is empty. Empty: such
  /// a publish is an Errc::invalid_argument error (an envelope made
  /// elsewhere goes to its own meta.queue).
  std::string default_queue;
  /// Sends of one publish, the first included: 1 = never retried.
  std::int64_t max_tries = 3;
  /// The pause before try n+1 is retry_backoff.delay_for(n).
  BackoffPolicy retry_backoff{std::chrono::milliseconds(100), 2.0, std::chrono::seconds(5), 0.2};
  /// Send again a publish whose outcome is unknown (and a failed batch).
  /// Off: reported at once, for the caller to decide.
  bool retry_outcome_unknown = false;
  /// Around every publish, the first listed outermost (middleware.hpp).
  std::vector<std::shared_ptr<Middleware>> middleware;
  /// publish_async calls accepted but not yet sent; a further call waits for
  /// room, so a broker that stalls slows the caller instead of filling memory.
  std::size_t max_pending = 1024;
  /// Where retries and failed callbacks are logged; an empty function
  /// silences it.
  LogSink log = stderr_log_sink();

  /// Errc::invalid_argument naming the field out of its range: max_tries 1
  /// to 1000, max_pending 1 to 1000000, retry_backoff valid
  /// (BackoffPolicy::check). The Publisher's constructor runs it.
  Result<void> check() const;
};

/// The broker's confirmation of one message.
struct PublishReceipt {
  std::string id;          ///< meta.id
  std::string queue;       ///< the queue it was sent to (= meta.queue)
  std::int64_t tries = 1;  ///< sends it took, the confirmed one included
};

/// Called once per publish_async with its outcome, on the Publisher's own
/// thread: keep it short, and do not call flush() or destroy the Publisher
/// from it.
using PublishCallback = std::function<void(Result<PublishReceipt>)>;

/// Publishes envelopes through a Transport and reports each broker
/// confirmation, retrying what may succeed later (docs/errors.md). Safe to
/// call from several threads.
class Publisher {
 public:
  /// Borrows transport, which must outlive the Publisher. Options out of
  /// their range (PublisherOptions::check) throw Error(Errc::invalid_argument).
  explicit Publisher(Transport& transport, PublisherOptions options = {});
  /// Owns transport, and closes it when destroyed.
  explicit Publisher(std::unique_ptr<Transport> transport, PublisherOptions options = {});
  /// Waits for every pending publish_async to finish (its callback called),
  /// then stops the Publisher's thread.
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // ---- synchronous: the receipt once the broker confirmed ----

  /// A new envelope for urn and data, sent to params.queue (else the default
  /// queue), meta.queue set to it.
  Result<PublishReceipt> publish(std::string_view urn, const Value& data, const PublishParams& params = {});
  /// The same for a typed message, its envelope made by
  /// Envelope::make(message): written by its write_data, else its to_value().
  template <PublishableMessage T>
  Result<PublishReceipt> publish(const T& message, const PublishParams& params = {}) {
    return publish_made(make(message, params), nullptr, params);
  }
  /// An envelope made elsewhere (Envelope::make, a decode), sent as its
  /// bytes are, to params.queue or else its own meta.queue; refused when
  /// the two differ, or when it is not an acceptable envelope (accepts()).
  Result<PublishReceipt> publish(const Envelope& envelope, const PublishParams& params = {});

  /// Several messages in one round trip where the transport can
  /// (Capabilities::batch_publish; through middleware, one by one). All or
  /// nothing as far as the caller can tell: on an error, some of them may
  /// have been accepted (the message says how many where the transport
  /// knows); the receipts come in order on success. params apply to each.
  Result<std::vector<PublishReceipt>> publish_batch(std::span<const Envelope> envelopes,
                                                    const PublishParams& params = {});
  /// The same for typed messages, each made as publish(const T&) does.
  template <PublishableMessage T>
  Result<std::vector<PublishReceipt>> publish_batch(std::span<const T> messages, const PublishParams& params = {}) {
    std::vector<Envelope> envelopes;
    envelopes.reserve(messages.size());
    for (const T& message : messages) {
      auto made = make(message, params);
      if (!made) return unexpected(made.error());
      envelopes.push_back(std::move(*made));
    }
    return publish_batch(std::span<const Envelope>(envelopes), params);
  }

  // ---- asynchronous: the same publish on the Publisher's thread ----

  /// The envelope is made (and a bad URN or payload reported) before it
  /// returns; done is called once with the outcome.
  void publish_async(std::string_view urn, const Value& data, PublishCallback done, const PublishParams& params = {});
  /// The same, the outcome given by a future instead of a callback.
  std::future<Result<PublishReceipt>> publish_async(std::string_view urn, const Value& data,
                                                    const PublishParams& params = {});
  /// The typed forms of the two above.
  ///@{
  template <PublishableMessage T>
  void publish_async(const T& message, PublishCallback done, const PublishParams& params = {}) {
    publish_made_async(make(message, params), Value(), std::move(done), params);
  }
  template <PublishableMessage T>
  std::future<Result<PublishReceipt>> publish_async(const T& message, const PublishParams& params = {}) {
    return future_of(make(message, params), Value(), params);
  }
  ///@}

  /// Waits until every publish_async accepted before this call has finished
  /// (its callback returned).
  void flush();

  const PublisherOptions& options() const noexcept;  ///< the options it runs with
  Transport& transport() noexcept;                   ///< the transport it sends through

 private:
  /// What Envelope::make writes for params: the queue (params' or the
  /// default one) and the trace.
  Result<MakeOptions> make_options(const PublishParams& params) const;
  Result<Envelope> make(std::string_view urn, const Value& data, const PublishParams& params) const;
  template <PublishableMessage T>
  Result<Envelope> make(const T& message, const PublishParams& params) const {
    auto options = make_options(params);
    if (!options) return unexpected(options.error());
    return Envelope::make(message, *options);
  }
  /// The publishes of an envelope just made (or the error of making it);
  /// data: what it was made from, when there was a Value (null otherwise),
  /// for the middleware (PublishRequest::data).
  ///@{
  Result<PublishReceipt> publish_made(Result<Envelope> made, const Value* data, const PublishParams& params);
  void publish_made_async(Result<Envelope> made, Value data, PublishCallback done, const PublishParams& params);
  std::future<Result<PublishReceipt>> future_of(Result<Envelope> made, Value data, const PublishParams& params);
  ///@}
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace babelqueue
