// SPDX-License-Identifier: Apache-2.0
// Shared by the SQS tests: the local server's URL and dummy credentials (the
// server accepts any; real AWS would refuse them).
#pragma once

#include "broker_env.hpp"

#include <babelqueue/sqs/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <cstdlib>
#include <string>

namespace babelqueue::testing {

inline void use_dummy_aws_credentials() {
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDBABELQUEUETEST", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "babelqueue-test-secret", 1);
  ::unsetenv("AWS_SESSION_TOKEN");
  ::unsetenv("AWS_PROFILE");
}

// sqs://us-east-1?endpoint=http://127.0.0.1:9324 plus extra parameters.
inline std::string sqs_url(const std::string& extra = "create=1") {
  static const std::string base = broker_url("sqs");
  if (extra.empty()) return base;
  return base + (base.find('?') == std::string::npos ? "?" : "&") + extra;
}

inline std::string unique_queue(const std::string& role) { return "bq-test-" + role + "-" + uuid_v4().substr(0, 8); }

}  // namespace babelqueue::testing
