// SPDX-License-Identifier: Apache-2.0
// Schema: a per-URN payload schema in the family's subset of JSON Schema
// draft-07 (the family's ADR-0024, library babelqueue::schema; docs/schema.md), checked
// against an envelope's `data`.
//
// The subset, exactly as the sibling SDKs read it:
//   type                  one name: object, array, string, integer, number,
//                         boolean, null (a list of names, or an unknown name,
//                         checks no type); a value of another type fails and
//                         nothing else is checked on it
//   required, properties  only where type is "object"
//   additionalProperties  false forbids keys properties does not name (a
//                         schema there is ignored); only where type is "object"
//   items                 one schema for every element; only where type is "array"
//   enum, const           JSON equality (1 equals 1.0), checked on every node
//   minLength             counted in Unicode code points; only where type is "string"
//   minimum               inclusive; only where type is "integer" or "number"
// An integral float (1.0) is an integer. x-gdpr-sensitive marks personal
// data (sensitive_paths) and checks nothing. Every other keyword is ignored.
// docs/schema.md lists the cases of the official JSON Schema test suite
// where the subset deliberately answers otherwise.
//
// Thread-safety: a Schema is immutable once built; validate() may run on
// any thread.
#pragma once

#include <babelqueue/result.hpp>
#include <babelqueue/value.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

/// Per-URN payload schemas and their middleware (library babelqueue::schema).
namespace babelqueue::schema {

/// One rule a value broke.
struct Violation {
  std::string pointer;  ///< JSON pointer into data ("" = data itself, "/items/0/sku")
  std::string rule;     ///< the keyword: type, required, additionalProperties, enum, const, minLength, minimum
  std::string message;  ///< what was expected, e.g. "must be >= 1"
};

/// A node of the schema marked `x-gdpr-sensitive` (the family's ADR-0030):
/// personal data that field encryption protects (babelqueue::gdpr). The mark
/// is validation-neutral: it changes no check.
struct SensitivePath {
  /// Where the node is in data, the family's way: property names joined by
  /// dots, `[]` after an array whose items are marked or hold marks
  /// ("email", "profile.full_name", "addresses[].line"); "" for data itself.
  std::string path;
  std::string category;  ///< the mark's category name; "" when the mark is `true`
};

/// "/order_id: minimum (must be >= 1)".
std::string to_string(const Violation& violation);

/// A payload schema of the family's draft-07 subset.
class Schema {
 public:
  /// Builds a schema from its JSON text or value. Errc::invalid_json when
  /// the text is not JSON; Errc::invalid_argument when it is not an object
  /// or a keyword of the subset has a value of the wrong shape.
  ///@{
  static Result<Schema> parse(std::string_view json);
  static Result<Schema> from_value(const Value& schema);
  ///@}

  /// Every violation, in document order; empty when data is valid.
  std::vector<Violation> validate(const Value& data) const;
  bool valid(const Value& data) const { return validate(data).empty(); }  ///< no violation

  /// Every node marked `x-gdpr-sensitive` (true or a category name), found
  /// through properties and items, sorted by path (byte order), as the
  /// sibling SDKs list them.
  std::vector<SensitivePath> sensitive_paths() const;

  struct Node;

 private:
  explicit Schema(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
};

}  // namespace babelqueue::schema
