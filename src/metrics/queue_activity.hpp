// SPDX-License-Identifier: Apache-2.0
// The in-flight and prefetched gauges of one queue label, kept as four
// counters that only ever grow, each changed by one side of the worker: the
// receive loop adds what it received (and what went back unhandled), a
// handler thread what it started and finished. A gauge that both sides move
// (prometheus-cpp's: an atomic double changed by compare-and-swap) makes its
// cache line travel between the two threads at every message; here the
// handler side's line stays with the handler thread, and the values are
// worked out when a scrape asks (docs/adr/0045).
#pragma once

#include <atomic>
#include <cstdint>

namespace babelqueue::metrics {

struct QueueActivity {
  // Receive-loop side.
  alignas(64) std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> returned{0};  // received but handed back without a handler
  // Handler side.
  alignas(64) std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> finished{0};

  // What the gauges were, had each event moved them: read in the order that
  // keeps a difference from going below zero for a scrape racing the events
  // (a count is read before the one it is subtracted from). A handler may
  // start a delivery before the receive loop tells of it (the event follows
  // the hand-over), so prefetched can read -1 for that moment, as the
  // gauge itself would.
  double in_flight() const noexcept {
    const std::uint64_t done = finished.load(std::memory_order_acquire);
    const std::uint64_t begun = started.load(std::memory_order_acquire);
    return static_cast<double>(static_cast<std::int64_t>(begun - done));
  }
  double prefetched() const noexcept {
    const std::uint64_t left = started.load(std::memory_order_acquire) + returned.load(std::memory_order_acquire);
    const std::uint64_t in = received.load(std::memory_order_acquire);
    return static_cast<double>(static_cast<std::int64_t>(in - left));
  }
};

}  // namespace babelqueue::metrics
