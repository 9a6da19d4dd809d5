# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::redis (cmake/BabelQueueTransports.cmake).
bq_find_dependency(hiredis TARGET hiredis::hiredis PKG hiredis REQUIRED)
bq_find_dependency(OpenSSL TARGET OpenSSL::SSL PKG libssl REQUIRED)
bq_find_dependency(Boost TARGET Boost::headers VERSION 1.70 REQUIRED)
