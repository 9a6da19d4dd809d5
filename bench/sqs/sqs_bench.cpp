// SPDX-License-Identifier: Apache-2.0
// SQS throughput: the SDK (sqs::Transport) against a raw loop of the same HTTP
// calls, in one run, on the same server.
//
//   publish: SDK publish_batch (10 per SendMessageBatch)  vs  raw SendMessageBatch
//   consume: SDK receive(10) + ack_batch (DeleteMessageBatch)  vs  raw ReceiveMessage + DeleteMessageBatch
//
// The raw loop is libcurl with one reused connection, the same SigV4 signer,
// and request bodies built per call from the message bytes and their
// precomputed attributes (what a hand-written client would send); answers are
// parsed with the same JSON reader. Raw and SDK each have their own fresh
// queue per round and run in lockstep, batch by batch.
//
//   sqs_bench [--url sqs://...] [--messages N] [--rounds R]
// Prints one line per measurement and the SDK/raw ratios (target >= 0.90).
#include "../../src/sqs/sigv4_signer.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/sqs/transport.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/worker.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace bq = babelqueue;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "sqs_bench: " << what << "\n";
  std::exit(1);
}

template <class T>
T must(bq::Result<T> result, const char* what) {
  if (!result) die(std::string(what) + ": " + result.error().message());
  return std::move(*result);
}

void must(const bq::Result<void>& result, const char* what) {
  if (!result) die(std::string(what) + ": " + result.error().message());
}

