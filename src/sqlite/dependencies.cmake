# SPDX-License-Identifier: Apache-2.0
# The dependencies of babelqueue::sqlite (cmake/BabelQueueTransports.cmake).
# CMake's FindSQLite3 (libsqlite3-dev); 3.20 for sqlite3_prepare_v3.
bq_find_dependency(SQLite3 TARGET SQLite::SQLite3 PKG sqlite3>=3.20 VERSION 3.20 REQUIRED)
