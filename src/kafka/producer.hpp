// SPDX-License-Identifier: Apache-2.0
// The transport's librdkafka producer: produces records and waits for their
// delivery reports, serving the reports itself (there is no polling thread).
// Topic look-ups and stats use the same client through a Lease.
//
// Threads: any (publishing threads, the receiving thread re-injecting parked
// records, topic look-ups and stats); close() from the closing thread, once.
#pragma once

#include "client_support.hpp"

#include <babelqueue/kafka/transport.hpp>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>

namespace babelqueue::kafka::detail {

struct HeadersDeleter {
  void operator()(rd_kafka_headers_t* headers) const { rd_kafka_headers_destroy(headers); }
};
using HeadersPtr = std::unique_ptr<rd_kafka_headers_t, HeadersDeleter>;

void add_header(rd_kafka_headers_t* headers, std::string_view name, std::string_view value);

// One record about to be produced.
struct OutgoingRecord {
  std::string_view topic;  // NUL-terminated: a std::string the caller keeps
  std::string_view value;
  std::string_view key;
  bool has_key = false;
  HeadersPtr headers{rd_kafka_headers_new(8)};  // handed to librdkafka when produced
  std::int64_t timestamp = 0;                   // 0: the producer's clock
};

// The delivery reports a publication waits for: one per produced record.
// Threads: the publishing thread and whichever thread serves the report.
struct DeliveryGroup {
  std::mutex mutex;
  std::size_t remaining = 0;
  std::optional<ErrorInfo> first_error;

  void report(RdKafka::Message& message);

  // Waits for the reports, serving them itself (poll) as the raw client's
  // loop does: no hand-over to another thread on the way back.
  Result<void> wait(RdKafka::Producer& producer);
};

// Hands each delivery report to the DeliveryGroup of its record.
// Threads: those serving reports (Producer::poll callers).
class DeliveryReports final : public RdKafka::DeliveryReportCb {
 public:
  void dr_cb(RdKafka::Message& message) override;
};

class Producer {
 public:
  // closed is the transport's flag: a publication stops producing once it
  // is set. options and log must outlive the producer.
  Producer(const kafka::Transport::Options& options, const std::atomic<bool>& closed, LogEvents& log)
      : options_(options), closed_(closed), log_(log) {}
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  // Creates the client. Errc::invalid_argument for a property librdkafka refuses.
  Result<void> start();

  // Waits up to timeout for a bootstrap server to answer a metadata request.
  // The caller holds back librdkafka's log lines from before start()
  // (LogEvents::hold): they are passed on once a broker answered, dropped if
  // none did. Fails early, Errc::connection, once librdkafka finds every
  // broker down.
  Result<void> reach(std::chrono::milliseconds timeout);

  // The client, kept alive while the lease is held (close() waits for every
  // lease before it destroys the client). Threads: the thread that took it.
  class Lease {
   public:
    explicit Lease(Producer& producer) : producer_(producer), lock_(producer.lifetime_) {}
    RdKafka::Producer& client() const { return *producer_.client_; }

   private:
    Producer& producer_;
    std::shared_lock<std::shared_mutex> lock_;
  };

  // One publish in progress: add() hands each record to librdkafka at once
  // (so the broker thread can send while the caller builds the next ones),
  // finish() waits for every delivery report. Holds a lease until it is
  // destroyed. Threads: the one publishing thread that made it.
  class Publication {
   public:
    explicit Publication(Producer& producer) : producer_(producer), lease_(producer) {}
    Publication(const Publication&) = delete;
    Publication& operator=(const Publication&) = delete;
    // librdkafka points at group_ until each report is served.
    ~Publication() { (void)finish(); }

    // Produces out (its headers then belong to librdkafka). An error when
    // librdkafka refuses it; the records produced before it still count.
    Result<void> add(OutgoingRecord& out);

    // Waits for the report of every record produced: the first failure, if any.
    Result<void> finish();

    std::size_t produced() const noexcept { return produced_; }

   private:
    Producer& producer_;
    Lease lease_;
    DeliveryGroup group_;
    std::size_t produced_ = 0;
  };

  // Produces one record and waits for its delivery report.
  Result<void> produce_one(OutgoingRecord& out);

  // Waits until `until` for the records in flight, purges the rest, then
  // destroys the client once no lease is held.
  void close(Clock::time_point until);

 private:
  const kafka::Transport::Options& options_;
  const std::atomic<bool>& closed_;
  LogEvents& log_;
  DeliveryReports delivery_reports_;
  std::shared_mutex lifetime_;  // shared while the client is in use, unique to destroy it
  std::unique_ptr<RdKafka::Producer> client_;
  // The producer's message.max.bytes: the largest record (value, key and
  // headers) librdkafka accepts, for the error that names it.
  std::size_t max_message_bytes_ = 0;
};

}  // namespace babelqueue::kafka::detail