// The raw client: one libcurl handle (one keep-alive connection), signed
// POSTs of the SQS JSON protocol.
class RawClient {
 public:
  RawClient(std::string endpoint, std::string region, bq::sqs::AwsCredentials credentials)
      : endpoint_(std::move(endpoint)), region_(std::move(region)), credentials_(std::move(credentials)) {
    curl_ = curl_easy_init();
  }
  ~RawClient() { curl_easy_cleanup(curl_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bq::Value call(const char* operation, std::string body) {
    bq::sqs::HttpRequest request;
    request.url = endpoint_;
    request.body = std::move(body);
    request.headers = {{"Content-Type", "application/x-amz-json-1.0"},
                       {"X-Amz-Target", std::string("AmazonSQS.") + operation}};
    must(bq::sqs::sign_v4("POST", request, credentials_, region_, "sqs", std::chrono::system_clock::now()), "sign");
    curl_slist* headers = nullptr;
    for (const auto& [name, value] : request.headers)
      headers = curl_slist_append(headers, (name + ": " + value).c_str());
    headers = curl_slist_append(headers, "Expect:");
    std::string answer;
    curl_easy_setopt(curl_, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(
        curl_, CURLOPT_WRITEFUNCTION, +[](char* data, std::size_t size, std::size_t n, void* out) {
          static_cast<std::string*>(out)->append(data, size * n);
          return size * n;
        });
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &answer);
    const CURLcode code = curl_easy_perform(curl_);
    curl_slist_free_all(headers);
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    if (code != CURLE_OK || status != 200) {
      die(std::string("raw ") + operation + " failed: " + curl_easy_strerror(code) + " HTTP " + std::to_string(status) +
          " " + answer);
    }
    return must(bq::parse_json(answer), "parse the answer");
  }

 private:
  std::string endpoint_;
  std::string region_;
  bq::sqs::AwsCredentials credentials_;
  CURL* curl_ = nullptr;
};

struct Message {
  std::string body;
  std::string attributes_json;  // "MessageAttributes":{...}, as a raw client would keep it
};

std::vector<Message> make_messages(std::size_t count) {
  std::vector<Message> messages;
  messages.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    auto env = must(bq::Envelope::make("urn:bench:orders:created",
                                       bq::Value::object({{"order_id", i},
                                                          {"customer", "c-1042"},
                                                          {"total", 99.5},
                                                          {"items", bq::Value::array({"sku-1", "sku-2"})}})),
                    "make an envelope");
    Message m;
    m.body = std::string(env.body());
    std::string& a = m.attributes_json;
    auto text = [&](const char* name, const char* type, std::string_view value) {
      if (a.size() > 1) a += ",";
      a += "\"" + std::string(name) + "\":{\"DataType\":\"" + type + "\",\"StringValue\":";
      must(bq::write_json_string(a, value), "write");
      a += "}";
    };
    a = "{";
    text("bq-job", "String", env.urn());
    text("bq-trace-id", "String", env.trace_id());
    text("bq-message-id", "String", env.id());
    text("bq-schema-version", "Number", "1");
    text("bq-source-lang", "String", env.lang());
    text("bq-created-at", "Number", std::to_string(*env.created_at()));
    a += "}";
    messages.push_back(std::move(m));
  }
  return messages;
}

// The two sides run in lockstep — one batch of one, then one batch of the
// other, who goes first alternating — so both meet the same server load
// (this machine's other work, the JVM's warm-up) and the ratio stays
// meaningful even when the absolute figures move.
struct Timed {
  Clock::duration raw{};
  Clock::duration sdk{};
};

template <class F>
Clock::duration timed(F&& f) {
  const auto start = Clock::now();
  f();
  return Clock::now() - start;
}

void raw_publish_batch(RawClient& raw, const std::string& url, const std::vector<Message>& messages, std::size_t at) {
  std::string body = "{\"QueueUrl\":\"" + url + "\",\"Entries\":[";
  for (std::size_t i = at; i < std::min(at + 10, messages.size()); ++i) {
    if (i > at) body += ",";
    body += "{\"Id\":\"" + std::to_string(i - at) + "\",\"MessageBody\":";
    must(bq::write_json_string(body, messages[i].body), "write");
    body += ",\"MessageAttributes\":" + messages[i].attributes_json + "}";
  }
  body += "]}";
  const bq::Value answer = raw.call("SendMessageBatch", std::move(body));
  if (!answer["Failed"].is_null() && !answer["Failed"].as_array().empty()) die("raw SendMessageBatch: entries failed");
}

Timed publish(RawClient& raw, const std::string& raw_url, bq::sqs::Transport& sdk, const std::string& sdk_queue,
              const std::vector<Message>& messages) {
  std::vector<bq::OutgoingMessage> outgoing;
  outgoing.reserve(messages.size());
  for (const Message& m : messages) outgoing.push_back({sdk_queue, m.body, {}});
  Timed t;
  for (std::size_t at = 0; at < messages.size(); at += 10) {
    const std::size_t n = std::min<std::size_t>(10, messages.size() - at);
    auto raw_side = [&] { t.raw += timed([&] { raw_publish_batch(raw, raw_url, messages, at); }); };
    auto sdk_side = [&] {
      t.sdk += timed([&] { must(sdk.publish_batch(std::span(outgoing).subspan(at, n)), "SDK publish_batch"); });
    };
    if ((at / 10) % 2 == 0) {
      raw_side();
      sdk_side();
    } else {
      sdk_side();
      raw_side();
    }
  }
  return t;
}

// One raw ReceiveMessage + DeleteMessageBatch; how many it consumed.
std::size_t raw_consume_batch(RawClient& raw, const std::string& url) {
  const bq::Value answer = raw.call(
      "ReceiveMessage", "{\"QueueUrl\":\"" + url +
                            "\",\"MaxNumberOfMessages\":10,\"WaitTimeSeconds\":1,\"VisibilityTimeout\":30,"
                            "\"AttributeNames\":[\"ApproximateReceiveCount\"],\"MessageAttributeNames\":[\"All\"]}");
  const bq::Value& messages = answer["Messages"];
  if (!messages.is_array() || messages.as_array().empty()) return 0;
  std::string body = "{\"QueueUrl\":\"" + url + "\",\"Entries\":[";
  std::size_t i = 0;
  for (const bq::Value& m : messages.as_array()) {
    if (i > 0) body += ",";
    body += "{\"Id\":\"" + std::to_string(i++) + "\",\"ReceiptHandle\":";
    must(bq::write_json_string(body, m["ReceiptHandle"].as_string()), "write");
    body += "}";
  }
  body += "]}";
  raw.call("DeleteMessageBatch", std::move(body));
  return messages.as_array().size();
}

std::size_t sdk_consume_batch(bq::sqs::Transport& sdk, const std::string& queue) {
  auto batch = must(sdk.receive(queue, 10, std::chrono::seconds(1)), "SDK receive");
  if (batch.empty()) return 0;
  must(sdk.ack_batch(batch), "SDK ack_batch");
  return batch.size();
}

Timed consume(RawClient& raw, const std::string& raw_url, bq::sqs::Transport& sdk, const std::string& sdk_queue,
              std::size_t count) {
  Timed t;
  std::size_t raw_done = 0;
  std::size_t sdk_done = 0;
  for (std::size_t round = 0; raw_done < count || sdk_done < count; ++round) {
    auto raw_side = [&] {
      if (raw_done < count)
        t.raw += timed([&] {
          const std::size_t n = raw_consume_batch(raw, raw_url);
          if (n == 0) die("raw consume: the queue ran dry early");
          raw_done += n;
        });
    };
    auto sdk_side = [&] {
      if (sdk_done < count)
        t.sdk += timed([&] {
          const std::size_t n = sdk_consume_batch(sdk, sdk_queue);
          if (n == 0) die("SDK consume: the queue ran dry early");
          sdk_done += n;
        });
    };
    if (round % 2 == 0) {
      raw_side();
      sdk_side();
    } else {
      sdk_side();
      raw_side();
    }
  }
  return t;
}

double rate(std::size_t count, Clock::duration elapsed) {
  return static_cast<double>(count) / std::chrono::duration<double>(elapsed).count();
}

// The runtime's view (informational, not a lockstep ratio): a Worker with
// `concurrency` handler threads consuming count messages with a no-op
// handler; its acks meet in DeleteMessageBatch calls.
double worker_consume(bq::sqs::Transport& sdk, const std::vector<Message>& messages, std::size_t concurrency) {
  const std::string queue = "bq-bench-worker-" + bq::uuid_v4().substr(0, 8);
  std::vector<bq::OutgoingMessage> outgoing;
  for (const Message& m : messages) outgoing.push_back({queue, m.body, {}});
  for (std::size_t at = 0; at < outgoing.size(); at += 10) {
    must(sdk.publish_batch(std::span(outgoing).subspan(at, std::min<std::size_t>(10, outgoing.size() - at))),
         "fill the worker's queue");
  }
  bq::WorkerOptions options;
  options.concurrency = concurrency;
  options.log = [](bq::LogLevel, std::string_view) {};
  bq::Worker worker(sdk, options);
  worker.handle("urn:bench:orders:created", [](const bq::Message&) {});
  bq::RunLimits limits;
  limits.max_messages = messages.size();
  const auto start = Clock::now();
  must(worker.run({queue}, limits), "worker run");
  const double result = rate(messages.size(), Clock::now() - start);
  for (const std::string& name : {queue, queue + "-dlq"}) {
    if (auto url = sdk.queue_url(name))
      static_cast<void>(sdk.request("DeleteQueue", bq::Value::object({{"QueueUrl", *url}})));
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url_text;
  std::size_t count = 5000;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--url") {
      url_text = argv[i + 1];
    } else if (flag == "--messages") {
      count = std::stoul(argv[i + 1]);
    } else if (flag == "--rounds") {
      rounds = std::stoi(argv[i + 1]);
    } else {
      die("unknown flag " + flag);
    }
  }
  if (url_text.empty()) die("usage: sqs_bench --url sqs://REGION?endpoint=... [--messages N] [--rounds R]");
  if (url_text.find("create=") == std::string::npos)
    url_text += (url_text.find('?') == std::string::npos ? "?" : "&") + std::string("create=1");
  auto options = must(bq::sqs::Transport::options_from_url(must(bq::Url::parse(url_text), "parse the URL")), "options");
  auto sdk = must(bq::sqs::Transport::open(options), "open the SDK transport");
  auto credentials = must(bq::sqs::resolve_credentials(options.credentials), "credentials");
  auto region = must(bq::sqs::resolve_region(options.region), "region");
  std::string endpoint =
      options.endpoint.empty() ? "https://sqs." + region + ".amazonaws.com/" : options.endpoint + "/";
  RawClient raw(endpoint, region, credentials);

