// SPDX-License-Identifier: Apache-2.0
// Random (version 4) UUIDs for trace_id and meta.id.
//
// Bytes come from the kernel's CSPRNG (getrandom), so ids are unpredictable,
// safe to create from any thread and correct after fork(); nothing needs to be
// initialised first. Each thread takes 256 random bytes at a time (16 ids):
// one system call per 16 ids instead of one per id, which cost more than
// writing a small envelope. A child made by fork() never hands out what its
// parent had taken; one made by a raw clone() or _Fork(), which run no fork
// handlers, must exec before it makes ids.
#pragma once

#include <string>

namespace babelqueue {

/// A new lowercase UUIDv4, e.g. "7b3f9c2a-e41d-4f88-9b2a-1c0d5e6f7a8b".
/// Throws babelqueue::Error (Errc::internal) only if the kernel has no entropy
/// source at all.
std::string uuid_v4();

/// Writes a new UUIDv4 into out[0..36).
void uuid_v4(char (&out)[36]);

}  // namespace babelqueue
