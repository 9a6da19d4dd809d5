// SPDX-License-Identifier: Apache-2.0
#include "sigv4_signer.hpp"
#include "sqs_projection.hpp"

#include <babelqueue/binding.hpp>
#include <babelqueue/detail/message_size.hpp>
#include <babelqueue/detail/saturating.hpp>
#include <babelqueue/duration.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/sqs/transport.hpp>
#include <babelqueue/tls_options.hpp>
#include <babelqueue/transport_registry.hpp>
#include <babelqueue/url_options.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

namespace babelqueue {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxBatch = 10;                 // SQS entries per batch call
constexpr std::size_t kMaxBatchBytes = 256U * 1024U;  // SQS payload per SendMessageBatch
// The range of a queue's MaximumMessageSize.
constexpr std::int64_t kMinMessageSize = 1024;
constexpr std::int64_t kMaxMessageSize = 1024 * 1024;
constexpr seconds kMaxDelay{900};            // DelaySeconds
constexpr seconds kMaxVisibility{43200};     // VisibilityTimeout (12 h)
constexpr seconds kMaxWait{20};              // WaitTimeSeconds
constexpr milliseconds kShortPollPause{50};  // between short polls of a sub-second wait
constexpr milliseconds kWaitRounding{50};    // a wait this close to whole seconds is long-polled whole
constexpr std::string_view kFifoSuffix = ".fifo";
constexpr std::string_view kDeadLetterSuffix = "-dlq";

bool is_queue_url(std::string_view queue) { return queue.starts_with("https://") || queue.starts_with("http://"); }

// The queue's name: the last path segment of a URL, else itself.
std::string_view name_of(std::string_view queue) {
  if (!is_queue_url(queue)) return queue;
  const auto slash = queue.find_last_of('/');
  return queue.substr(slash + 1);
}

bool is_fifo(std::string_view queue) { return name_of(queue).ends_with(kFifoSuffix); }

bool is_dead_letter_queue(std::string_view queue) {
  std::string_view name = name_of(queue);
  if (name.ends_with(kFifoSuffix)) name.remove_suffix(kFifoSuffix.size());
  return name.ends_with(kDeadLetterSuffix);
}

// Whole seconds, rounded up: SQS never makes a message visible earlier than
// the caller asked.
std::int64_t ceil_seconds(milliseconds duration) { return (duration.count() + 999) / 1000; }

Result<void> check_queue_name(std::string_view queue) {
  if (queue.empty()) return unexpected(Errc::invalid_argument, "the queue name is empty");
  return {};
}

Result<void> check_delay(std::string_view queue, milliseconds delay) {
  if (delay.count() <= 0) return {};
  if (is_fifo(queue)) {
    return unexpected(Errc::unsupported, "SQS FIFO queue '" + std::string(queue) +
                                             "' has no per-message delay (DelaySeconds); set a delay on the queue "
                                             "instead");
  }
  if (delay > kMaxDelay) {
    return unexpected(Errc::invalid_argument, "SQS delays a message at most 900 seconds (DelaySeconds), asked " +
                                                  std::to_string(ceil_seconds(delay)) + " s for queue '" +
                                                  std::string(queue) + "'; schedule longer delays outside SQS");
  }
  return {};
}

Unexpected<ErrorInfo> closed_error() { return unexpected(Errc::closed, "the SQS transport is closed"); }

// Why a delete (ack) of delivery failed, said the same way by ack() and
// ack_batch().
ErrorInfo delete_error(const Delivery& delivery, const ErrorInfo& error) {
  if (error.code() == Errc::not_found) {
    return ErrorInfo(Errc::not_found, "cannot delete a message of SQS queue '" + delivery.queue +
                                          "': it is not held by this delivery any more (already settled, or its "
                                          "visibility timeout passed and it was received again) — " +
                                          error.message());
  }
  return ErrorInfo(error.code(), "deleting a message of SQS queue '" + delivery.queue + "' failed: " + error.message());
}

// JSON text building for the request bodies: the hot path (SendMessage,
// SendMessageBatch) writes straight into one string.
Result<void> append_string(std::string& out, std::string_view text, std::string_view what) {
  if (auto written = write_json_string(out, text); !written) {
    return unexpected(Errc::invalid_argument, std::string(what) + " is not valid UTF-8 text, which SQS requires");
  }
  return {};
}

void append_key(std::string& out, std::string_view key) {
  out.push_back('"');
  out.append(key);
  out.append("\":");
}

const std::string* string_member(const Value& object, std::string_view key) {
  const Value* member = object.find(key);
  return member != nullptr ? member->if_string() : nullptr;
}

// The error code SQS answered with: __type's part after '#', else the
// query-protocol code of the x-amzn-query-error header.
std::string error_code(const Value* body, std::string_view query_error) {
  if (body != nullptr) {
    if (const std::string* type = string_member(*body, "__type")) {
      const auto hash = type->find_last_of('#');
      return hash == std::string::npos ? *type : type->substr(hash + 1);
    }
  }
  return std::string(query_error.substr(0, query_error.find(';')));
}

Errc errc_for(std::string_view code, long status) {
  static constexpr std::string_view kNotFound[] = {"QueueDoesNotExist",  "AWS.SimpleQueueService.NonExistentQueue",
                                                   "NonExistentQueue",   "ReceiptHandleIsInvalid",
                                                   "MessageNotInflight", "InvalidReceiptHandle"};
  static constexpr std::string_view kAuth[] = {"InvalidClientTokenId",
                                               "SignatureDoesNotMatch",
                                               "AccessDenied",
                                               "AccessDeniedException",
                                               "UnrecognizedClientException",
                                               "MissingAuthenticationToken",
                                               "ExpiredToken",
                                               "IncompleteSignature",
                                               "InvalidSecurity",
                                               "RequestExpired",
                                               "AuthFailure",
                                               "OptInRequired"};
  static constexpr std::string_view kInvalid[] = {"InvalidParameterValue",
                                                  "MissingParameter",
                                                  "InvalidAttributeName",
                                                  "InvalidAttributeValue",
                                                  "InvalidMessageContents",
                                                  "InvalidBatchEntryId",
                                                  "BatchEntryIdsNotDistinct",
                                                  "TooManyEntriesInBatchRequest",
                                                  "EmptyBatchRequest",
                                                  "BatchRequestTooLong",
                                                  "UnsupportedOperation",
                                                  "InvalidAction",
                                                  "ValidationError",
                                                  "QueueNameExists",
                                                  "QueueAlreadyExists",
                                                  "AWS.SimpleQueueService.QueueNameExists",
                                                  "InvalidAddress",
                                                  "MessageTooLong",
                                                  "InvalidParameterCombination",
                                                  "AWS.SimpleQueueService.UnsupportedOperation"};
  for (const auto c : kNotFound) {
    if (code == c) return Errc::not_found;
  }
  for (const auto c : kAuth) {
    if (code == c) return Errc::auth;
  }
  for (const auto c : kInvalid) {
    if (code == c) return Errc::invalid_argument;
  }
  if (status == 401 || status == 403) return Errc::auth;
  return Errc::broker;  // throttling, 5xx, anything unknown: worth trying again
}

// One SendMessage / SendMessageBatch entry's fields (without braces).
Result<void> append_message_fields(std::string& out, std::string_view queue, std::string_view body,
                                   const PublishOptions& publish, const sqs::Transport::Options& options) {
  append_key(out, "MessageBody");
  if (auto r = append_string(out, body, "the message body"); !r) return r;
  if (publish.delay.count() > 0) {
    out.append(",\"DelaySeconds\":").append(std::to_string(ceil_seconds(publish.delay)));
  }
  // The contract fields, read once for the attributes and the FIFO
  // deduplication id (or handed over by the Worker, which built them).
  std::optional<Envelope> decoded;
  std::optional<binding::ContractFields> read;
  if (publish.contract == nullptr) read = binding::read(body, decoded);
  const binding::ContractFields* fields = publish.contract != nullptr ? publish.contract : (read ? &*read : nullptr);
  const auto attributes = sqs_detail::project_attributes(fields, publish.headers);
  // SQS counts a message's size as its body plus each attribute's name, data
  // type and value; above the queue's MaximumMessageSize it refuses it.
  std::size_t size = body.size();
  for (const auto& attribute : attributes) {
    size += attribute.name.size() + attribute.data_type.size() + attribute.value.size();
  }
  if (size > options.max_message_size) {
    return unexpected(babelqueue::detail::message_too_large(queue, size, "SQS", options.max_message_size,
                                                            "max_message_size, the queue's MaximumMessageSize"));
  }
  if (!attributes.empty()) {
    out.append(",\"MessageAttributes\":{");
    bool first = true;
    for (const auto& attribute : attributes) {
      if (!first) out.push_back(',');
      first = false;
      if (auto r = append_string(out, attribute.name, "a header name"); !r) return r;
      out.append(":{\"DataType\":\"").append(attribute.data_type).append("\",\"StringValue\":");
      if (auto r = append_string(out, attribute.value, "the value of header '" + attribute.name + "'"); !r) return r;
      out.push_back('}');
    }
    out.push_back('}');
  }
  if (is_fifo(queue)) {
    std::string group = !publish.ordering_key.empty() ? publish.ordering_key
                        : !options.group_id.empty()   ? options.group_id
                                                      : std::string(name_of(queue));
    out.append(",\"MessageGroupId\":");
    if (auto r = append_string(out, sqs_detail::fifo_safe_id(group), "the message group id"); !r) return r;
    std::string dedup;
    if (!publish.dedup_id.empty()) {
      dedup = sqs_detail::fifo_safe_id(publish.dedup_id);
    } else if (!options.content_dedup) {
      dedup = sqs_detail::fifo_deduplication_id(body, fields);
    }
    if (!dedup.empty()) {
      out.append(",\"MessageDeduplicationId\":");
      if (auto r = append_string(out, dedup, "the deduplication id"); !r) return r;
    }
  }
  return {};
}

// Acks of one queue waiting for a DeleteMessageBatch (group commit: the
// first waiter sends what has gathered, up to 10, while later ones queue up
// for the next call; nobody waits for company).
struct PendingDelete {
  std::string_view receipt_handle;
  std::optional<ErrorInfo> error;
  bool done = false;
};

struct DeleteQueue {
  std::mutex mutex;
  std::condition_variable settled;
  std::deque<PendingDelete*> waiting;
  bool in_flight = false;
};

}  // namespace

