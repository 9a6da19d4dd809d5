// SPDX-License-Identifier: Apache-2.0
#include "otlp_protobuf.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/otel/otlp_exporter.hpp>
#include <babelqueue/version.hpp>

#include <curl/curl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace babelqueue::otel {

namespace {

void global_curl_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t discard_body(char*, size_t size, size_t count, void*) { return size * count; }

}  // namespace

class OtlpExporter::Impl {
 public:
  explicit Impl(OtlpExporterOptions options) : options_(std::move(options)) {
    if (options_.endpoint.empty()) throw Error(Errc::invalid_argument, "the OTLP endpoint is empty");
    if (options_.max_queue_size == 0 || options_.max_export_batch_size == 0 ||
        options_.max_export_batch_size > options_.max_queue_size) {
      throw Error(Errc::invalid_argument,
                  "the OTLP exporter needs a queue of at least one span and a batch no larger than the queue");
    }
    resource_.attributes.push_back({"service.name", options_.service_name});
    for (const Attribute& a : options_.resource) {
      if (a.key != "service.name") resource_.attributes.push_back(a);
    }
    resource_.attributes.push_back({"telemetry.sdk.name", std::string("babelqueue-cpp")});
    resource_.attributes.push_back({"telemetry.sdk.language", std::string("cpp")});
    resource_.attributes.push_back({"telemetry.sdk.version", std::string(kVersion)});
    resource_.scope_name = "babelqueue";
    resource_.scope_version = std::string(kVersion);
    global_curl_init();
    thread_ = std::thread([this] { run(); });
  }

  ~Impl() { shutdown(options_.timeout); }

