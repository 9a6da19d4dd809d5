# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::postgres (bq_component in CMakeLists.txt):
# libpq (Debian: libpq-dev), through CMake's FindPostgreSQL or pkg-config,
# and babelqueue::idempotency, whose Store it implements.
bq_find_dependency(PostgreSQL TARGET PostgreSQL::PostgreSQL PKG libpq REQUIRED)
if(NOT TARGET babelqueue::idempotency)
  bq_dependency_missing(babelqueue::idempotency REQUIRED "BABELQUEUE_WITH_IDEMPOTENCY is OFF")
endif()
