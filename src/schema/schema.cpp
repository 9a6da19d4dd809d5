// SPDX-License-Identifier: Apache-2.0
#include <babelqueue/json.hpp>
#include <babelqueue/schema/schema.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

namespace babelqueue::schema {

struct Schema::Node {
  enum class Type { any, object, array, string, integer, number, boolean, null };
  Type type = Type::any;
  std::vector<std::string> required;
  std::vector<std::pair<std::string, std::shared_ptr<const Node>>> properties;
  bool additional_properties = true;
  std::shared_ptr<const Node> items;
  std::optional<Array> enum_values;
  std::optional<Value> const_value;
  std::optional<std::uint64_t> min_length;
  std::optional<Value> minimum;
  /// x-gdpr-sensitive: its category ("" for true) when the node is marked.
  std::optional<std::string> sensitive;
};

namespace {

using Node = Schema::Node;
using Type = Node::Type;

std::optional<Type> type_named(std::string_view name) {
  if (name == "object") return Type::object;
  if (name == "array") return Type::array;
  if (name == "string") return Type::string;
  if (name == "integer") return Type::integer;
  if (name == "number") return Type::number;
  if (name == "boolean") return Type::boolean;
  if (name == "null") return Type::null;
  return std::nullopt;  // an unknown name checks no type
}

std::string_view type_phrase(Type type) {
  switch (type) {
    case Type::object: return "must be an object";
    case Type::array: return "must be an array";
    case Type::string: return "must be a string";
    case Type::integer: return "must be an integer";
    case Type::number: return "must be a number";
    case Type::boolean: return "must be a boolean";
    case Type::null: return "must be null";
    case Type::any: break;
  }
  return "";
}

long double number_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::int64: return static_cast<long double>(v.as_int64());
    case Value::Kind::uint64: return static_cast<long double>(v.as_uint64());
    case Value::Kind::number_text: return std::strtold(v.if_number_text()->c_str(), nullptr);
    default: return static_cast<long double>(v.as_double());
  }
}

bool is_whole_kind(const Value& v) { return v.kind() == Value::Kind::int64 || v.kind() == Value::Kind::uint64; }

// An integral float (1.0) is an integer, as in every sibling SDK.
bool is_integral(const Value& v) {
  if (is_whole_kind(v)) return true;
  if (!v.is_number()) return false;
  const long double n = number_of(v);
  return std::isfinite(n) && std::floor(n) == n;
}

// JSON equality: numbers by value (1 equals 1.0), objects in any key order.
bool json_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (is_whole_kind(a) && is_whole_kind(b)) return a == b;
    return number_of(a) == number_of(b);
  }
  if (a.kind() != b.kind()) return false;
  if (const Array* x = a.if_array()) {
    const Array& y = b.as_array();
    if (x->size() != y.size()) return false;
    for (std::size_t i = 0; i < x->size(); ++i) {
      if (!json_equal((*x)[i], y[i])) return false;
    }
    return true;
  }
  if (const Object* x = a.if_object()) {
    const Object& y = b.as_object();
    if (x->size() != y.size()) return false;
    for (const auto& [key, value] : *x) {
      const Value* other = y.find(key);
      if (other == nullptr || !json_equal(value, *other)) return false;
    }
    return true;
  }
  return a == b;
}

// data >= minimum, exactly when both are whole numbers.
bool at_least(const Value& data, const Value& minimum) {
  if (data.kind() == Value::Kind::int64 && minimum.kind() == Value::Kind::int64) {
    return data.as_int64() >= minimum.as_int64();
  }
  return number_of(data) >= number_of(minimum);
}

std::size_t code_points(std::string_view text) {
  std::size_t n = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0U) != 0x80U) ++n;
  }
  return n;
}

