// SPDX-License-Identifier: Apache-2.0
// Sends one message through a SQLite file and takes it back: the subproject's
// libraries work as built.
#include <babelqueue/babelqueue.hpp>
#include <babelqueue/sqlite/transport.hpp>

#include <chrono>
#include <iostream>

int main() {
  babelqueue::sqlite::register_transport();
  auto transport = babelqueue::open_transport("sqlite://subproject.db");
  if (!transport) {
    std::cerr << transport.error().message() << '\n';
    return 1;
  }
  auto env = babelqueue::Envelope::make("urn:babel:orders:created", babelqueue::Value::object({{"order_id", 7}}),
                                        {.queue = "orders"});
  if (!env || !(*transport)->publish("orders", env->body())) return 1;
  auto received = (*transport)->receive("orders", 1, std::chrono::milliseconds(100));
  if (!received || received->size() != 1 || !(*transport)->ack(received->front())) return 1;
  std::cout << "subproject: a message through sqlite://subproject.db\n";
  return 0;
}
