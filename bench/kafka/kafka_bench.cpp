// SPDX-License-Identifier: Apache-2.0
// babelqueue::kafka throughput against raw librdkafka loops doing the same
// work on the same payloads, in one run (docs/transports/kafka.md quotes it).
//
//   babelqueue_bench_kafka [--url kafka://127.0.0.1:9192] [--messages N] [--size BYTES] [--batch N]
//                          [--sync-messages N] [--rounds N] [--only batch|sync|consume]
//                          [--side sdk|raw]
//
// It prints each round, then for each measurement the best throughput of each
// side and their ratio (the target: SDK >= 90% of raw), and the least CPU time
// per message (every thread of the process, librdkafka's included) with the
// ratio raw/SDK: on a shared machine the CPU figures are the steadier ones.
//
// Each measurement gets fresh topics (and consumer groups). Both sides use the
// same producer settings (acks=all, enable.idempotence=true, linger.ms=1) and
// wait for the same delivery reports:
//   produce batch  SDK publish_batch(batch)  vs raw: produce batch records with the six bq- headers and the
//                  created_at timestamp, then wait for their delivery reports
//   produce sync   SDK publish() one by one  vs raw: produce one, wait for its report
//   consume        SDK receive(500) + ack each, commits by the transport every 100 ms, until N
//                  vs raw: consume, copy the value out, read bq-attempts and bq-schema-version in place
//                  (the C API, as the transport does), track the next offset per partition,
//                  commitSync of those offsets every 100 ms, until N; then both commit at the end and
//                  leave the group (SDK close(), raw commitSync + close()), inside the timing
// The order of SDK and raw alternates between rounds; the best round of each is reported.
#include "../../src/kafka/transport_access.hpp"

#include <babelqueue/envelope.hpp>
#include <babelqueue/kafka/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bq = babelqueue;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string url = "kafka://127.0.0.1:9192";
  std::size_t messages = 50000;
  std::size_t size = 256;
  std::size_t batch = 500;
  std::size_t sync_messages = 2000;
  int rounds = 2;
  std::string only;  // one measurement (for profiling); empty: all three
  std::string side;  // "sdk" or "raw" runs one side only (for profiling); empty: both
};

struct Payload {
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // what the SDK projects
  std::int64_t created_at = 0;
};

std::vector<Payload> make_payloads(const Config& config) {
  std::vector<Payload> out;
  out.reserve(config.messages);
  const std::string filler(config.size, 'x');
  for (std::size_t i = 0; i < config.messages; ++i) {
    auto env = bq::Envelope::make("urn:bench:kafka:item",
                                  bq::Value::object({{"n", static_cast<std::int64_t>(i)}, {"pad", filler}}));
    Payload p;
    p.body = std::string(env->body());
    p.created_at = *env->created_at();
    p.headers = {{"bq-job", std::string(env->urn())},          {"bq-trace-id", std::string(env->trace_id())},
                 {"bq-message-id", std::string(env->id())},    {"bq-schema-version", "1"},
                 {"bq-source-lang", std::string(env->lang())}, {"bq-attempts", "0"}};
    out.push_back(std::move(p));
  }
  return out;
}

std::string servers_of(const std::string& url) {
  auto parsed = bq::Url::parse(url);
  return parsed->host + (parsed->port ? ":" + std::to_string(*parsed->port) : "");
}

std::unique_ptr<bq::kafka::Transport> open_sdk(const Config& config, const std::string& group) {
  auto url = bq::Url::parse(config.url + (config.url.find('?') == std::string::npos ? "?" : "&") + "group=" + group);
  auto options = bq::kafka::Transport::options_from_url(*url);
  if (!options) {
    std::fprintf(stderr, "%s\n", options.error().message().c_str());
    std::exit(1);
  }
  auto opened = bq::kafka::Transport::open(*options);
  if (!opened) {
    std::fprintf(stderr, "%s\n", opened.error().message().c_str());
    std::exit(1);
  }
  return std::move(*opened);
}

// ---- raw librdkafka ----

class CountingReports final : public RdKafka::DeliveryReportCb {
 public:
  std::atomic<std::size_t> delivered{0};
  std::atomic<std::size_t> failed{0};
  void dr_cb(RdKafka::Message& message) override {
    if (message.err() != RdKafka::ERR_NO_ERROR) ++failed;
    ++delivered;
  }
};

