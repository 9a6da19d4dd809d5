// SPDX-License-Identifier: Apache-2.0
// What the sample of docs/runtime.md assumes the application has: a typed
// message (the examples' OrderCreated) and a function of its own that the
// handler calls. The docs samples test compiles the sample after this file.
#pragma once

#include "examples/order_created.hpp"

using shop::OrderCreated;

inline void charge(const OrderCreated& /*order*/) {}
