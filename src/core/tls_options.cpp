// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/tls_options.hpp>

namespace babelqueue {

Result<void> TlsOptions::check() const {
  if (cert_file.empty() != key_file.empty()) {
    return unexpected(Errc::invalid_argument, "tls_cert and tls_key go together: give both or neither");
  }
  return {};
}

}  // namespace babelqueue
