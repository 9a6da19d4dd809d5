#include <babelqueue/sqs_http_client.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>
#include <vector>

namespace babelqueue::sqs {
namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlHandleDeleter {
  void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
};
using CurlHandle = std::unique_ptr<CURL, CurlHandleDeleter>;

struct HeaderListDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};
using HeaderList = std::unique_ptr<curl_slist, HeaderListDeleter>;

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  const std::string_view line(data, size * count);
  constexpr std::string_view kName = "x-amzn-query-error:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (std::size_t i = 0; i < kName.size() && match; ++i) {
      match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    }
    if (match) {
      std::string value(line.substr(kName.size()));
      const auto first = value.find_first_not_of(" \t");
      const auto last = value.find_last_not_of(" \t\r\n");
      *static_cast<std::string*>(user) =
          first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
    }
  }
  return size * count;
}

// The flags that stop a transfer: the client's abort() and the request's cancel.
struct StopFlags {
  const std::atomic<bool>* aborted;
  const std::atomic<bool>* cancel;
};

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* flags = static_cast<const StopFlags*>(user);
  const bool stop = flags->aborted->load() || (flags->cancel != nullptr && flags->cancel->load());
  return stop ? 1 : 0;  // non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK)
}

std::string host_of(const std::string& url) {
  const auto start = url.find("://");
  if (start == std::string::npos) return url;
  const auto end = url.find_first_of("/?", start + 3);
  return url.substr(start + 3, end == std::string::npos ? std::string::npos : end - start - 3);
}

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(CurlOptions options) : options_(std::move(options)) { init_curl_once(); }

  Result<HttpResponse> post(const HttpRequest& request) override {
    if (aborted_.load() || (request.cancel != nullptr && request.cancel->load())) {
      return unexpected(Errc::closed, "the SQS HTTP client is closed");
    }
    CurlHandle handle = borrow();
    if (!handle) return unexpected(Errc::internal, "curl_easy_init failed");
    CURL* curl = handle.get();

    HeaderList headers;
    for (const auto& [name, value] : request.headers) {
      curl_slist* grown = curl_slist_append(headers.get(), (name + ": " + value).c_str());
      if (grown == nullptr) return unexpected(Errc::internal, "out of memory building HTTP headers");
      static_cast<void>(headers.release());
      headers.reset(grown);
    }
    // No "Expect: 100-continue" round trip before larger bodies.
    curl_slist* grown = curl_slist_append(headers.get(), "Expect:");
    if (grown == nullptr) return unexpected(Errc::internal, "out of memory building HTTP headers");
    static_cast<void>(headers.release());
    headers.reset(grown);

    HttpResponse response;
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.query_error);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    const StopFlags stop{&aborted_, request.cancel};
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &stop);
    if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());

    const CURLcode code = curl_easy_perform(curl);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
    if (code != CURLE_OK) {
      // A failed handle may hold a broken connection: drop it.
      return unexpected(error_for(code, request.url));
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    give_back(std::move(handle));
    return response;
  }

  void abort() override { aborted_.store(true); }

 private:
  CurlHandle borrow() {
    {
      const std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        CurlHandle handle = std::move(idle_.back());
        idle_.pop_back();
        return handle;
      }
    }
    return CurlHandle(curl_easy_init());
  }

  void give_back(CurlHandle handle) {
    const std::lock_guard lock(mutex_);
    if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(handle));
  }

  ErrorInfo error_for(CURLcode code, const std::string& url) const {
    const std::string where = " (" + host_of(url) + "): " + curl_easy_strerror(code);
    switch (code) {
      case CURLE_ABORTED_BY_CALLBACK: return {Errc::closed, "the SQS HTTP client is closed"};
      case CURLE_OPERATION_TIMEDOUT: return {Errc::timeout, "the SQS request timed out" + where};
      case CURLE_SSL_CACERT_BADFILE:
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_SSL_CERTPROBLEM: return {Errc::connection, "TLS with the SQS endpoint failed" + where};
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL: return {Errc::invalid_argument, "the SQS endpoint URL is not usable" + where};
      default: return {Errc::connection, "cannot reach the SQS endpoint" + where};
    }
  }

  const CurlOptions options_;
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;
  std::vector<CurlHandle> idle_;
};

}  // namespace

std::unique_ptr<HttpClient> make_curl_http_client(const CurlOptions& options) {
  return std::make_unique<CurlHttpClient>(options);
}

}  // namespace babelqueue::sqs