class sqs::Transport::State {
 public:
  explicit State(Options opts) : options(std::move(opts)) {}

  Options options;
  std::string region;
  sqs::AwsCredentials credentials;
  std::string endpoint_url;    // where every request is POSTed
  std::string endpoint_shown;  // the same for logs: user information redacted
  std::shared_ptr<sqs::HttpClient> http;
  std::atomic<bool> closed{false};
  // Set by a call that got no answer, cleared by the next answer: the
  // operator hears once that the endpoint is gone and once that it is back.
  std::atomic<bool> unreachable{false};

  std::mutex close_mutex;
  std::condition_variable close_signal;  // wakes short-poll pauses and close() waiting for calls
  int calls_in_flight = 0;               // guarded by close_mutex; long polls not counted

  std::mutex urls_mutex;
  std::map<std::string, std::string, std::less<>> urls;  // queue name -> queue URL

  std::mutex deletes_mutex;
  std::map<std::string, std::unique_ptr<DeleteQueue>, std::less<>> deletes;  // by queue URL

  // Sends one operation. A long poll (cancellable) is ended by close() at
  // once; other calls are waited for, up to close()'s deadline.
  Result<Value> call(std::string_view operation, std::string body, milliseconds extra_time = {},
                     bool cancellable = false);
  Result<std::string> resolve(std::string_view queue);
  Result<std::string> create_queue(std::string_view name);
  Result<void> delete_batch(const std::string& url, std::span<PendingDelete* const> batch);
  Result<void> change_visibility(const Delivery& delivery, std::int64_t seconds, std::string_view doing);
  Delivery to_delivery(std::string_view queue, const Value& message) const;
  DeleteQueue& delete_queue(const std::string& url);
  void pause(milliseconds duration) {
    std::unique_lock lock(close_mutex);
    close_signal.wait_for(lock, duration, [&] { return closed.load(); });
  }
  // Lines never hold credentials, signatures or the server's error
  // messages (an authentication error may quote the signed request).
  void log(LogLevel level, const std::string& message) const {
    if (options.log) options.log(level, message);
  }
  void note_answer() {
    if (unreachable.load(std::memory_order_relaxed) && unreachable.exchange(false)) {
      log(LogLevel::info, "sqs: " + endpoint_shown + " answers again");
    }
  }
  void note_no_answer(std::string_view operation, const ErrorInfo& error) {
    // The transport sends nothing again by itself: the caller (the Worker's
    // receive loop, a publisher) decides whether to try again.
    if (!unreachable.exchange(true)) {
      log(LogLevel::warning, "sqs: no answer from " + endpoint_shown + " to " + std::string(operation) + " (" +
                                 error.message() + "); nothing is resent, later calls try it again");
    } else {
      log(LogLevel::debug, "sqs: still no answer from " + endpoint_shown + " to " + std::string(operation) + " (" +
                               error.message() + ")");
    }
  }
};

