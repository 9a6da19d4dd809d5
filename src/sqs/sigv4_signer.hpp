// SPDX-License-Identifier: Apache-2.0
// AWS Signature Version 4 (HMAC-SHA256, OpenSSL) for the SQS transport
// (library babelqueue::sqs). Verified by tests against the worked examples of
// AWS's SigV4 documentation and against botocore on the same inputs.
//
// Thread-safety: plain functions.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/sqs/credentials.hpp>
#include <babelqueue/sqs/http_client.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace babelqueue::sqs {

// Signs request for method: adds X-Amz-Date, X-Amz-Security-Token (when the
// credentials have a session token) and Authorization to request.headers.
// Every header already in request.headers is signed, plus host (taken from
// request.url). The URL's query is canonicalised (sorted, RFC 3986 encoded).
// Errc::invalid_argument for a URL that is not http(s)://host/...
Result<void> sign_v4(std::string_view method, HttpRequest& request, const AwsCredentials& credentials,
                     std::string_view region, std::string_view service, std::chrono::system_clock::time_point when);

// The derived signing key, lowercase hex (date is YYYYMMDD): the
// intermediate value AWS's documentation gives for its examples.
std::string sigv4_signing_key_hex(std::string_view secret_access_key, std::string_view date, std::string_view region,
                                  std::string_view service);

// Lowercase hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

}  // namespace babelqueue::sqs