  const auto messages = make_messages(count);
  Timed published;
  Timed consumed;
  std::vector<std::string> queues;
  // Round 0 warms up both sides (connections, the server's JIT) and is not counted.
  for (int round = 0; round <= rounds; ++round) {
    const std::string raw_queue = "bq-bench-raw-" + bq::uuid_v4().substr(0, 8);
    const std::string sdk_queue = "bq-bench-sdk-" + bq::uuid_v4().substr(0, 8);
    const std::string raw_url = must(sdk->queue_url(raw_queue), "create the raw queue");
    must(sdk->queue_url(sdk_queue), "create the SDK queue");
    queues.insert(queues.end(), {raw_queue, raw_queue + "-dlq", sdk_queue, sdk_queue + "-dlq"});
    const std::vector<Message> warm_up(
        messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(count, 500)));
    const std::vector<Message>& batch = round == 0 ? warm_up : messages;
    const Timed p = publish(raw, raw_url, *sdk, sdk_queue, batch);
    const Timed c = consume(raw, raw_url, *sdk, sdk_queue, batch.size());
    if (round == 0) continue;
    std::printf("round %d: publish raw %.0f/s sdk %.0f/s | consume+delete raw %.0f/s sdk %.0f/s\n", round,
                rate(count, p.raw), rate(count, p.sdk), rate(count, c.raw), rate(count, c.sdk));
    published.raw += p.raw;
    published.sdk += p.sdk;
    consumed.raw += c.raw;
    consumed.sdk += c.sdk;
  }
  const std::size_t total = count * static_cast<std::size_t>(rounds);
  double best[4] = {rate(total, published.raw), rate(total, published.sdk), rate(total, consumed.raw),
                    rate(total, consumed.sdk)};
  for (const std::string& q : queues) {
    if (auto url = sdk->queue_url(q))
      static_cast<void>(sdk->request("DeleteQueue", bq::Value::object({{"QueueUrl", *url}})));
  }
  std::printf("messages %zu x %d rounds, all rounds together:\n", count, rounds);
  std::printf("publish (SendMessageBatch x10)        raw %8.0f msg/s  sdk %8.0f msg/s  sdk/raw %.2f\n", best[0],
              best[1], best[1] / best[0]);
  std::printf("consume+delete (Receive+DeleteBatch)  raw %8.0f msg/s  sdk %8.0f msg/s  sdk/raw %.2f\n", best[2],
              best[3], best[3] / best[2]);
  const bool ok = best[1] / best[0] >= 0.90 && best[3] / best[2] >= 0.90;
  std::printf("target sdk/raw >= 0.90: %s\n", ok ? "met" : "NOT met");
  for (const std::size_t concurrency : {1, 8}) {
    std::printf("runtime: Worker, concurrency %zu, no-op handler: %.0f msg/s (informational)\n", concurrency,
                worker_consume(*sdk, messages, concurrency));
  }
  return 0;
}