std::string pointer_token(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string json_text(const Value& v) { return to_json(v).value_or("?"); }

Result<std::shared_ptr<const Node>> compile(const Value& schema, const std::string& at);

// A subschema of properties or items: an object is compiled; a boolean
// schema (true/false) is outside the subset and constrains nothing.
Result<std::shared_ptr<const Node>> compile_sub(const Value& schema, const std::string& at) {
  if (schema.is_object()) return compile(schema, at);
  return std::shared_ptr<const Node>(std::make_shared<Node>());
}

Unexpected<ErrorInfo> bad(const std::string& at, std::string_view what) {
  return unexpected(Errc::invalid_argument,
                    "schema" + (at.empty() ? std::string() : " at " + at) + ": " + std::string(what));
}

Result<std::shared_ptr<const Node>> compile(const Value& schema, const std::string& at) {
  if (!schema.is_object()) return bad(at, "a schema is a JSON object");
  auto node = std::make_shared<Node>();
  if (const Value* type = schema.find("type"); type != nullptr && type->is_string()) {
    node->type = type_named(type->as_string()).value_or(Type::any);
  }
  if (const Value* required = schema.find("required")) {
    if (!required->is_array()) return bad(at, "required is a list of names");
    for (const Value& name : required->as_array()) {
      if (!name.is_string()) return bad(at, "required is a list of names");
      node->required.push_back(name.as_string());
    }
  }
  if (const Value* properties = schema.find("properties")) {
    if (!properties->is_object()) return bad(at, "properties is an object");
    for (const auto& [name, sub] : properties->as_object()) {
      auto compiled = compile_sub(sub, at + "/properties/" + pointer_token(name));
      if (!compiled) return unexpected(compiled.error());
      node->properties.emplace_back(name, std::move(*compiled));
    }
  }
  if (const Value* additional = schema.find("additionalProperties"); additional != nullptr && additional->is_bool()) {
    node->additional_properties = additional->as_bool();  // a schema there is outside the subset
  }
  if (const Value* items = schema.find("items"); items != nullptr && items->is_object()) {
    auto compiled = compile(*items, at + "/items");  // a list of schemas is outside the subset
    if (!compiled) return unexpected(compiled.error());
    node->items = std::move(*compiled);
  }
  if (const Value* values = schema.find("enum")) {
    if (!values->is_array()) return bad(at, "enum is a list");
    node->enum_values = values->as_array();
  }
  if (const Value* value = schema.find("const")) node->const_value = *value;
  if (const Value* min_length = schema.find("minLength")) {
    if (!is_integral(*min_length) || number_of(*min_length) < 0) return bad(at, "minLength is a whole number >= 0");
    node->min_length = static_cast<std::uint64_t>(number_of(*min_length));
  }
  if (const Value* minimum = schema.find("minimum")) {
    if (!minimum->is_number()) return bad(at, "minimum is a number");
    node->minimum = *minimum;
  }
  // Validation-neutral: true or a category name marks the node, anything
  // else (false, "", a number) leaves it unmarked, as the siblings read it.
  if (const Value* mark = schema.find("x-gdpr-sensitive")) {
    if (mark->is_bool() && mark->as_bool()) node->sensitive = std::string();
    if (mark->is_string() && !mark->as_string().empty()) node->sensitive = mark->as_string();
  }
  return std::shared_ptr<const Node>(std::move(node));
}

void check(const Node& node, const Value& data, const std::string& pointer, std::vector<Violation>& out) {
  if (node.const_value && !json_equal(data, *node.const_value)) {
    out.push_back({pointer, "const", "must equal const " + json_text(*node.const_value)});
  }
  if (node.enum_values) {
    bool found = false;
    for (const Value& allowed : *node.enum_values) found = found || json_equal(data, allowed);
    if (!found) out.push_back({pointer, "enum", "value is not one of the allowed enum values"});
  }
  bool fits = true;
  switch (node.type) {
    case Type::any: return;
    case Type::object: fits = data.is_object(); break;
    case Type::array: fits = data.is_array(); break;
    case Type::string: fits = data.is_string(); break;
    case Type::integer: fits = is_integral(data); break;
    case Type::number: fits = data.is_number(); break;
    case Type::boolean: fits = data.is_bool(); break;
    case Type::null: fits = data.is_null(); break;
  }
  if (!fits) {
    out.push_back({pointer, "type", std::string(type_phrase(node.type))});
    return;  // nothing else is checked on a value of the wrong type
  }
  switch (node.type) {
    case Type::object: {
      const Object& object = data.as_object();
      for (const std::string& name : node.required) {
        if (!object.contains(name)) {
          out.push_back(
              {pointer + "/" + pointer_token(name), "required", "missing required property \"" + name + "\""});
        }
      }
      for (const auto& [name, value] : object) {
        const Node* sub = nullptr;
        for (const auto& [declared, compiled] : node.properties) {
          if (declared == name) sub = compiled.get();
        }
        if (sub != nullptr) {
          check(*sub, value, pointer + "/" + pointer_token(name), out);
        } else if (!node.additional_properties) {
          out.push_back({pointer + "/" + pointer_token(name), "additionalProperties",
                         "additional property \"" + name + "\" is not allowed"});
        }
      }
      break;
    }
    case Type::array:
      if (node.items) {
        const Array& items = data.as_array();
        for (std::size_t i = 0; i < items.size(); ++i)
          check(*node.items, items[i], pointer + "/" + std::to_string(i), out);
      }
      break;
    case Type::string:
      if (node.min_length && code_points(data.as_string()) < *node.min_length) {
        out.push_back({pointer, "minLength", "must be at least " + std::to_string(*node.min_length) + " characters"});
      }
      break;
    case Type::integer:
    case Type::number:
      if (node.minimum && !at_least(data, *node.minimum)) {
        out.push_back({pointer, "minimum", "must be >= " + json_text(*node.minimum)});
      }
      break;
    default: break;
  }
}

void collect_sensitive(const Node& node, const std::string& path, std::vector<SensitivePath>& out) {
  if (node.sensitive) out.push_back({path, *node.sensitive});
  for (const auto& [name, sub] : node.properties) {
    collect_sensitive(*sub, path.empty() ? name : path + "." + name, out);
  }
  if (node.items) collect_sensitive(*node.items, path + "[]", out);
}

}  // namespace

std::string to_string(const Violation& violation) {
  return (violation.pointer.empty() ? std::string("(data)") : violation.pointer) + ": " + violation.rule + " (" +
         violation.message + ")";
}

Result<Schema> Schema::parse(std::string_view json) {
  auto value = parse_json(json);
  if (!value) return unexpected(value.error());
  return from_value(*value);
}

Result<Schema> Schema::from_value(const Value& schema) {
  auto root = compile(schema, "");
  if (!root) return unexpected(root.error());
  return Schema(std::move(*root));
}

std::vector<Violation> Schema::validate(const Value& data) const {
  std::vector<Violation> out;
  check(*root_, data, "", out);
  return out;
}

std::vector<SensitivePath> Schema::sensitive_paths() const {
  std::vector<SensitivePath> out;
  collect_sensitive(*root_, "", out);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

}  // namespace babelqueue::schema