Result<Value> sqs::Transport::State::call(std::string_view operation, std::string body, milliseconds extra_time,
                                          bool cancellable) {
  if (closed.load()) return closed_error();
  struct InFlight {
    State* state;
    explicit InFlight(State* s) : state(s) {
      const std::lock_guard lock(state->close_mutex);
      ++state->calls_in_flight;
    }
    ~InFlight() {
      {
        const std::lock_guard lock(state->close_mutex);
        --state->calls_in_flight;
      }
      state->close_signal.notify_all();
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
  };
  std::optional<InFlight> counted;
  if (!cancellable) counted.emplace(this);
  sqs::HttpRequest request;
  if (cancellable) request.cancel = &closed;
  request.url = endpoint_url;
  request.body = std::move(body);
  request.timeout = options.request_timeout + extra_time;
  request.headers.reserve(6);
  request.headers.emplace_back("Content-Type", "application/x-amz-json-1.0");
  request.headers.emplace_back("X-Amz-Target", "AmazonSQS." + std::string(operation));
  if (auto signed_ = sqs::sign_v4("POST", request, credentials, region, "sqs", std::chrono::system_clock::now());
      !signed_) {
    return unexpected(signed_.error());
  }
  auto response = http->post(request);
  if (!response) {
    if (closed.load()) return closed_error();
    note_no_answer(operation, response.error());
    return unexpected(
        response.error().with_message("SQS " + std::string(operation) + " failed: " + response.error().message()));
  }
  note_answer();
  std::optional<Value> parsed;
  if (!response->body.empty()) {
    if (auto value = parse_json(response->body); value && value->is_object()) parsed = std::move(*value);
  }
  if (response->status == 200) {
    if (response->body.empty()) return Value::object();
    if (!parsed) {
      return unexpected(Errc::broker, "SQS " + std::string(operation) +
                                          " answered HTTP 200 with a body that is not a "
                                          "JSON object (is the endpoint an SQS server?)");
    }
    return std::move(*parsed);
  }
  const std::string code = error_code(parsed ? &*parsed : nullptr, response->query_error);
  std::string message;
  if (parsed) {
    if (const std::string* text = string_member(*parsed, "message")) message = *text;
    if (const std::string* text = string_member(*parsed, "Message")) message = *text;
  }
  std::string text = "SQS " + std::string(operation) + " failed with HTTP " + std::to_string(response->status);
  if (!code.empty()) text += " " + code;
  // The caller gets the whole error; the log line only what identifies it.
  log(LogLevel::debug, "sqs: " + std::string(operation) + " answered HTTP " + std::to_string(response->status) +
                           (code.empty() ? "" : " " + code));
  if (!message.empty()) text += ": " + message;
  if (code.empty() && !parsed && !response->body.empty()) text += ": " + response->body.substr(0, 200);
  // SQS's own code and message stay with the error, whatever Errc they map to.
  return unexpected(ErrorInfo(errc_for(code, response->status), std::move(text))
                        .with_native(code.empty() ? "HTTP " + std::to_string(response->status) : code, message));
}

Result<std::string> sqs::Transport::State::create_queue(std::string_view name) {
  Object attributes;
  if (name.ends_with(kFifoSuffix)) {
    attributes.set("FifoQueue", "true");
    if (options.content_dedup) attributes.set("ContentBasedDeduplication", "true");
  }
  Object input;
  input.set("QueueName", std::string(name));
  if (!attributes.empty()) input.set("Attributes", Value(std::move(attributes)));
  auto body = to_json(Value(std::move(input)));
  if (!body) return unexpected(Errc::invalid_argument, "the queue name '" + std::string(name) + "' is not valid UTF-8");
  auto created = call("CreateQueue", std::move(*body));
  if (!created) {
    return unexpected(created.error().code(),
                      "creating SQS queue '" + std::string(name) + "' failed: " + created.error().message());
  }
  const std::string* url = string_member(*created, "QueueUrl");
  if (url == nullptr) {
    return unexpected(Errc::broker, "SQS CreateQueue for '" + std::string(name) + "' returned no QueueUrl");
  }
  log(LogLevel::info, "sqs: created queue '" + std::string(name) + "' at " + *url);
  return *url;
}

Result<std::string> sqs::Transport::State::resolve(std::string_view queue) {
  if (is_queue_url(queue)) return std::string(queue);
  {
    const std::lock_guard lock(urls_mutex);
    if (auto found = urls.find(queue); found != urls.end()) return found->second;
  }
  if (options.fifo && !queue.ends_with(kFifoSuffix)) {
    return unexpected(Errc::invalid_argument, "queue '" + std::string(queue) +
                                                  "' is not a FIFO queue name: with fifo=1 every SQS queue name must "
                                                  "end in .fifo");
  }
  std::string url;
  if (!options.queue_url_prefix.empty()) {
    std::string_view prefix = options.queue_url_prefix;
    while (prefix.ends_with('/')) prefix.remove_suffix(1);
    url = std::string(prefix) + "/" + std::string(queue);
    if (options.create_queues) {
      auto created = create_queue(queue);
      if (!created) return unexpected(created.error());
    }
  } else {
    auto body = to_json(Value::object({{"QueueName", std::string(queue)}}));
    if (!body) return unexpected(Errc::invalid_argument, "the queue name is not valid UTF-8");
    auto found = call("GetQueueUrl", std::move(*body));
    if (found) {
      const std::string* text = string_member(*found, "QueueUrl");
      if (text == nullptr) {
        return unexpected(Errc::broker, "SQS GetQueueUrl for '" + std::string(queue) + "' returned no QueueUrl");
      }
      url = *text;
      log(LogLevel::info, "sqs: queue '" + std::string(queue) + "' is at " + url);
    } else if (found.error().code() == Errc::not_found && options.create_queues) {
      auto created = create_queue(queue);
      if (!created) return unexpected(created.error());
      url = std::move(*created);
    } else if (found.error().code() == Errc::not_found) {
      return unexpected(Errc::not_found, "SQS queue '" + std::string(queue) + "' does not exist at " + endpoint_shown +
                                             " — create it (and its dead-letter queue) or add create=1 to the URL");
    } else {
      return unexpected(found.error().code(),
                        "looking up SQS queue '" + std::string(queue) + "' failed: " + found.error().message());
    }
  }
  // A created queue gets its dead-letter queue too (not a DLQ's DLQ).
  if (options.create_queues && !is_dead_letter_queue(queue) && options.dead_letter_queue_url.empty()) {
    std::string dlq(queue);
    if (dlq.ends_with(kFifoSuffix)) dlq.resize(dlq.size() - kFifoSuffix.size());
    dlq += kDeadLetterSuffix;
    if (queue.ends_with(kFifoSuffix)) dlq += kFifoSuffix;
    auto resolved = resolve(dlq);
    if (!resolved) return unexpected(resolved.error());
  }
  const std::lock_guard lock(urls_mutex);
  urls.emplace(std::string(queue), url);
  return url;
}

Delivery sqs::Transport::State::to_delivery(std::string_view queue, const Value& message) const {
  Delivery delivery;
  delivery.queue = std::string(queue);
  if (const std::string* body = string_member(message, "Body")) delivery.body = *body;
  if (const std::string* handle = string_member(message, "ReceiptHandle")) delivery.token.text = *handle;
  const std::string* receive_count = nullptr;
  if (const Value* attributes = message.find("Attributes")) {
    receive_count = string_member(*attributes, "ApproximateReceiveCount");
    if (const std::string* group = string_member(*attributes, "MessageGroupId")) delivery.ordering_key = *group;
  }
  delivery.native_attempts = sqs_detail::native_attempts(receive_count);
  const std::string* schema_version = nullptr;
  if (const Value* attributes = message.find("MessageAttributes"); attributes != nullptr && attributes->is_object()) {
    for (const auto& [name, attribute] : attributes->as_object()) {
      const std::string* value = string_member(attribute, "StringValue");
      if (name == binding::kSqsAttributes.schema_version) schema_version = value;
      // The contract attributes are a projection of the body, not headers.
      if (value == nullptr || sqs_detail::is_contract_attribute(name)) continue;
      delivery.headers.emplace(name, *value);
    }
  }
  delivery.gate_rejection = binding::schema_version_gate(
      schema_version != nullptr ? std::optional<std::string_view>(*schema_version) : std::nullopt);
  return delivery;
}

DeleteQueue& sqs::Transport::State::delete_queue(const std::string& url) {
  const std::lock_guard lock(deletes_mutex);
  auto& slot = deletes[url];
  if (!slot) slot = std::make_unique<DeleteQueue>();
  return *slot;
}

// Deletes a batch; each entry's outcome goes to its PendingDelete.
Result<void> sqs::Transport::State::delete_batch(const std::string& url, std::span<PendingDelete* const> batch) {
  std::string body = "{\"QueueUrl\":";
  if (auto r = append_string(body, url, "the queue URL"); !r) return r;
  if (batch.size() == 1) {
    body.append(",\"ReceiptHandle\":");
    if (auto r = append_string(body, batch[0]->receipt_handle, "the receipt handle"); !r) return r;
    body.push_back('}');
    auto deleted = call("DeleteMessage", std::move(body));
    if (!deleted) batch[0]->error = deleted.error();
    return {};
  }
  body.append(",\"Entries\":[");
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (i > 0) body.push_back(',');
    body.append("{\"Id\":\"").append(std::to_string(i)).append("\",\"ReceiptHandle\":");
    if (auto r = append_string(body, batch[i]->receipt_handle, "the receipt handle"); !r) return r;
    body.push_back('}');
  }
  body.append("]}");
  auto deleted = call("DeleteMessageBatch", std::move(body));
  if (!deleted) {
    for (PendingDelete* pending : batch) pending->error = deleted.error();
    return {};
  }
  if (const Value* failed = deleted->find("Failed"); failed != nullptr && failed->is_array()) {
    for (const Value& entry : failed->as_array()) {
      const std::string* id = string_member(entry, "Id");
      std::size_t index = batch.size();
      if (id != nullptr) std::from_chars(id->data(), id->data() + id->size(), index);
      if (index >= batch.size()) continue;
      const std::string* code = string_member(entry, "Code");
      const std::string* message = string_member(entry, "Message");
      const std::string code_text = code != nullptr ? *code : std::string("unknown");
      batch[index]->error = ErrorInfo(errc_for(code_text, 400), "SQS DeleteMessageBatch entry failed: " + code_text +
                                                                    (message != nullptr ? ": " + *message : ""));
    }
  }
  return {};
}

