// SPDX-License-Identifier: Apache-2.0
#include "connection.hpp"

#include <babelqueue/error.hpp>
#include <babelqueue/url.hpp>

#include <algorithm>

namespace babelqueue::postgres_detail {

namespace {

std::string trimmed(const char* text) {
  std::string s = text != nullptr ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::open(std::string conninfo) {
  std::unique_ptr<Connection> c(new Connection(std::move(conninfo)));
  if (auto ok = c->connect(); !ok) return unexpected(ok.error());
  return c;
}

Connection::~Connection() {
  if (conn_ != nullptr) PQfinish(conn_);
}

Result<void> Connection::connect() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = PQconnectdb(conninfo_.c_str());
  if (PQstatus(conn_) == CONNECTION_OK) {
    // NOTICEs (CREATE ... IF NOT EXISTS on an existing table) are not
    // errors; libpq would print them on standard error.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    return {};
  }
  const std::string why = trimmed(PQerrorMessage(conn_));
  const bool refused_credentials =
      why.find("password authentication failed") != std::string::npos || why.find("no password") != std::string::npos;
  return unexpected(refused_credentials ? Errc::auth : Errc::connection,
                    "postgresql: cannot connect to " + describe() + ": " + why);
}

Result<QueryResult> Connection::exec(const std::string& sql, const std::vector<std::string>& params) {
  std::lock_guard lock(mutex_);
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  for (int attempt = 0;; ++attempt) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      if (auto ok = connect(); !ok) return unexpected(ok.error());
    }
    QueryResult r(
        PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0));
    const ExecStatusType status = PQresultStatus(r.get());
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
    // A dropped connection (server restart): once more on a new one.
    if (PQstatus(conn_) != CONNECTION_OK && attempt == 0) continue;
    const bool lost = PQstatus(conn_) != CONNECTION_OK;
    return unexpected(lost ? Errc::connection : Errc::broker,
                      "postgresql: " + trimmed(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_)));
  }
}

std::string Connection::describe() const {
  // From the connection, never the string: it may hold a password.
  if (conn_ == nullptr) return "postgresql://";
  return std::string("postgresql://") + PQhost(conn_) + ":" + PQport(conn_) + "/" + PQdb(conn_);
}

bool valid_identifier(std::string_view name) noexcept {
  if (name.empty() || name.size() > 63) return false;
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!letter(name.front())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

std::string conninfo_of(const Url& url, const std::vector<std::string_view>& own) {
  std::string out;
  auto add = [&out](std::string_view key, std::string_view value) {
    if (value.empty()) return;
    if (!out.empty()) out += ' ';
    out.append(key).append("='");
    for (const char c : value) {
      if (c == '\\' || c == '\'') out += '\\';
      out += c;
    }
    out += '\'';
  };
  add("host", url.host);
  if (url.port) add("port", std::to_string(*url.port));
  add("user", url.user);
  add("password", url.password);
  add("dbname", url.path);
  for (const auto& [key, value] : url.query) {
    if (std::find(own.begin(), own.end(), key) == own.end()) add(key, value);
  }
  return out;
}

}  // namespace babelqueue::postgres_detail
