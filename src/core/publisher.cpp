// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/binding.hpp>
#include <babelqueue/publisher.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace babelqueue {

Result<void> PublisherOptions::check() const {
  auto bad = [](std::string_view field, const std::string& value, std::string_view expected) -> Result<void> {
    return unexpected(Errc::invalid_argument, "PublisherOptions::" + std::string(field) + " is " + value +
                                                  ", expected " + std::string(expected));
  };
  if (max_tries < 1 || max_tries > 1000) return bad("max_tries", std::to_string(max_tries), "a count from 1 to 1000");
  if (max_pending < 1 || max_pending > 1000000) {
    return bad("max_pending", std::to_string(max_pending), "a count from 1 to 1000000");
  }
  return retry_backoff.check("PublisherOptions::retry_backoff");
}

namespace {

PublishOptions transport_options(const PublishParams& params) {
  PublishOptions options;
  options.headers = params.headers;
  options.delay = params.delay;
  options.ordering_key = params.ordering_key;
  options.dedup_id = params.dedup_id;
  return options;
}

// meta.queue names the queue a dead letter goes back to, so it must be the
// queue the message is sent to.
Result<void> check_queue(const Envelope& envelope, std::string_view queue) {
  if (envelope.queue() == queue) return {};
  return unexpected(Errc::invalid_argument, "the envelope's meta.queue '" + std::string(envelope.queue()) +
                                                "' is not the queue it is published to, '" + std::string(queue) +
                                                "': nothing was sent");
}

std::string tries_text(std::int64_t tries) {
  return tries == 1 ? std::string("1 try") : std::to_string(tries) + " tries";
}

// One publish waiting for the Publisher's thread.
struct Job {
  std::string queue;
  Envelope envelope;
  Value data;
  PublishParams params;
  PublishCallback done;
};

}  // namespace

class Publisher::Impl {
 public:
  Impl(Transport& transport, std::unique_ptr<Transport> owned, PublisherOptions options)
      : owned_(std::move(owned)), transport_(transport), options_(checked(std::move(options))) {
    if (!options_.log) options_.log = [](LogLevel, std::string_view) {};
    for (const auto& m : options_.middleware) chain_.add(m);
    batch_native_ = transport_.capabilities().batch_publish;
  }

  ~Impl() {
    {
      std::unique_lock lock(mutex_);
      stopping_ = true;
      work_.notify_all();
    }
    // The thread finishes every job first: each callback is called.
    if (thread_.joinable()) thread_.join();
    if (owned_) owned_->close();
  }

  static PublisherOptions checked(PublisherOptions options) {
    if (auto ok = options.check(); !ok) throw Error(ok.error());
    return options;
  }

  // The queue a new message goes to.
  Result<std::string> target(const PublishParams& params) const {
    if (!params.queue.empty()) return params.queue;
    if (!options_.default_queue.empty()) return options_.default_queue;
    return unexpected(Errc::invalid_argument,
                      "no queue: set PublishParams::queue or PublisherOptions::default_queue; nothing was sent");
  }

  Result<MakeOptions> make_options(const PublishParams& params) const {
    auto queue = target(params);
    if (!queue) return unexpected(queue.error());
    MakeOptions make;
    make.queue = std::move(*queue);
    make.trace_id = params.trace_id;
    return make;
  }

  // The queue an envelope made elsewhere goes to, or why it is refused.
  static Result<std::string> target_of(const Envelope& envelope, const PublishParams& params) {
    if (const Acceptance verdict = accepts(envelope); !verdict) {
      return unexpected(
          ErrorInfo(Errc::rejected,
                    "not an acceptable envelope (" + std::string(to_string(*verdict.reason())) + "): nothing was sent",
                    false)
              .with_rejection(*verdict.reason()));
    }
    std::string queue = params.queue.empty() ? std::string(envelope.queue()) : params.queue;
    if (auto ok = check_queue(envelope, queue); !ok) return unexpected(ok.error());
    return queue;
  }