Result<void> sqs::Transport::State::change_visibility(const Delivery& delivery, std::int64_t seconds,
                                                      std::string_view doing) {
  if (delivery.token.text.empty()) return unexpected(Errc::invalid_argument, "the delivery has no SQS receipt handle");
  auto url = resolve(delivery.queue);
  if (!url) return unexpected(url.error());
  std::string body = "{\"QueueUrl\":";
  if (auto r = append_string(body, *url, "the queue URL"); !r) return r;
  body.append(",\"ReceiptHandle\":");
  if (auto r = append_string(body, delivery.token.text, "the receipt handle"); !r) return r;
  body.append(",\"VisibilityTimeout\":").append(std::to_string(seconds)).append("}");
  auto changed = call("ChangeMessageVisibility", std::move(body));
  if (!changed) {
    if (changed.error().code() == Errc::not_found) {
      return unexpected(Errc::not_found, "cannot " + std::string(doing) + " a message of SQS queue '" + delivery.queue +
                                             "': it is not held by this delivery any more (already settled, or its "
                                             "visibility timeout passed and it was received again) — " +
                                             changed.error().message());
    }
    return unexpected(changed.error());
  }
  return {};
}

// ---- sqs::Transport ----------------------------------------------------------------------------

sqs::Transport::Transport(std::unique_ptr<State> state) : state_(std::move(state)) {}

