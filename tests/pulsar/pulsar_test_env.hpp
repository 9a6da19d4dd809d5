// SPDX-License-Identifier: Apache-2.0
// Shared by the Pulsar tests: the broker's URLs and unique queue names.
#pragma once

#include "broker_env.hpp"

#include <babelqueue/pulsar/transport.hpp>
#include <babelqueue/uuid.hpp>

#include <string>

namespace babelqueue::testing {

inline std::string pulsar_url(const std::string& query = {}) {
  static const std::string base = broker_url("pulsar");
  return query.empty() ? base : base + "?" + query;
}

inline std::string pulsar_tls_url(const std::string& query = {}) {
  static const std::string base = broker_info("pulsar").at("tls_url");
  return query.empty() ? base : base + "?" + query;
}

inline std::string unique_queue(const std::string& role) { return "bq-test-" + role + "-" + uuid_v4().substr(0, 8); }

}  // namespace babelqueue::testing
