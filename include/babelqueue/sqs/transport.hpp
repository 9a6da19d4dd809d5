// SPDX-License-Identifier: Apache-2.0
// Transport: Amazon SQS (and SQS-compatible servers such as ElasticMQ)
// over the SQS JSON protocol — signed HTTP (SigV4) through a pluggable
// HttpClient, no AWS SDK needed (library babelqueue::sqs).
//
// URL: sqs://[region][?options]
//   sqs://us-east-1                                   AWS, credentials from the usual chain
//   sqs://us-east-1?endpoint=http://127.0.0.1:9324    a local ElasticMQ
// Options (url_options.hpp: unknown ones are errors, so a misspelt one is never
// ignored; durations are 5s, 2m, 1h or a bare number of seconds, in whole
// seconds as SQS takes them; a BOOL is true/false, yes/no, on/off or 1/0):
//   endpoint=URL                 service endpoint (default https://sqs.<region>.amazonaws.com)
//   prefix=URL                   queue URLs are prefix/name, no GetQueueUrl (queue_url_prefix)
//   fifo=BOOL                    FIFO queues: every name ends in .fifo (default false)
//   group_id=ID                  FIFO MessageGroupId without an ordering key (default the queue name)
//   wait_time=DURATION           longest single long poll, max_wait (default 20s; 0s to 20s)
//   visibility_timeout=DURATION  VisibilityTimeout of every receive (default 30s; 0s to 12h)
//   content_dedup=BOOL           the FIFO queues deduplicate by content (default false)
//   create=BOOL                  create a missing queue and its -dlq, create_queues (default false)
//   dead_letter_queue_url=URL    where dead_letter_queue() points (default <queue>-dlq)
//   profile=NAME                 shared-file profile, credentials.profile
//   request_timeout=DURATION     limit of one request; a long poll gets its wait on top
//                                (default 30s; 1s to 1h)
//   max_message_size=BYTES       the largest message a publish sends, body and attributes
//                                (default 262144, a queue's default MaximumMessageSize;
//                                1024 to 1048576)
//   tls_ca=PATH (also ca_file) tls_cert=PATH tls_key=PATH tls_verify=BOOL
//                                (tls_options.hpp, into Options::curl; libcurl applies them to an
//                                https endpoint only). tls_server_name is refused: libcurl checks
//                                the certificate against the endpoint's host.
// Credentials and region: see babelqueue/sqs/credentials.hpp (environment, shared
// files and profiles; explicit in Options).
//
// The binding (seeds/000 "Amazon SQS", docs/transports/sqs.md):
//   - MessageBody = the envelope, byte for byte. MessageAttributes: bq-job,
//     bq-trace-id, bq-message-id, bq-source-lang (String), bq-schema-version,
//     bq-created-at (Number), from the body; then out-of-band headers as
//     String attributes in name order, up to SQS's 10 (contract ones win).
//   - receive(): ReceiveMessage (long polling, up to 10 per call, all
//     message attributes, ApproximateReceiveCount, and MessageGroupId on a
//     FIFO queue). native_attempts = ApproximateReceiveCount - 1 (the
//     runtime takes max with the body's); Delivery::ordering_key =
//     MessageGroupId, so a retry, dead-letter or redrive stays in its group.
//     The bq-schema-version gate runs before anything reads the body.
//   - ack(): DeleteMessage; acks of one queue that meet while a delete is in
//     flight go together in one DeleteMessageBatch. ack_batch():
//     DeleteMessageBatch, 10 per call (Capabilities::batch_ack: the Worker
//     gathers its acks into such batches).
//   - release(delay): ChangeMessageVisibility(delay rounded up to whole
//     seconds, at most 12 h) — never delete-and-resend; extend(lease):
//     ChangeMessageVisibility(lease) on the held message.
//   - Delays: DelaySeconds, rounded up to whole seconds; over 900 s is
//     refused (Errc::invalid_argument). FIFO queues have no per-message
//     delay (Errc::unsupported).
//   - FIFO (a queue whose name ends in .fifo): MessageGroupId = the
//     publish's ordering_key, else group_id, else the queue name.
//     MessageDeduplicationId = PublishOptions::dedup_id, else nothing with
//     content_dedup, else meta.id for a first publish (attempts 0, no
//     dead_letter block) and meta.id:attempts[:dead-letter] for a retry or a
//     dead-letter copy — so a retry is never deduplicated away — and the
//     SHA-256 of the body for a body that is not an envelope.
//   - dead_letter_queue(q) = q + "-dlq" (q-dlq.fifo for q.fifo), or the
//     dead_letter_queue_url option. A queue "name" that is an http(s) URL is
//     used as the queue URL directly.
//   - Queue URLs: prefix + "/" + name when prefix is set, else GetQueueUrl,
//     cached. A missing queue is Errc::not_found naming it, unless
//     create_queues (create=1): then it is created, with its -dlq.
//   - A stale receipt handle (the message was received again after its
//     visibility timeout) settles nothing: Errc::not_found.
//
// Thread-safety: all methods are thread-safe; requests run concurrently on
// the HTTP client's connections.
// Options::log hears, from the thread that made the call, of the region,
// endpoint and where the credentials came from (open), each queue URL looked
// up or created, the endpoint stopping and starting to answer, and close()
// giving up on calls in flight; never credentials, signatures or the
// server's error texts. The transport retries nothing itself: its callers
// (the Worker) decide, and log, whether to try again.
#pragma once

