# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::outbox (bq_component in CMakeLists.txt):
# SQLite 3.20 or newer (Debian: libsqlite3-dev) for the SQLite store.
bq_find_dependency(SQLite3 TARGET SQLite::SQLite3 PKG sqlite3>=3.20 VERSION 3.20 REQUIRED)
