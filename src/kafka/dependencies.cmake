# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::kafka (cmake/BabelQueueTransports.cmake):
# librdkafka's C++ API, and the C API for the Admin calls (topic creation) it
# lacks.
bq_find_dependency(RdKafka TARGET RdKafka::rdkafka++ PKG rdkafka++ REQUIRED)
bq_find_dependency(RdKafkaC TARGET RdKafka::rdkafka PKG rdkafka REQUIRED)