#include <babelqueue/log_sink.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/sqs/credentials.hpp>
#include <babelqueue/sqs/http_client.hpp>
#include <babelqueue/transport.hpp>
#include <babelqueue/url.hpp>
#include <babelqueue/value.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

/// The Amazon SQS transport (library babelqueue::sqs).
namespace babelqueue::sqs {

/// The Amazon SQS transport: sqs:// over the SQS JSON protocol (this header's
/// opening comment gives the URL and the binding).
class Transport final : public babelqueue::Transport {
 public:
  /// The service, the queues and the client; the URL parameters of the same names set them.
  struct Options {
    std::string region;  ///< empty: from the environment or the profile
    /// The service endpoint, e.g. http://127.0.0.1:9324; empty:
    /// `https://sqs.REGION.amazonaws.com`.
    std::string endpoint;
    /// Queue URLs are prefix + "/" + name (no GetQueueUrl call).
    std::string queue_url_prefix;
    /// Queues are FIFO: every queue name must end in ".fifo"; messages are
    /// ordered per group (capabilities().ordered).
    bool fifo = false;
    std::string group_id;        ///< FIFO MessageGroupId; empty: the queue name
    bool content_dedup = false;  ///< the FIFO queues use content-based deduplication
    /// Longest single long poll (SQS allows 0..20 s).
    std::chrono::seconds max_wait{20};
    /// VisibilityTimeout of every receive (SQS allows 0..12 h); also the
    /// lease the runtime extends for long handlers.
    std::chrono::seconds visibility_timeout{30};
    /// Create a missing queue (and its -dlq) on first use.
    bool create_queues = false;
    /// Where dead_letter_queue() points; empty: the queue's name + "-dlq".
    std::string dead_letter_queue_url;
    sqs::CredentialOptions credentials;  ///< given keys, or the profile to read them from
    /// Null: make_curl_http_client(). close() calls its abort(), so give
    /// each transport a client of its own.
    std::shared_ptr<sqs::HttpClient> http_client;
    sqs::CurlOptions curl;  ///< the default client's settings (TLS, timeouts, pool)
    /// Limit of one request (a long poll gets its wait on top).
    std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
    /// The largest message a publish sends, its body and message attributes
    /// counted as SQS counts them: a larger one fails with
    /// Errc::invalid_argument naming both sizes, before it is sent. Default:
    /// a queue's default MaximumMessageSize (256 KiB); set the queues' own
    /// value when they were created with another (up to 1 MiB).
    std::size_t max_message_size = std::size_t{256} * 1024;
    /// Where the transport says what it resolved and created, when the
    /// endpoint stops and starts answering, and when close() gives up on
    /// calls in flight; an empty function silences it.
    LogSink log = stderr_log_sink();
  };

  /// Resolves credentials and region (Errc::auth / Errc::invalid_argument
  /// saying where it looked). Opens no connection: the first request does.
  static Result<std::unique_ptr<Transport>> open(Options options);

  /// Options from an sqs:// URL (see the top of this file).
  static Result<Options> options_from_url(const Url& url);

  ~Transport() override;  ///< closes it

  /// The options it was opened with.
  const Options& options() const noexcept;

  Capabilities capabilities() const override;
  Result<void> publish(std::string_view queue, std::string_view body, const PublishOptions& options = {}) override;
  /// SendMessageBatch, up to 10 messages per call and per queue. On a partial
  /// failure the error names how many were accepted.
  Result<void> publish_batch(std::span<const OutgoingMessage> messages) override;
  Result<std::vector<Delivery>> receive(std::string_view queue, std::size_t max,
                                        std::chrono::milliseconds wait) override;
  Result<void> ack(const Delivery& delivery) override;
  /// DeleteMessageBatch for consecutive deliveries of one queue, 10 per
  /// call. Every delivery is attempted; each one SQS did not delete is
  /// reported with its own error (a stale receipt handle: Errc::not_found).
  using babelqueue::Transport::ack_batch;
  Result<void> ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) override;
  Result<void> release(const Delivery& delivery, std::chrono::milliseconds delay = {}) override;
  Result<void> extend(const Delivery& delivery, std::chrono::milliseconds lease) override;
  std::string dead_letter_queue(std::string_view queue) const override;
  /// Approximate counts (GetQueueAttributes).
  Result<QueueStats> stats(std::string_view queue) override;
  /// Errc::unsupported: SQS shows a message only by receiving it.
  Result<std::vector<PeekedMessage>> peek(std::string_view queue, std::size_t max) override;
  void close(std::chrono::milliseconds deadline = std::chrono::seconds(5)) override;

  /// The URL of a queue by name (resolved, cached, created when asked).
  Result<std::string> queue_url(std::string_view queue);
  /// Sends any SQS JSON-protocol operation (e.g. "SetQueueAttributes" to set
  /// a RedrivePolicy) signed through this transport's connections; the
  /// answer's JSON object. Errors as for the other calls.
  Result<Value> request(std::string_view operation, const Value& input);

 private:
  class State;
  explicit Transport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Registers the sqs:// scheme with open_transport(). Call it once, from any
/// thread, before opening sqs:// URLs; calling it again is harmless.
void register_transport();

/// The options by their short name: babelqueue::sqs::Options.
using Options = Transport::Options;

}  // namespace babelqueue::sqs
