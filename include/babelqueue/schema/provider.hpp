// SPDX-License-Identifier: Apache-2.0
// Provider: the schema of each URN, for the schema middleware. A URN
// without a schema is never validated (the family's ADR-0024: opt-in).
//
//   MapProvider        schemas given in code, built at once
//   DirectoryProvider  a registry directory as babelqueue-registry lays it
//                      out: registry.json, {"schemas": [{"urn": ...,
//                      "schema": "file.json", ...}]}, file paths relative to
//                      it; each schema read on first use and kept
//
// Thread-safety: schema_for() may be called from several threads at once.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/schema/schema.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace babelqueue::schema {

/// Where the schema middleware finds each URN's schema.
class Provider {
 public:
  virtual ~Provider() = default;
  /// The URN's schema; null when it has none. An error when it has one that
  /// cannot be read or is not a schema of the subset.
  virtual Result<std::shared_ptr<const Schema>> schema_for(std::string_view urn) = 0;
};

/// Schemas given in code, by URN.
class MapProvider final : public Provider {
 public:
  MapProvider() = default;  ///< no schemas yet
  /// Adds (or replaces) urn's schema from its JSON text. Errors as
  /// Schema::parse's.
  Result<void> add(std::string urn, std::string_view schema_json);
  /// Adds (or replaces) urn's schema.
  void add(std::string urn, Schema schema);

  Result<std::shared_ptr<const Schema>> schema_for(std::string_view urn) override;

 private:
  std::map<std::string, std::shared_ptr<const Schema>, std::less<>> schemas_;
};

/// Schemas read from a schema registry's directory (registry.json and the files
/// it names), each file on first use.
class DirectoryProvider final : public Provider {
 public:
  /// Reads the manifest: registry (a registry.json file, or the directory
  /// holding one). Entries with an empty urn or schema are skipped.
  /// Errc::not_found when it cannot be read, Errc::invalid_json /
  /// Errc::invalid_argument when it is not the registry's layout.
  static Result<std::unique_ptr<DirectoryProvider>> open(const std::filesystem::path& registry);

  ~DirectoryProvider() override;

  /// Loads the URN's file on first use (then keeps it). A file that is
  /// missing or not a schema is an error, every time it is asked for.
  Result<std::shared_ptr<const Schema>> schema_for(std::string_view urn) override;

 private:
  class State;
  explicit DirectoryProvider(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace babelqueue::schema
