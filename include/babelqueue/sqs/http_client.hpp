// SPDX-License-Identifier: Apache-2.0
// The HTTP seam of the SQS transport (library babelqueue::sqs).
//
// sqs::Transport speaks the SQS JSON protocol as signed HTTP POSTs through an
// HttpClient. The default one (make_curl_http_client) is libcurl with
// reused keep-alive connections; a program that already has an HTTP stack —
// or wants the official AWS SDK's — implements this interface and passes it
// in sqs::Transport::Options::http_client, as the Java SDK lets users pass
// their own SqsClient.
//
// Thread-safety: post() is called from several threads at once; abort() may
// be called from any thread while posts are in progress.
#pragma once

#include <babelqueue/result.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace babelqueue::sqs {

/// One POST to the SQS endpoint.
struct HttpRequest {
  std::string url;  ///< absolute: http(s)://host[:port]/path[?query]
  /// Sent as given, in this order (Host is derived from url by the client).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  ///< the JSON request
  /// The whole exchange must finish within this time (a long poll sets it
  /// above its wait).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  /// When set and it turns true, the post should stop at once with
  /// Errc::closed (the transport sets it on long polls, which close() ends
  /// without waiting for them). A client that ignores it stays correct, only
  /// slower to close.
  const std::atomic<bool>* cancel = nullptr;
};

/// The server's answer to a post.
struct HttpResponse {
  long status = 0;   ///< the HTTP status
  std::string body;  ///< the JSON answer
  /// The x-amzn-query-error response header ("Code;Sender"), where the
  /// server sends one: the error code in the query protocol's spelling.
  std::string query_error;
};

/// How the SQS transport sends its requests: make_curl_http_client() by
/// default, another for tests (Transport::Options::http_client).
class HttpClient {
 public:
  virtual ~HttpClient() = default;  ///< closes its connections
  HttpClient() = default;           ///< for derived classes
  /// A client owns its connections: it is neither copied nor assigned.
  ///@{
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  ///@}

  /// Sends one POST and returns whatever status the server answered. Fails
  /// only when no answer came: Errc::connection (unreachable, reset, TLS),
  /// Errc::timeout (nothing sent), Errc::outcome_unknown (the request was
  /// sent, its answer did not come: the server may have acted on it),
  /// Errc::closed (after abort()).
  virtual Result<HttpResponse> post(const HttpRequest& request) = 0;

  /// Makes posts in progress, and every later one, fail at once with
  /// Errc::closed (a long poll blocked in post() returns).
  virtual void abort() = 0;
};

/// TLS settings apply to https endpoints only (libcurl ignores them for
/// http), as TlsOptions of tls_options.hpp spells them in a URL.
struct CurlOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};  ///< TCP and TLS
  /// CA bundle for https endpoints; empty: the system's.
  std::string ca_file;
  /// Client certificate (PEM) for an endpoint that asks for one, and its
  /// private key (PEM).
  ///@{
  std::string cert_file;
  std::string key_file;
  ///@}
  /// false: neither the endpoint's certificate chain nor its host name is
  /// checked (tests only).
  bool verify = true;
  /// Idle connections kept for reuse; a post beyond them opens a new one.
  std::size_t max_idle_connections = 16;
};

/// The proxy libcurl sends a request for url through, as libcurl picks it
/// from the environment: http_proxy for http:// (lower case only),
/// https_proxy or HTTPS_PROXY for https://, else all_proxy or ALL_PROXY;
/// none when no_proxy (or NO_PROXY) lists the host ("*", the host itself, or
/// a domain it ends in). Text for logs and errors — "the proxy
/// http://proxy:3128 (https_proxy)", its credentials hidden — or empty when
/// requests go straight to the endpoint.
std::string proxy_of(std::string_view url);

/// libcurl (OpenSSL) with keep-alive: each post borrows an idle connection
/// handle from a pool and returns it, so sequential and concurrent calls
/// reuse TCP (and TLS) connections.
std::unique_ptr<HttpClient> make_curl_http_client(const CurlOptions& options = {});

}  // namespace babelqueue::sqs