  // Sends one envelope through the middleware, then the transport, retrying
  // the send (not the middleware) as the options say.
  Result<PublishReceipt> send(std::string queue, Envelope envelope, const Value* data, const PublishParams& params) {
    std::int64_t tries = 0;
    auto deliver = [&](PublishRequest& request) -> Result<void> {
      // A middleware may have swapped the envelope: it must still name its queue.
      if (auto ok = check_queue(request.envelope, request.queue); !ok) return ok;
      const auto fields = binding::ContractFields::of(request.envelope);
      request.options.contract = &fields;
      auto sent = with_retries(request.queue, tries, [&] {
        return transport_.publish(request.queue, request.envelope.body(), request.options);
      });
      request.options.contract = nullptr;  // it pointed into this frame
      return sent;
    };
    PublishRequest request{std::move(queue), std::move(envelope), data, transport_options(params)};
    Result<void> sent = chain_.empty() ? deliver(request) : chain_.compose_publish(deliver)(request);
    if (!sent) return unexpected(sent.error());
    return PublishReceipt{std::string(request.envelope.id()), std::move(request.queue), tries};
  }

  Result<std::vector<PublishReceipt>> send_batch(std::vector<std::pair<std::string, const Envelope*>> items,
                                                 const PublishParams& params) {
    std::vector<PublishReceipt> receipts;
    receipts.reserve(items.size());
    if (!chain_.empty() || !batch_native_ || items.size() == 1) {
      // One by one: through the middleware, or a transport without a batch send.
      for (auto& [queue, envelope] : items) {
        auto receipt = send(std::move(queue), *envelope, nullptr, params);
        if (!receipt) {
          return unexpected(receipt.error().with_message(receipt.error().message() + " (" +
                                                         std::to_string(receipts.size()) + " of " +
                                                         std::to_string(items.size()) + " were published before it)"));
        }
        receipts.push_back(std::move(*receipt));
      }
      return receipts;
    }
    std::vector<binding::ContractFields> fields;
    fields.reserve(items.size());
    std::vector<OutgoingMessage> outgoing;
    outgoing.reserve(items.size());
    for (const auto& [queue, envelope] : items) {
      fields.push_back(binding::ContractFields::of(*envelope));
      OutgoingMessage message{queue, std::string(envelope->body()), transport_options(params)};
      message.options.contract = &fields.back();
      outgoing.push_back(std::move(message));
    }
    std::int64_t tries = 0;
    // A batch may fail part-way, so a re-send may repeat accepted messages:
    // it is retried only where an unknown outcome would be.
    auto sent = with_retries(
        items.size() > 1 ? std::string_view("a batch") : std::string_view(items.front().first), tries,
        [&] { return transport_.publish_batch(outgoing); }, /*resend_may_duplicate=*/true);
    if (!sent) return unexpected(sent.error());
    for (const auto& [queue, envelope] : items) receipts.push_back({std::string(envelope->id()), queue, tries});
    return receipts;
  }

  // ---- asynchronous ----

  void submit(Job job) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return jobs_.size() < options_.max_pending; });
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    jobs_.push_back(std::move(job));
    ++submitted_;
    work_.notify_one();
  }

  void flush() {
    std::unique_lock lock(mutex_);
    const std::uint64_t target = submitted_;
    idle_.wait(lock, [&] { return finished_ >= target; });
  }

  const PublisherOptions& options() const noexcept { return options_; }
  Transport& transport() noexcept { return transport_; }

 private:
  template <class Send>
  Result<void> with_retries(std::string_view what, std::int64_t& tries, Send&& send_once,
                            bool resend_may_duplicate = false) {
    for (;;) {
      ++tries;
      Result<void> sent = send_once();
      if (sent) return sent;
      const ErrorInfo& error = sent.error();
      const bool may_duplicate = resend_may_duplicate || error.outcome_unknown();
      const bool again =
          error.retriable() && (!may_duplicate || options_.retry_outcome_unknown) && tries < options_.max_tries;
      if (!again) {
        if (tries == 1) return sent;
        return unexpected(error.with_message(error.message() + " (after " + tries_text(tries) + ")"));
      }
      const auto pause = options_.retry_backoff.delay_for(tries);
      options_.log(LogLevel::warning, "publish to " + std::string(what) + " failed (" + error.message() + "); try " +
                                          std::to_string(tries + 1) + " of " + std::to_string(options_.max_tries) +
                                          " in " + std::to_string(pause.count()) + " ms");
      std::this_thread::sleep_for(pause);
    }
  }

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      room_.notify_one();
      lock.unlock();
      run(job);
      lock.lock();
      ++finished_;
      idle_.notify_all();
    }
  }

  void run(Job& job) {
    const Value* data = job.data.is_null() ? nullptr : &job.data;
    Result<PublishReceipt> outcome = send(std::move(job.queue), std::move(job.envelope), data, job.params);
    try {
      job.done(std::move(outcome));
    } catch (const std::exception& e) {
      options_.log(LogLevel::error, std::string("a publish callback threw: ") + e.what());
    } catch (...) {
      options_.log(LogLevel::error, "a publish callback threw");
    }
  }

  std::unique_ptr<Transport> owned_;
  Transport& transport_;
  PublisherOptions options_;
  MiddlewareChain chain_;
  bool batch_native_ = false;

  std::mutex mutex_;
  std::condition_variable work_;  // the thread: a job, or stopping
  std::condition_variable room_;  // submit(): below max_pending
  std::condition_variable idle_;  // flush(): a job finished
  std::deque<Job> jobs_;
  std::uint64_t submitted_ = 0;
  std::uint64_t finished_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

