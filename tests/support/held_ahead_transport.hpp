// SPDX-License-Identifier: Apache-2.0
// A test-only Transport decorator that says its client holds messages ahead
// (Capabilities::held_ahead), as a broker client with a credit window does,
// and otherwise passes everything to the transport it wraps. Over the memory
// transport it runs the Worker's suite the way the Worker runs on such a
// transport: its handler threads receive for themselves.
#pragma once

#include "forwarding_transport.hpp"

#include <cstddef>
#include <memory>
#include <utility>

namespace babelqueue::test_support {

class HeldAheadTransport final : public ForwardingTransport {
 public:
  HeldAheadTransport(std::unique_ptr<Transport> inner, std::size_t held_ahead)
      : ForwardingTransport(std::move(inner)), held_ahead_(held_ahead) {}

  Capabilities capabilities() const override {
    Capabilities caps = inner().capabilities();
    caps.held_ahead = held_ahead_;
    return caps;
  }

 private:
  std::size_t held_ahead_;
};

}  // namespace babelqueue::test_support
