// SPDX-License-Identifier: Apache-2.0
// The OTLP trace export request (opentelemetry/proto/collector/trace/v1,
// ExportTraceServiceRequest) in protobuf's binary encoding, written by hand
// for the few fields the SDK's spans use (docs/adr/0026): one resource, one
// instrumentation scope, the spans with their attributes, exception events
// and status.
#pragma once

#include <babelqueue/otel/span_data.hpp>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::otel::detail {

struct OtlpResource {
  std::vector<Attribute> attributes;  // service.name first
  std::string scope_name;             // the instrumentation scope
  std::string scope_version;
};

// Appends the encoded ExportTraceServiceRequest for spans to out.
void encode_export_request(std::string& out, const OtlpResource& resource, std::span<const SpanData> spans);

}  // namespace babelqueue::otel::detail