sqs::Transport::~Transport() { close(); }

Result<std::unique_ptr<sqs::Transport>> sqs::Transport::open(Options options) {
  {
    TlsOptions files;
    files.ca_file = options.curl.ca_file;
    files.cert_file = options.curl.cert_file;
    files.key_file = options.curl.key_file;
    if (auto usable = files.check_files(); !usable) return unexpected(usable.error());
  }
  if (options.max_wait < seconds(0) || options.max_wait > kMaxWait) {
    return unexpected(Errc::invalid_argument, "the SQS long-poll wait must be 0 to 20 seconds");
  }
  if (options.visibility_timeout < seconds(0) || options.visibility_timeout > kMaxVisibility) {
    return unexpected(Errc::invalid_argument, "the SQS visibility timeout must be 0 to 43200 seconds");
  }
  if (options.request_timeout <= milliseconds(0)) {
    return unexpected(Errc::invalid_argument, "the SQS request timeout must be positive");
  }
  if (options.max_message_size == 0) {
    return unexpected(Errc::invalid_argument, "the SQS max_message_size must be at least 1 byte");
  }
  auto state = std::make_unique<State>(std::move(options));
  auto region = sqs::resolve_region(state->options.region, state->options.credentials.profile);
  if (!region) return unexpected(region.error());
  state->region = std::move(*region);
  auto credentials = sqs::resolve_credentials(state->options.credentials);
  if (!credentials) return unexpected(credentials.error());
  state->credentials = std::move(*credentials);
  std::string endpoint = state->options.endpoint;
  if (endpoint.empty()) endpoint = "https://sqs." + state->region + ".amazonaws.com";
  if (!is_queue_url(endpoint)) {
    return unexpected(Errc::invalid_argument, "the SQS endpoint must be an http:// or https:// URL, got '" +
                                                  redact_secrets(endpoint, endpoint) + "'");
  }
  if (endpoint.find('/', endpoint.find("://") + 3) == std::string::npos) endpoint += "/";
  const auto parsed = Url::parse(endpoint);
  state->endpoint_shown = parsed ? parsed->redacted() : "the SQS endpoint";
  state->endpoint_url = std::move(endpoint);
  state->http = state->options.http_client
                    ? state->options.http_client
                    : std::shared_ptr<sqs::HttpClient>(sqs::make_curl_http_client(state->options.curl));
  // Where the credentials came from, never what they are; and the proxy
  // the environment makes libcurl use, if any.
  const std::string proxy = state->options.http_client ? std::string() : sqs::proxy_of(state->endpoint_url);
  state->log(LogLevel::info, "sqs: region " + state->region + ", endpoint " + state->endpoint_shown +
                                 ", credentials from " + state->credentials.source +
                                 (proxy.empty() ? ", no proxy" : ", requests through " + proxy));
  return std::unique_ptr<sqs::Transport>(new sqs::Transport(std::move(state)));
}