std::unique_ptr<RdKafka::Producer> raw_producer(const std::string& servers, CountingReports& reports) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string error;
  for (const auto& [k, v] : std::map<std::string, std::string>{
           {"bootstrap.servers", servers}, {"acks", "all"}, {"enable.idempotence", "true"}, {"linger.ms", "1"}}) {
    conf->set(k, v, error);
  }
  conf->set("dr_cb", &reports, error);
  return std::unique_ptr<RdKafka::Producer>(RdKafka::Producer::create(conf.get(), error));
}

void raw_produce_one(RdKafka::Producer& producer, const std::string& topic, const Payload& p) {
  RdKafka::Headers* headers = RdKafka::Headers::create();
  for (const auto& [k, v] : p.headers) headers->add(k, v);
  while (producer.produce(topic, RdKafka::Topic::PARTITION_UA, RdKafka::Producer::RK_MSG_COPY,
                          const_cast<char*>(p.body.data()), p.body.size(), nullptr, 0, p.created_at, headers,
                          nullptr) == RdKafka::ERR__QUEUE_FULL) {
    producer.poll(1);
  }
}

// Waits until `target` reports arrived, in 1 ms flushes as the SDK waits: a
// flush serves the reports as a poll does, and sends what librdkafka holds
// without waiting out linger.ms.
void wait_reports(RdKafka::Producer& producer, CountingReports& reports, std::size_t target) {
  while (reports.delivered.load() < target) producer.flush(1);
}

