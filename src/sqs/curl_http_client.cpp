// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/sqs/http_client.hpp>
#include <babelqueue/url.hpp>

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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

struct CurlMultiDeleter {
  void operator()(CURLM* multi) const noexcept { curl_multi_cleanup(multi); }
};
using CurlMulti = std::unique_ptr<CURLM, CurlMultiDeleter>;

// One reusable connection: an easy handle driven by a multi handle of its
// own. The multi handle holds the connection cache (so keep-alive works from
// one request to the next) and lets a waiting request look at the stop flags
// every kStopCheckMs instead of libcurl's once-a-second progress callback, so
// close() interrupts a 20 s long poll at once.
struct Connection {
  CurlMulti multi;
  CurlHandle easy;
};
constexpr int kStopCheckMs = 25;

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

// The endpoint's host[:port] for errors, without its user information.
std::string host_of(const std::string& url) {
  const auto start = url.find("://");
  if (start == std::string::npos) return "the endpoint";
  const auto end = url.find_first_of("/?#", start + 3);
  std::string host = url.substr(start + 3, end == std::string::npos ? std::string::npos : end - start - 3);
  if (const auto at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  return host;
}

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(CurlOptions options) : options_(std::move(options)) { init_curl_once(); }

  Result<HttpResponse> post(const HttpRequest& request) override {
    if (stopped(request)) {
      return unexpected(Errc::closed, "the SQS HTTP client is closed");
    }
    Connection connection = borrow();
    if (!connection.easy || !connection.multi) return unexpected(Errc::internal, "curl_easy_init failed");
    CURL* curl = connection.easy.get();

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
    if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
    if (!options_.cert_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERT, options_.cert_file.c_str());
    if (!options_.key_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEY, options_.key_file.c_str());
    if (!options_.verify) {
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    }

    // libcurl's own sentence for a failure (it names a TLS alert, for one).
    char detail[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
    const CURLcode code = perform(connection, request);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
    if (code != CURLE_OK) {
      // A failed handle may hold a broken connection: drop it.
      // Whether the request went out decides between "not sent" and "sent,
      // no answer" (the server may have acted on it).
      long sent_bytes = 0;  // NOLINT(google-runtime-int): libcurl's type
      curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &sent_bytes);
      return unexpected(error_for(code, request.url, sent_bytes > 0, detail));
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    give_back(std::move(connection));
    return response;
  }

  void abort() override { aborted_.store(true); }

 private:
  bool stopped(const HttpRequest& request) const {
    return aborted_.load() || (request.cancel != nullptr && request.cancel->load());
  }

  // Runs the transfer to its end, or until abort() or the request's cancel
  // flag stops it (CURLE_ABORTED_BY_CALLBACK, reported as closed).
  CURLcode perform(Connection& connection, const HttpRequest& request) {
    CURLM* multi = connection.multi.get();
    CURL* easy = connection.easy.get();
    if (curl_multi_add_handle(multi, easy) != CURLM_OK) return CURLE_FAILED_INIT;
    CURLcode result = CURLE_OK;
    for (;;) {
      int running = 0;
      if (curl_multi_perform(multi, &running) != CURLM_OK) {
        result = CURLE_FAILED_INIT;
        break;
      }
      if (running == 0) {
        int left = 0;
        result = CURLE_GOT_NOTHING;
        while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
          if (message->msg == CURLMSG_DONE && message->easy_handle == easy) result = message->data.result;
        }
        break;
      }
      if (stopped(request)) {
        result = CURLE_ABORTED_BY_CALLBACK;
        break;
      }
      if (curl_multi_poll(multi, nullptr, 0, kStopCheckMs, nullptr) != CURLM_OK) {
        result = CURLE_FAILED_INIT;
        break;
      }
    }
    curl_multi_remove_handle(multi, easy);
    return result;
  }

  Connection borrow() {
    {
      const std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        Connection connection = std::move(idle_.back());
        idle_.pop_back();
        return connection;
      }
    }
    return Connection{CurlMulti(curl_multi_init()), CurlHandle(curl_easy_init())};
  }

  void give_back(Connection connection) {
    const std::lock_guard lock(mutex_);
    if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(connection));
  }

  ErrorInfo error_for(CURLcode code, const std::string& url, bool sent, std::string_view detail) const {
    // A proxy from the environment is named: it, not the endpoint, may be
    // what cannot be reached.
    const std::string proxy = proxy_of(url);
    const std::string where =
        " (" + host_of(url) + (proxy.empty() ? "" : ", through " + proxy) + "): " + curl_easy_strerror(code);
    const bool lost_answer = code == CURLE_OPERATION_TIMEDOUT || code == CURLE_RECV_ERROR ||
                             code == CURLE_GOT_NOTHING || code == CURLE_PARTIAL_FILE;
    // A TLS alert ends the session before the server's application read
    // the request (TLS 1.3 checks a client certificate after the client
    // already sent it): refused, not unknown.
    if (detail.find("alert") != std::string_view::npos) {
      return ErrorInfo(Errc::connection, "TLS with the SQS endpoint failed" + where + " (" + std::string(detail) + ")")
          .with_native("CURLcode " + std::to_string(static_cast<int>(code)), std::string(detail));
    }
    if (sent && lost_answer) {
      return ErrorInfo(Errc::outcome_unknown, "the SQS request was sent but no complete answer came" + where +
                                                  " (outcome unknown: SQS may have acted on it)")
          .with_native("CURLcode " + std::to_string(static_cast<int>(code)), curl_easy_strerror(code));
    }
    switch (code) {
      case CURLE_ABORTED_BY_CALLBACK: return {Errc::closed, "the SQS HTTP client is closed"};
      case CURLE_OPERATION_TIMEDOUT: return {Errc::timeout, "the SQS request timed out" + where};
      case CURLE_SSL_CACERT_BADFILE:
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CLIENTCERT: return {Errc::connection, "TLS with the SQS endpoint failed" + where};
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL: return {Errc::invalid_argument, "the SQS endpoint URL is not usable" + where};
      default: return {Errc::connection, "cannot reach the SQS endpoint" + where};
    }
  }

  const CurlOptions options_;
  std::atomic<bool> aborted_{false};
  std::mutex mutex_;
  std::vector<Connection> idle_;
};

}  // namespace

