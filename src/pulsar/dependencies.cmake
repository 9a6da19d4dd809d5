# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::pulsar (cmake/BabelQueueTransports.cmake):
# Boost.Asio (header-only) and OpenSSL carry the protocol; the batch codecs.
bq_find_dependency(OpenSSL TARGET OpenSSL::SSL PKG libssl REQUIRED)
bq_find_dependency(Boost TARGET Boost::headers VERSION 1.70 REQUIRED)
bq_find_dependency(ZLIB TARGET ZLIB::ZLIB PKG zlib REQUIRED)
bq_find_dependency(LZ4 TARGET babelqueue_deps::lz4 PKG liblz4 REQUIRED)
bq_find_dependency(ZSTD TARGET babelqueue_deps::zstd PKG libzstd REQUIRED)
bq_find_dependency(Snappy TARGET Snappy::snappy PKG snappy REQUIRED)
