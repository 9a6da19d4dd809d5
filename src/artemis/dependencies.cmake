# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::artemis (cmake/BabelQueueTransports.cmake):
# those of the AMQP 1.0 layer it is built on, qpid-proton.
bq_find_dependency(QpidProton TARGET babelqueue_deps::qpid_proton REQUIRED)