double raw_produce_batch(const Config& config, const std::vector<Payload>& payloads, const std::string& topic) {
  CountingReports reports;
  auto producer = raw_producer(servers_of(config.url), reports);
  const auto start = Clock::now();
  std::size_t sent = 0;
  while (sent < payloads.size()) {
    const std::size_t end = std::min(payloads.size(), sent + config.batch);
    for (std::size_t i = sent; i < end; ++i) raw_produce_one(*producer, topic, payloads[i]);
    sent = end;
    wait_reports(*producer, reports, sent);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (reports.failed.load() != 0) std::fprintf(stderr, "raw produce: %zu failed\n", reports.failed.load());
  return static_cast<double>(payloads.size()) / seconds;
}

double raw_produce_sync(const Config& config, const std::vector<Payload>& payloads, const std::string& topic) {
  CountingReports reports;
  auto producer = raw_producer(servers_of(config.url), reports);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < config.sync_messages; ++i) {
    raw_produce_one(*producer, topic, payloads[i]);
    wait_reports(*producer, reports, i + 1);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(config.sync_messages) / seconds;
}

double raw_consume(const Config& config, const std::string& topic, std::size_t count) {
  std::unique_ptr<RdKafka::Conf> conf(RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string error;
  for (const auto& [k, v] : std::map<std::string, std::string>{{"bootstrap.servers", servers_of(config.url)},
                                                               {"group.id", "bench-raw-" + bq::uuid_v4()},
                                                               {"enable.auto.commit", "false"},
                                                               {"auto.offset.reset", "earliest"},
                                                               {"session.timeout.ms", "10000"},
                                                               {"enable.partition.eof", "false"}}) {
    conf->set(k, v, error);
  }
  std::unique_ptr<RdKafka::KafkaConsumer> consumer(RdKafka::KafkaConsumer::create(conf.get(), error));
  consumer->subscribe({topic});
  std::map<std::int32_t, std::int64_t> next;  // partition -> offset to commit
  auto commit = [&] {
    std::vector<RdKafka::TopicPartition*> offsets;
    for (const auto& [partition, offset] : next)
      offsets.push_back(RdKafka::TopicPartition::create(topic, partition, offset));
    if (!offsets.empty()) consumer->commitSync(offsets);
    RdKafka::TopicPartition::destroy(offsets);
  };
  std::size_t received = 0;
  std::size_t bytes = 0;
  Clock::time_point start{};
  auto last_commit = Clock::now();
  while (received < count) {
    std::unique_ptr<RdKafka::Message> message(consumer->consume(100));
    if (message->err() != RdKafka::ERR_NO_ERROR) continue;
    if (received == 0) start = Clock::now();  // from the first record: group joins are not measured
    // The same work as the transport: the value copied out, the two headers
    // it reads (bq-attempts, bq-schema-version) looked at in place.
    std::string value(static_cast<const char*>(message->payload()), message->len());
    rd_kafka_headers_t* headers = nullptr;
    std::size_t found = 0;
    if (rd_kafka_message_headers(message->c_ptr(), &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const void* text = nullptr;
      std::size_t size = 0;
      for (const char* name : {"bq-attempts", "bq-schema-version"}) {
        if (rd_kafka_header_get_last(headers, name, &text, &size) == RD_KAFKA_RESP_ERR_NO_ERROR) found += size;
      }
    }
    bytes += value.size() + found;
    next[message->partition()] = message->offset() + 1;
    ++received;
    if (Clock::now() - last_commit >= std::chrono::milliseconds(100)) {
      commit();
      last_commit = Clock::now();
    }
  }
  commit();
  consumer->close();  // as the SDK's close(): leaving the group is part of the run
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (bytes == 0) std::fprintf(stderr, "raw consume read nothing\n");
  return static_cast<double>(count - 1) / seconds;
}

// ---- the SDK ----

double sdk_produce_batch(const Config& config, const std::vector<Payload>& payloads, const std::string& topic) {
  auto transport = open_sdk(config, "bench-unused");
  if (!babelqueue::kafka::detail::TransportAccess::ensure_topic(*transport, topic)) std::exit(1);
  std::vector<bq::OutgoingMessage> batch(config.batch);
  const auto start = Clock::now();
  for (std::size_t sent = 0; sent < payloads.size();) {
    const std::size_t end = std::min(payloads.size(), sent + config.batch);
    batch.resize(end - sent);
    for (std::size_t i = sent; i < end; ++i) {
      batch[i - sent].queue = topic;
      batch[i - sent].body = payloads[i].body;
    }
    if (auto r = transport->publish_batch(batch); !r) {
      std::fprintf(stderr, "SDK publish_batch: %s\n", r.error().message().c_str());
      std::exit(1);
    }
    sent = end;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  transport->close();
  return static_cast<double>(payloads.size()) / seconds;
}

double sdk_produce_sync(const Config& config, const std::vector<Payload>& payloads, const std::string& topic) {
  auto transport = open_sdk(config, "bench-unused");
  if (!babelqueue::kafka::detail::TransportAccess::ensure_topic(*transport, topic)) std::exit(1);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < config.sync_messages; ++i) {
    if (auto r = transport->publish(topic, payloads[i].body); !r) {
      std::fprintf(stderr, "SDK publish: %s\n", r.error().message().c_str());
      std::exit(1);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  transport->close();
  return static_cast<double>(config.sync_messages) / seconds;
}

double sdk_consume(const Config& config, const std::string& topic, std::size_t count) {
  auto transport = open_sdk(config, "bench-sdk-" + bq::uuid_v4());
  std::size_t received = 0;
  std::size_t bytes = 0;
  Clock::time_point start{};
  while (received < count) {
    auto batch = transport->receive(topic, 500, std::chrono::milliseconds(100));
    if (!batch) {
      std::fprintf(stderr, "SDK receive: %s\n", batch.error().message().c_str());
      std::exit(1);
    }
    for (const auto& d : *batch) {
      if (received == 0) start = Clock::now();
      bytes += d.body.size() + d.headers.size();
      if (!transport->ack(d)) std::exit(1);
      ++received;
    }
  }
  transport->close();  // the final commit
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (bytes == 0) std::fprintf(stderr, "SDK consume read nothing\n");
  return static_cast<double>(count - 1) / seconds;
}

struct Row {
  std::string name;
  double sdk = 0;  // best throughput, messages/s
  double raw = 0;
  double sdk_cpu = 1e30;  // least CPU time per message (all threads of the process), µs
  double raw_cpu = 1e30;
};

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--url")
      config.url = value;
    else if (key == "--messages")
      config.messages = std::stoul(value);
    else if (key == "--size")
      config.size = std::stoul(value);
    else if (key == "--batch")
      config.batch = std::stoul(value);
    else if (key == "--sync-messages")
      config.sync_messages = std::stoul(value);
    else if (key == "--rounds")
      config.rounds = std::stoi(value);
    else if (key == "--only" && (value == "batch" || value == "sync" || value == "consume"))
      config.only = value;
    else if (key == "--side" && (value == "sdk" || value == "raw"))
      config.side = value;
    else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  config.sync_messages = std::min(config.sync_messages, config.messages);
  const auto payloads = make_payloads(config);
  const std::string run = bq::uuid_v4().substr(0, 8);
  std::vector<Row> rows{{"produce batch", 0, 0}, {"produce sync", 0, 0}, {"consume+commit", 0, 0}};
  for (int round = 0; round < config.rounds; ++round) {
    const std::string sdk_topic = "bench-sdk-" + run + "-" + std::to_string(round);
    const std::string raw_topic = "bench-raw-" + run + "-" + std::to_string(round);
    // Both topics are created by the transport (same partitions); each side
    // then consumes what it produced in the batch measurement.
    const bool sdk_first = round % 2 == 0;
    auto measure = [&, round](Row& row, std::size_t count, const std::function<double()>& sdk,
                              const std::function<double()>& raw) {
      double s = 0;
      double r = 0;
      double s_cpu = 0;
      double r_cpu = 0;
      auto timed = [&config, &sdk](const std::function<double()>& f, double& cpu) {
        if (!config.side.empty() && config.side != (&f == &sdk ? "sdk" : "raw")) return 1.0;  // not run
        const double before = process_cpu_seconds();
        const double rate = f();
        cpu = process_cpu_seconds() - before;
        return rate;
      };
      if (sdk_first) {
        s = timed(sdk, s_cpu);
        r = timed(raw, r_cpu);
      } else {
        r = timed(raw, r_cpu);
        s = timed(sdk, s_cpu);
      }
      s_cpu = s_cpu * 1e6 / static_cast<double>(count);
      r_cpu = r_cpu * 1e6 / static_cast<double>(count);
      std::printf("round %d %-16s SDK %9.0f msg/s %6.2f us CPU/msg   raw %9.0f msg/s %6.2f us CPU/msg  (%s first)\n",
                  round + 1, row.name.c_str(), s, s_cpu, r, r_cpu, sdk_first ? "SDK" : "raw");
      std::fflush(stdout);
      row.sdk = std::max(row.sdk, s);
      row.raw = std::max(row.raw, r);
      row.sdk_cpu = std::min(row.sdk_cpu, s_cpu);
      row.raw_cpu = std::min(row.raw_cpu, r_cpu);
    };
    {
      auto creator = open_sdk(config, "bench-unused");
      for (const auto* t : {&sdk_topic, &raw_topic}) {
        if (auto made = babelqueue::kafka::detail::TransportAccess::ensure_topic(*creator, *t); !made) {
          std::fprintf(stderr, "%s\n", made.error().message().c_str());
          return 1;
        }
        if (auto made = babelqueue::kafka::detail::TransportAccess::ensure_topic(*creator, *t + "-sync"); !made)
          return 1;
      }
      creator->close();
    }
    auto wanted = [&config](const char* name) { return config.only.empty() || config.only == name; };
    // The consume measurement reads what the batch measurement produced.
    if (wanted("batch") || wanted("consume"))
      measure(
          rows[0], payloads.size(), [&] { return sdk_produce_batch(config, payloads, sdk_topic); },
          [&] { return raw_produce_batch(config, payloads, raw_topic); });
    if (wanted("sync"))
      measure(
          rows[1], config.sync_messages, [&] { return sdk_produce_sync(config, payloads, sdk_topic + "-sync"); },
          [&] { return raw_produce_sync(config, payloads, raw_topic + "-sync"); });
    if (wanted("consume"))
      measure(
          rows[2], payloads.size(), [&] { return sdk_consume(config, sdk_topic, payloads.size()); },
          [&] { return raw_consume(config, raw_topic, payloads.size()); });
  }
  std::printf(
      "babelqueue::kafka vs raw librdkafka: %zu messages of %zu-byte envelopes, batch %zu, %zu sync, best of %d\n",
      config.messages, payloads.front().body.size(), config.batch, config.sync_messages, config.rounds);
  std::printf("%-16s %11s %11s %7s %12s %12s %7s %s\n", "measurement", "SDK msg/s", "raw msg/s", "ratio", "SDK us CPU",
              "raw us CPU", "ratio", "target >= 90% of raw");
  bool all_met = true;
  for (const Row& row : rows) {
    if (row.sdk == 0) continue;  // not measured (--only)
    const double ratio = row.sdk / row.raw;
    const double cpu_ratio = row.raw_cpu / row.sdk_cpu;  // raw cost / SDK cost: 100% = as cheap as raw
    const bool met = ratio >= 0.90;
    all_met = all_met && met;
    std::printf("%-16s %11.0f %11.0f %6.1f%% %12.2f %12.2f %6.1f%% %s\n", row.name.c_str(), row.sdk, row.raw,
                ratio * 100.0, row.sdk_cpu, row.raw_cpu, cpu_ratio * 100.0, met ? "met" : "MISSED (throughput)");
  }
  return all_met ? 0 : 3;
}
