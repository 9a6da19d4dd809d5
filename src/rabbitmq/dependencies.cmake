# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::rabbitmq (cmake/BabelQueueTransports.cmake).
bq_find_dependency(rabbitmq-c TARGET rabbitmq::rabbitmq PKG librabbitmq REQUIRED)
# OpenSSL: the IP-address check of the broker's certificate, which
# rabbitmq-c's own host name check does not do (X509_VERIFY_PARAM, libcrypto).
bq_find_dependency(OpenSSL TARGET OpenSSL::SSL PKG libssl VERSION 1.1 REQUIRED)
