# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::gdpr (bq_component in CMakeLists.txt):
# OpenSSL's libcrypto for AES-GCM, its random nonces and base64 (Debian:
# libssl-dev), and babelqueue::schema, whose x-gdpr-sensitive marks name
# the fields.
bq_find_dependency(OpenSSL TARGET OpenSSL::Crypto PKG libcrypto VERSION 1.1 REQUIRED)
if(NOT TARGET babelqueue::schema)
  bq_dependency_missing(babelqueue::schema REQUIRED "BABELQUEUE_WITH_SCHEMA is OFF")
endif()
