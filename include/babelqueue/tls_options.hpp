// SPDX-License-Identifier: Apache-2.0
// TlsOptions: one set of TLS settings, and one set of URL names for them,
// shared by every transport that speaks TLS.
//
// URL names (read by UrlOptionReader::tls):
//   tls_ca=PATH            PEM CA bundle that signs the server; empty: the system's trusted CAs
//   tls_cert=PATH          client certificate (PEM), for servers that ask for one
//   tls_key=PATH           its private key (PEM); tls_cert and tls_key go together
//   tls_server_name=NAME   the name checked against the server's certificate (and sent
//                          as SNI); empty: the URL's host
//   tls_verify=true|false  verify the certificate chain and name (default true;
//                          false is for tests only)
// Older spellings stay accepted: cacert, cert, key, verify (RabbitMQ's) and
// ca_file. How TLS is turned on is the transport's: a scheme (rediss://,
// amqps://) or a parameter; tls_ca, tls_cert, tls_key and tls_server_name
// without TLS are refused, so nobody believes a plain connection is secured.
//
// Thread-safety: a plain value.
#pragma once

#include <babelqueue/result.hpp>

#include <string>
#include <string_view>

namespace babelqueue {

/// The TLS settings every transport reads the same way (this header's opening
/// comment gives their URL names).
struct TlsOptions {
  bool enabled = false;     ///< TLS on (the scheme's TLS form, e.g. rediss://)
  std::string ca_file;      ///< PEM CA bundle; empty = the system's trusted CAs
  std::string cert_file;    ///< client certificate (PEM), with key_file
  std::string key_file;     ///< its private key (PEM)
  std::string server_name;  ///< name checked against the certificate; empty = the host
  bool verify = true;       ///< false disables certificate verification (tests only)

  /// Errc::invalid_argument when cert_file and key_file are not given together.
  Result<void> check() const;

  /// Errc::invalid_argument when a file given cannot be used: missing,
  /// unreadable, a directory, empty or without a PEM block — the message
  /// names the option, the file and the reason ("tls_ca '/etc/ca.pem' cannot
  /// be read: No such file or directory"), where a TLS library says only
  /// "asio.ssl error". Every transport runs it when it opens (not when it
  /// only reads a URL's options).
  Result<void> check_files() const;
};

}  // namespace babelqueue