Publisher::Publisher(Transport& transport, PublisherOptions options)
    : impl_(std::make_unique<Impl>(transport, nullptr, std::move(options))) {}

Publisher::Publisher(std::unique_ptr<Transport> transport, PublisherOptions options) {
  if (!transport) throw Error(Errc::invalid_argument, "Publisher needs a transport");
  Transport& ref = *transport;
  impl_ = std::make_unique<Impl>(ref, std::move(transport), std::move(options));
}

Publisher::~Publisher() = default;

Result<MakeOptions> Publisher::make_options(const PublishParams& params) const { return impl_->make_options(params); }

Result<Envelope> Publisher::make(std::string_view urn, const Value& data, const PublishParams& params) const {
  auto options = make_options(params);
  if (!options) return unexpected(options.error());
  return Envelope::make(urn, data, *options);
}

Result<PublishReceipt> Publisher::publish(std::string_view urn, const Value& data, const PublishParams& params) {
  return publish_made(make(urn, data, params), &data, params);
}

Result<PublishReceipt> Publisher::publish_made(Result<Envelope> made, const Value* data, const PublishParams& params) {
  if (!made) return unexpected(made.error());
  std::string queue(made->queue());
  return impl_->send(std::move(queue), std::move(*made), data, params);
}

Result<PublishReceipt> Publisher::publish(const Envelope& envelope, const PublishParams& params) {
  auto queue = Impl::target_of(envelope, params);
  if (!queue) return unexpected(queue.error());
  return impl_->send(std::move(*queue), envelope, nullptr, params);
}

Result<std::vector<PublishReceipt>> Publisher::publish_batch(std::span<const Envelope> envelopes,
                                                             const PublishParams& params) {
  if (envelopes.empty()) return std::vector<PublishReceipt>{};
  std::vector<std::pair<std::string, const Envelope*>> items;
  items.reserve(envelopes.size());
  for (std::size_t i = 0; i < envelopes.size(); ++i) {
    auto queue = Impl::target_of(envelopes[i], params);
    if (!queue) {
      return unexpected(
          queue.error().with_message("message " + std::to_string(i) + " of the batch: " + queue.error().message()));
    }
    items.emplace_back(std::move(*queue), &envelopes[i]);
  }
  return impl_->send_batch(std::move(items), params);
}

void Publisher::publish_async(std::string_view urn, const Value& data, PublishCallback done,
                              const PublishParams& params) {
  publish_made_async(make(urn, data, params), data, std::move(done), params);
}

void Publisher::publish_made_async(Result<Envelope> made, Value data, PublishCallback done,
                                   const PublishParams& params) {
  if (!done) throw Error(Errc::invalid_argument, "publish_async needs a callback");
  if (!made) {
    done(unexpected(made.error()));
    return;
  }
  std::string queue(made->queue());
  impl_->submit(Job{std::move(queue), std::move(*made), std::move(data), params, std::move(done)});
}

std::future<Result<PublishReceipt>> Publisher::publish_async(std::string_view urn, const Value& data,
                                                             const PublishParams& params) {
  return future_of(make(urn, data, params), data, params);
}

std::future<Result<PublishReceipt>> Publisher::future_of(Result<Envelope> made, Value data,
                                                         const PublishParams& params) {
  auto promise = std::make_shared<std::promise<Result<PublishReceipt>>>();
  auto future = promise->get_future();
  publish_made_async(
      std::move(made), std::move(data),
      [promise](Result<PublishReceipt> outcome) { promise->set_value(std::move(outcome)); }, params);
  return future;
}

void Publisher::flush() { impl_->flush(); }
const PublisherOptions& Publisher::options() const noexcept { return impl_->options(); }
Transport& Publisher::transport() noexcept { return impl_->transport(); }

}  // namespace babelqueue