std::string proxy_of(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return {};
  const std::string_view scheme = url.substr(0, scheme_end);
  std::string host(url.substr(scheme_end + 3));
  host = host.substr(0, host.find_first_of("/?#"));
  if (const auto at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (const auto colon = host.rfind(':'); colon != std::string::npos) {
    host.erase(colon);
  }
  const auto variable = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
  // no_proxy: comma-separated names; "*" is every host; ".example.com" and
  // "example.com" both match example.com and its subdomains.
  for (const char* name : {"no_proxy", "NO_PROXY"}) {
    const auto list = variable(name);
    if (!list) continue;
    std::size_t start = 0;
    while (start <= list->size()) {
      const std::size_t end = std::min(list->find(',', start), list->size());
      std::string entry = list->substr(start, end - start);
      entry.erase(0, entry.find_first_not_of(" \t"));
      entry.erase(entry.find_last_not_of(" \t") + 1);
      if (!entry.empty() && entry.front() == '.') entry.erase(0, 1);
      if (entry == "*" || (!entry.empty() && (host == entry || (host.size() > entry.size() && host.ends_with(entry) &&
                                                                host[host.size() - entry.size() - 1] == '.')))) {
        return {};
      }
      start = end + 1;
    }
    break;  // libcurl reads the lower-case one when both are set
  }
  std::vector<const char*> names;
  if (scheme == "https") {
    names = {"https_proxy", "HTTPS_PROXY"};
  } else if (scheme == "http") {
    names = {"http_proxy"};  // never HTTP_PROXY: a CGI sets it from a request header
  }
  names.push_back("all_proxy");
  names.push_back("ALL_PROXY");
  for (const char* name : names) {
    if (const auto proxy = variable(name)) {
      return "the proxy " + redact_secrets(*proxy, *proxy) + " (" + name + ")";
    }
  }
  return {};
}

std::unique_ptr<HttpClient> make_curl_http_client(const CurlOptions& options) {
  return std::make_unique<CurlHttpClient>(options);
}

}  // namespace babelqueue::sqs
