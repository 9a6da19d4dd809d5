// SPDX-License-Identifier: Apache-2.0
// Internal: the two ways an Envelope's layout gets filled (decode and make).
#pragma once

#include <babelqueue/envelope.hpp>

namespace babelqueue {

class EnvelopeBuilder {
 public:
  // fast: whether the fast path may decide (false: the On-Demand pass alone,
  // for the differential fuzzer).
  static Result<Envelope, DecodeError> decode(std::string_view body, const DecodeOptions& options, bool fast = true);
  static Result<Envelope> make(std::string_view urn, const Value& data, const MakeOptions& options);
  static Result<Envelope> make(std::string_view urn, Envelope::WriteData write, const void* message,
                               const MakeOptions& options);

 private:
  // The envelope around data, which write_data(out) writes at out's position
  // (returning its error, if any): the one writer of every made envelope.
  template <class WriteData>
  static Result<Envelope> build(std::string_view urn, const MakeOptions& options, WriteData write_data);
  // One pass of the parser; decode() explains its invalid_json errors.
  static Result<Envelope, DecodeError> decode_once(std::string_view body, const DecodeOptions& options, bool fast);
  // The On-Demand pass over env's body (copied and padded): the exact
  // verdict, with the typed reason of a failure.
  static Result<Envelope, DecodeError> decode_on_demand(Envelope env, const DecodeOptions& options);
};

}  // namespace babelqueue