  void on_end(SpanData&& span) noexcept {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      if (stopping_ || queue_.size() >= options_.max_queue_size) {
        ++stats_.dropped;
        return;
      }
      try {
        queue_.push_back(std::move(span));
      } catch (...) {
        ++stats_.dropped;  // out of memory: the span is the one thing to give up
        return;
      }
      ++enqueued_;
      wake = queue_.size() == options_.max_export_batch_size;
    }
    if (wake) wake_.notify_one();
  }

  bool force_flush(std::chrono::milliseconds deadline) {
    std::unique_lock lock(mutex_);
    const std::uint64_t target = enqueued_;
    flush_target_ = std::max(flush_target_, target);
    wake_.notify_one();
    return done_.wait_for(lock, deadline, [&] { return finished_ >= target || thread_done_; }) && finished_ >= target;
  }

  void shutdown(std::chrono::milliseconds deadline) {
    const std::lock_guard one_at_a_time(shutdown_mutex_);
    {
      std::unique_lock lock(mutex_);
      if (!thread_.joinable()) return;
      stopping_ = true;
      flush_target_ = enqueued_;
      wake_.notify_one();
      if (!done_.wait_for(lock, deadline, [&] { return thread_done_; })) {
        // The collector is too slow to take the rest: abort the request in
        // flight, and what is left is dropped.
        abort_.store(true);
      }
    }
    thread_.join();
  }

  OtlpExporterStats stats() const {
    std::lock_guard lock(mutex_);
    OtlpExporterStats s = stats_;
    s.queued = queue_.size();
    return s;
  }

  const OtlpExporterOptions& options() const noexcept { return options_; }

 private:
  void run() {
    CURL* curl = curl_easy_init();
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/x-protobuf");
    for (const auto& [name, value] : options_.headers)
      headers = curl_slist_append(headers, (name + ": " + value).c_str());
    std::unique_lock lock(mutex_);
    auto next_export = std::chrono::steady_clock::now() + options_.schedule_delay;
    std::vector<SpanData> batch;
    std::string body;
    for (;;) {
      wake_.wait_until(lock, next_export, [&] {
        return stopping_ || queue_.size() >= options_.max_export_batch_size || flush_target_ > taken_;
      });
      if (abort_.load()) break;
      if (queue_.empty()) {
        if (stopping_) break;
        next_export = std::chrono::steady_clock::now() + options_.schedule_delay;
        continue;
      }
      const bool due = stopping_ || queue_.size() >= options_.max_export_batch_size || flush_target_ > taken_ ||
                       std::chrono::steady_clock::now() >= next_export;
      if (!due) continue;
      const std::size_t n = std::min(queue_.size(), options_.max_export_batch_size);
      batch.clear();
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      taken_ += n;
      ++stats_.requests;
      lock.unlock();
      body.clear();
      detail::encode_export_request(body, resource_, batch);
      const bool ok = curl != nullptr && post(curl, headers, body);
      lock.lock();
      if (ok) {
        stats_.exported += n;
      } else {
        stats_.failed += n;
      }
      finished_ += n;
      report(ok);
      done_.notify_all();
      next_export = std::chrono::steady_clock::now() + options_.schedule_delay;
    }
    // Aborted at the shutdown deadline: what is still queued is lost.
    stats_.dropped += queue_.size();
    finished_ += queue_.size();
    queue_.clear();
    thread_done_ = true;
    done_.notify_all();
    lock.unlock();
    curl_slist_free_all(headers);
    if (curl != nullptr) curl_easy_cleanup(curl);
  }

  bool post(CURL* curl, curl_slist* headers, const std::string& body) {
    curl_easy_setopt(curl, CURLOPT_URL, options_.endpoint.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout.count()));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.timeout.count()));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &discard_body);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &Impl::progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
    if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
    const CURLcode code = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (code != CURLE_OK) {
      last_error_ = curl_easy_strerror(code);
      return false;
    }
    if (status < 200 || status > 299) {
      last_error_ = "HTTP status " + std::to_string(status);
      return false;
    }
    return true;
  }

  // libcurl's progress callback: a non-zero return aborts the transfer.
  static int progress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<Impl*>(self)->abort_.load() ? 1 : 0;
  }

  // Once per change between accepting and failing. Under mutex_.
  void report(bool ok) {
    if (ok == healthy_) return;
    healthy_ = ok;
    if (!options_.log) return;
    if (ok) {
      options_.log(LogLevel::info, "the OTLP collector at " + options_.endpoint + " accepts spans again");
    } else {
      options_.log(LogLevel::warning, "the OTLP collector at " + options_.endpoint + " did not take a batch (" +
                                          last_error_ + "); its spans are lost, later ones are still sent");
    }
  }

  OtlpExporterOptions options_;
  detail::OtlpResource resource_;
  std::mutex shutdown_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;  // the thread: a full batch, a flush, a shutdown
  std::condition_variable done_;  // flushes and shutdown: a batch finished, the thread ended
  std::deque<SpanData> queue_;
  std::uint64_t enqueued_ = 0;      // spans ever queued
  std::uint64_t taken_ = 0;         // spans taken into a batch
  std::uint64_t finished_ = 0;      // spans exported, failed or dropped at the end
  std::uint64_t flush_target_ = 0;  // export at once until taken_ reaches it
  bool stopping_ = false;
  bool thread_done_ = false;
  bool healthy_ = true;
  std::string last_error_;  // the thread's only
  std::atomic<bool> abort_{false};
  OtlpExporterStats stats_;
  std::thread thread_;
};

OtlpExporter::OtlpExporter(OtlpExporterOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
OtlpExporter::~OtlpExporter() = default;
void OtlpExporter::on_end(SpanData&& span) noexcept { impl_->on_end(std::move(span)); }
bool OtlpExporter::force_flush(std::chrono::milliseconds deadline) { return impl_->force_flush(deadline); }
void OtlpExporter::shutdown(std::chrono::milliseconds deadline) { impl_->shutdown(deadline); }
OtlpExporterStats OtlpExporter::stats() const { return impl_->stats(); }
const OtlpExporterOptions& OtlpExporter::options() const noexcept { return impl_->options(); }

}  // namespace babelqueue::otel
