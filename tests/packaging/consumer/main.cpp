// SPDX-License-Identifier: Apache-2.0
// Makes an envelope, decodes it again and prints it: proof that the installed
// headers, library and dependencies work together.
#include <babelqueue/babelqueue.hpp>

#include <iostream>

int main() {
  auto env = babelqueue::Envelope::make("urn:babel:orders:created", babelqueue::Value::object({{"order_id", 1042}}),
                                        {.queue = "orders"});
  if (!env) return 1;
  auto back = babelqueue::Envelope::decode(env->body());
  if (!back || !babelqueue::accepts(*back) || back->data()["order_id"].as_int64() != 1042) return 1;
  std::cout << "babelqueue " << babelqueue::kVersion << ": " << back->urn() << '\n';
  return 0;
}