Result<sqs::Transport::Options> sqs::Transport::options_from_url(const Url& url) {
  if (url.scheme != "sqs") return unexpected(Errc::invalid_argument, "not an sqs:// URL: " + url.redacted());
  Options options;
  options.region = url.host;
  UrlOptionReader read(url);
  read.text("endpoint", options.endpoint);
  read.text("prefix", options.queue_url_prefix);
  read.flag("fifo", options.fifo);
  read.text("group_id", options.group_id);
  // SQS takes both in whole seconds: the seconds fields accept nothing finer.
  read.duration("wait_time", options.max_wait, {.max = kMaxWait});
  read.duration("visibility_timeout", options.visibility_timeout, {.max = kMaxVisibility});
  read.flag("content_dedup", options.content_dedup);
  read.flag("create", options.create_queues);
  read.text("dead_letter_queue_url", options.dead_letter_queue_url);
  read.text("profile", options.credentials.profile);
  // A millisecond field, held to whole seconds as the URL has always taken it.
  read.duration("request_timeout", options.request_timeout,
                {.min = seconds(1), .max = std::chrono::hours(1), .step = seconds(1)});
  read.integer("max_message_size", options.max_message_size, kMinMessageSize, kMaxMessageSize);
  // TLS is on whenever the endpoint is https, which the URL may not show
  // (the default endpoint is); libcurl ignores these settings for http, so
  // they are accepted with any endpoint, as ca_file always was.
  TlsOptions tls;
  tls.enabled = true;
  read.tls(tls, "an https endpoint");
  if (auto done = read.finish(); !done) return unexpected(done.error());
  if (!url.path.empty() || !url.user.empty() || url.port) {
    return unexpected(Errc::invalid_argument, "an sqs:// URL is sqs://[region][?options], got " + url.redacted());
  }
  if (!tls.server_name.empty()) {
    return unexpected(Errc::invalid_argument,
                      "sqs:// URL: parameter 'tls_server_name' is not available: libcurl checks the endpoint's "
                      "certificate against the endpoint's host; write the endpoint with the name its certificate "
                      "carries");
  }
  if (auto checked = tls.check(); !checked) return unexpected(checked.error());
  options.curl.ca_file = tls.ca_file;
  options.curl.cert_file = tls.cert_file;
  options.curl.key_file = tls.key_file;
  options.curl.verify = tls.verify;
  return options;
}

const sqs::Transport::Options& sqs::Transport::options() const noexcept { return state_->options; }

Capabilities sqs::Transport::capabilities() const {
  Capabilities caps;
  caps.headers = true;
  caps.native_delay = !state_->options.fifo;  // FIFO queues have no per-message delay
  caps.native_release = true;
  caps.delivery_count = true;
  caps.redelivers_unsettled = true;
  caps.extendable_lease = true;
  caps.batch_publish = true;
  caps.ordered = state_->options.fifo;
  // Capabilities are promised for every queue the transport serves. A queue
  // named *.fifo always gets its MessageGroupId (the ordering key) and
  // MessageDeduplicationId, and receive reads the group back; but without
  // fifo=1 the same transport also serves standard queues, which have
  // neither, so only fifo=1 promises them.
  caps.ordering_key = state_->options.fifo;
  caps.deduplication = state_->options.fifo;
  caps.batch_ack = true;  // DeleteMessageBatch
  caps.max_delay = kMaxDelay;
  caps.lease = state_->options.visibility_timeout;
  caps.broker_dead_letter_policy = true;
  return caps;
}

Result<void> sqs::Transport::publish(std::string_view queue, std::string_view body, const PublishOptions& options) {
  if (state_->closed.load()) return closed_error();
  if (auto r = check_queue_name(queue); !r) return r;
  if (auto r = check_delay(queue, options.delay); !r) return r;
  auto url = state_->resolve(queue);
  if (!url) return unexpected(url.error());
  std::string request;
  request.reserve(body.size() + 512);
  request.append("{\"QueueUrl\":");
  if (auto r = append_string(request, *url, "the queue URL"); !r) return r;
  request.push_back(',');
  if (auto r = append_message_fields(request, queue, body, options, state_->options); !r) return r;
  request.push_back('}');
  auto sent = state_->call("SendMessage", std::move(request));
  if (!sent) {
    return unexpected(sent.error().code(),
                      "publishing to SQS queue '" + std::string(queue) + "' failed: " + sent.error().message());
  }
  return {};
}

Result<void> sqs::Transport::publish_batch(std::span<const OutgoingMessage> messages) {
  if (state_->closed.load()) return closed_error();
  std::size_t published = 0;
  // Consecutive messages of one queue go together, 10 (and 256 KiB) per call.
  std::size_t start = 0;
  while (start < messages.size()) {
    const std::string& queue = messages[start].queue;
    std::size_t end = start;
    std::size_t bytes = 0;
    while (end < messages.size() && end - start < kMaxBatch && messages[end].queue == queue &&
           (end == start || bytes + messages[end].body.size() <= kMaxBatchBytes - 16 * 1024)) {
      bytes += messages[end].body.size();
      ++end;
    }
    auto failed = [&](const ErrorInfo& error) {
      return unexpected(error.code(), "publish_batch stopped after " + std::to_string(published) + " of " +
                                          std::to_string(messages.size()) + " messages: " + error.message());
    };
    if (auto r = check_queue_name(queue); !r) return failed(r.error());
    for (std::size_t i = start; i < end; ++i) {
      if (auto r = check_delay(queue, messages[i].options.delay); !r) return failed(r.error());
    }
    auto url = state_->resolve(queue);
    if (!url) return failed(url.error());
    std::string request;
    request.reserve(bytes + 1024);
    request.append("{\"QueueUrl\":");
    if (auto r = append_string(request, *url, "the queue URL"); !r) return failed(r.error());
    request.append(",\"Entries\":[");
    for (std::size_t i = start; i < end; ++i) {
      if (i > start) request.push_back(',');
      request.append("{\"Id\":\"").append(std::to_string(i - start)).append("\",");
      if (auto r = append_message_fields(request, queue, messages[i].body, messages[i].options, state_->options); !r) {
        return failed(r.error());
      }
      request.push_back('}');
    }
    request.append("]}");
    auto sent = state_->call("SendMessageBatch", std::move(request));
    if (!sent) return failed(sent.error());
    std::size_t accepted = end - start;
    if (const Value* failures = sent->find("Failed");
        failures != nullptr && failures->is_array() && !failures->as_array().empty()) {
      const Value& first = failures->as_array().front();
      const std::string* code = string_member(first, "Code");
      const std::string* message = string_member(first, "Message");
      accepted -= failures->as_array().size();
      published += accepted;
      const std::string code_text = code != nullptr ? *code : std::string("unknown");
      return failed(ErrorInfo(errc_for(code_text, 400),
                              "SQS refused " + std::to_string(failures->as_array().size()) + " of a batch to '" +
                                  queue + "' (" + std::to_string(accepted) + " of it accepted): " + code_text +
                                  (message != nullptr ? ": " + *message : "")));
    }
    published += accepted;
    start = end;
  }
  return {};
}

