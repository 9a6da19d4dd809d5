# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::sqs (cmake/BabelQueueTransports.cmake):
# libcurl (OpenSSL) for HTTP, OpenSSL's libcrypto for Signature Version 4.
bq_find_dependency(CURL TARGET CURL::libcurl PKG libcurl REQUIRED)
bq_find_dependency(OpenSSL TARGET OpenSSL::Crypto PKG libcrypto VERSION 1.1 REQUIRED)
