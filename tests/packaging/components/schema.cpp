// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed babelqueue::schema alone: a schema parses and
// tells a valid payload from one that breaks it.
#include <babelqueue/schema/schema.hpp>

#include <iostream>

int main() {
  auto schema = babelqueue::schema::Schema::parse(R"({"type":"object","required":["order_id"]})");
  if (!schema) return 1;
  if (!schema->valid(babelqueue::Value::object({{"order_id", 1042}}))) return 1;
  if (schema->valid(babelqueue::Value::object({}))) return 1;
  std::cout << "schema: ok\n";
  return 0;
}