Result<std::vector<Delivery>> sqs::Transport::receive(std::string_view queue, std::size_t max, milliseconds wait) {
  if (state_->closed.load()) return closed_error();
  if (auto r = check_queue_name(queue); !r) return unexpected(r.error());
  if (max == 0) return unexpected(Errc::invalid_argument, "receive needs max >= 1");
  auto url = state_->resolve(queue);
  if (!url) return unexpected(url.error());
  const auto deadline = babelqueue::detail::saturating_after(Clock::now(), std::max(wait, milliseconds(0)));
  const std::size_t count = std::min(max, kMaxBatch);
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    // Long polls take whole seconds: the wait's whole seconds (a few
    // milliseconds short counts as whole), the rest in short polls.
    const std::int64_t wait_seconds = std::clamp<std::int64_t>(
        (left + kWaitRounding).count() / 1000, 0, static_cast<std::int64_t>(state_->options.max_wait.count()));
    std::string request = "{\"QueueUrl\":";
    if (auto r = append_string(request, *url, "the queue URL"); !r) return unexpected(r.error());
    request.append(",\"MaxNumberOfMessages\":").append(std::to_string(count));
    request.append(",\"WaitTimeSeconds\":").append(std::to_string(wait_seconds));
    request.append(",\"VisibilityTimeout\":").append(std::to_string(state_->options.visibility_timeout.count()));
    // A FIFO message's group is asked for too: a retry republishes in it.
    request.append(is_fifo(queue) ? R"(,"AttributeNames":["ApproximateReceiveCount","MessageGroupId"])"
                                  : R"(,"AttributeNames":["ApproximateReceiveCount"])");
    request.append(R"(,"MessageAttributeNames":["All"]})");
    auto received = state_->call("ReceiveMessage", std::move(request), seconds(wait_seconds), true);
    if (!received) {
      if (received.error().code() == Errc::closed) return unexpected(received.error());
      return unexpected(received.error().code(),
                        "receiving from SQS queue '" + std::string(queue) + "' failed: " + received.error().message());
    }
    std::vector<Delivery> deliveries;
    // A long poll grants the visibility timeout when it answers, at a moment
    // of the wait the client cannot know: the reply's arrival is the nearest.
    const auto lease_deadline = Clock::now() + state_->options.visibility_timeout;
    if (const Value* messages = received->find("Messages"); messages != nullptr && messages->is_array()) {
      deliveries.reserve(messages->as_array().size());
      for (const Value& message : messages->as_array()) {
        deliveries.push_back(state_->to_delivery(queue, message));
        deliveries.back().lease_deadline = lease_deadline;
      }
    }
    if (!deliveries.empty()) return deliveries;
    const auto now = Clock::now();
    if (now >= deadline) return deliveries;
    if (wait_seconds == 0) {
      state_->pause(std::min(kShortPollPause, std::chrono::duration_cast<milliseconds>(deadline - now)));
      if (state_->closed.load()) return closed_error();
    }
  }
}

Result<void> sqs::Transport::ack(const Delivery& delivery) {
  if (state_->closed.load()) return closed_error();
  if (delivery.token.text.empty()) return unexpected(Errc::invalid_argument, "the delivery has no SQS receipt handle");
  auto url = state_->resolve(delivery.queue);
  if (!url) return unexpected(url.error());
  DeleteQueue& deletes = state_->delete_queue(*url);
  PendingDelete mine;
  mine.receipt_handle = delivery.token.text;
  std::unique_lock lock(deletes.mutex);
  deletes.waiting.push_back(&mine);
  while (!mine.done) {
    if (deletes.in_flight) {
      deletes.settled.wait(lock);
      continue;
    }
    // Lead one call with everything gathered so far (up to 10).
    std::vector<PendingDelete*> batch;
    while (!deletes.waiting.empty() && batch.size() < kMaxBatch) {
      batch.push_back(deletes.waiting.front());
      deletes.waiting.pop_front();
    }
    deletes.in_flight = true;
    lock.unlock();
    auto sent = state_->delete_batch(*url, batch);
    if (!sent) {
      for (PendingDelete* pending : batch) pending->error = sent.error();
    }
    lock.lock();
    for (PendingDelete* pending : batch) pending->done = true;
    deletes.in_flight = false;
    deletes.settled.notify_all();
  }
  if (mine.error) return unexpected(delete_error(delivery, *mine.error));
  return {};
}

