// SPDX-License-Identifier: Apache-2.0
// The event loop of a raw qpid-proton C proactor peer, as the benchmark's
// raw loops and the tests' own AMQP peers run it: wait for a batch of
// events, hand each to handle(), and return once handle() has said stop
// (after the batch it came in, which must be marked done first).
//
// Thread-safety: run by each thread that serves the proactor.
#pragma once

#include <proton/event.h>
#include <proton/proactor.h>

namespace babelqueue::bench {

// handle(pn_event_t*) returns true once the loop is to stop.
template <class Handle>
void run_proactor(pn_proactor_t* proactor, Handle&& handle) {
  for (;;) {
    pn_event_batch_t* batch = pn_proactor_wait(proactor);
    bool stop = false;
    while (pn_event_t* e = pn_event_batch_next(batch)) stop = handle(e) || stop;
    pn_proactor_done(proactor, batch);
    if (stop) return;
  }
}

}  // namespace babelqueue::bench