Result<void> sqs::Transport::ack_batch(std::span<const Delivery> deliveries, std::vector<AckFailure>& failures) {
  const std::size_t before = failures.size();
  std::size_t start = 0;
  while (start < deliveries.size()) {
    const std::string& queue = deliveries[start].queue;
    std::size_t end = start;
    while (end < deliveries.size() && end - start < kMaxBatch && deliveries[end].queue == queue) ++end;
    std::vector<PendingDelete> pending(end - start);
    std::vector<PendingDelete*> batch;
    for (std::size_t i = start; i < end; ++i) {
      PendingDelete& entry = pending[i - start];
      if (deliveries[i].token.text.empty()) {
        entry.error = ErrorInfo(Errc::invalid_argument, "the delivery has no SQS receipt handle");
        continue;
      }
      entry.receipt_handle = deliveries[i].token.text;
      batch.push_back(&entry);
    }
    // Whatever fails for the whole call (closed, the queue's URL, the
    // request) fails each delivery of it.
    std::optional<ErrorInfo> failed;
    if (batch.empty()) {
      // nothing to send
    } else if (state_->closed.load()) {
      failed = closed_error().error;
    } else if (auto url = state_->resolve(queue); !url) {
      failed = url.error();
    } else if (auto sent = state_->delete_batch(*url, batch); !sent) {
      failed = sent.error();
    }
    for (std::size_t i = start; i < end; ++i) {
      const PendingDelete& entry = pending[i - start];
      const bool sent = !entry.receipt_handle.empty();
      const std::optional<ErrorInfo>& error = sent && failed ? failed : entry.error;
      if (error) failures.push_back(AckFailure{i, delete_error(deliveries[i], *error)});
    }
    start = end;
  }
  if (failures.size() == before) return {};
  const ErrorInfo& first = failures[before].error;
  return unexpected(first.code(), std::to_string(failures.size() - before) + " of " +
                                      std::to_string(deliveries.size()) +
                                      " SQS deletes failed; the first: " + first.message());
}

Result<void> sqs::Transport::release(const Delivery& delivery, milliseconds delay) {
  if (state_->closed.load()) return closed_error();
  const std::int64_t seconds_ = std::clamp<std::int64_t>(ceil_seconds(delay), 0, kMaxVisibility.count());
  return state_->change_visibility(delivery, seconds_, "release");
}

Result<void> sqs::Transport::extend(const Delivery& delivery, milliseconds lease) {
  if (state_->closed.load()) return closed_error();
  const std::int64_t seconds_ = std::clamp<std::int64_t>(ceil_seconds(lease), 0, kMaxVisibility.count());
  return state_->change_visibility(delivery, seconds_, "extend the visibility of");
}

std::string sqs::Transport::dead_letter_queue(std::string_view queue) const {
  if (!state_->options.dead_letter_queue_url.empty()) return state_->options.dead_letter_queue_url;
  std::string name(queue);
  const bool fifo = name.ends_with(kFifoSuffix);
  if (fifo) name.resize(name.size() - kFifoSuffix.size());
  name += kDeadLetterSuffix;
  if (fifo) name += kFifoSuffix;
  return name;
}

Result<std::vector<PeekedMessage>> sqs::Transport::peek(std::string_view queue, std::size_t /*max*/) {
  return unexpected(Errc::unsupported, "SQS cannot show the messages of queue '" + std::string(queue) +
                                           "' without receiving them (a receive hides them for the visibility "
                                           "timeout and counts toward the queue's maxReceiveCount)");
}

Result<QueueStats> sqs::Transport::stats(std::string_view queue) {
  if (state_->closed.load()) return closed_error();
  if (auto r = check_queue_name(queue); !r) return unexpected(r.error());
  auto url = state_->resolve(queue);
  if (!url) return unexpected(url.error());
  std::string request = "{\"QueueUrl\":";
  if (auto r = append_string(request, *url, "the queue URL"); !r) return unexpected(r.error());
  request.append(
      R"(,"AttributeNames":["ApproximateNumberOfMessages","ApproximateNumberOfMessagesNotVisible","ApproximateNumberOfMessagesDelayed"]})");
  auto answer = state_->call("GetQueueAttributes", std::move(request));
  if (!answer) {
    return unexpected(answer.error().code(), "reading the counts of SQS queue '" + std::string(queue) +
                                                 "' failed: " + answer.error().message());
  }
  QueueStats stats;
  const Value* attributes = answer->find("Attributes");
  auto count = [&](std::string_view name) -> std::int64_t {
    const std::string* text = attributes != nullptr ? string_member(*attributes, name) : nullptr;
    std::int64_t value = -1;
    if (text != nullptr) std::from_chars(text->data(), text->data() + text->size(), value);
    return value;
  };
  stats.ready = count("ApproximateNumberOfMessages");
  stats.reserved = count("ApproximateNumberOfMessagesNotVisible");
  stats.delayed = count("ApproximateNumberOfMessagesDelayed");
  return stats;
}

void sqs::Transport::close(milliseconds deadline) {
  if (state_->closed.exchange(true)) return;
  int abandoned = 0;
  {
    // Long polls and short-poll pauses end at once (they watch the flag);
    // publishes and settles in flight get until the deadline.
    std::unique_lock lock(state_->close_mutex);
    state_->close_signal.notify_all();
    state_->close_signal.wait_for(lock, deadline, [&] { return state_->calls_in_flight == 0; });
    abandoned = state_->calls_in_flight;
  }
  if (abandoned > 0) {
    state_->log(LogLevel::warning, "sqs: close gave up after " + format_duration(deadline) + " on " +
                                       std::to_string(abandoned) + " call(s) still in flight; aborting them");
  }
  state_->http->abort();
}

Result<std::string> sqs::Transport::queue_url(std::string_view queue) {
  if (state_->closed.load()) return closed_error();
  if (auto r = check_queue_name(queue); !r) return unexpected(r.error());
  return state_->resolve(queue);
}

Result<Value> sqs::Transport::request(std::string_view operation, const Value& input) {
  auto body = to_json(input);
  if (!body)
    return unexpected(Errc::invalid_argument,
                      "the SQS request input cannot be written as JSON: " + body.error().message());
  return state_->call(operation, std::move(*body));
}

namespace sqs {

void register_transport() { babelqueue::register_transport("sqs", url_factory<sqs::Transport>()); }

}  // namespace sqs
}  // namespace babelqueue
