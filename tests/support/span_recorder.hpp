// SPDX-License-Identifier: Apache-2.0
// A SpanSink that keeps every span in memory, for the tests: the spans a
// Tracer really records, read back after the run.
#pragma once

#include <babelqueue/otel/span_sink.hpp>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace babelqueue::test_support {

class SpanRecorder final : public otel::SpanSink {
 public:
  void on_end(otel::SpanData&& span) noexcept override {
    std::lock_guard lock(mutex_);
    spans_.push_back(std::move(span));
  }

  std::vector<otel::SpanData> spans() const {
    std::lock_guard lock(mutex_);
    return spans_;
  }

  // The spans named name, in the order they ended.
  std::vector<otel::SpanData> named(std::string_view name) const {
    std::vector<otel::SpanData> out;
    for (auto& s : spans()) {
      if (s.name == name) out.push_back(s);
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<otel::SpanData> spans_;
};

// The value of a span's attribute, if it has it.
inline std::optional<otel::AttributeValue> attribute(const otel::SpanData& span, std::string_view key) {
  auto it = std::find_if(span.attributes.begin(), span.attributes.end(),
                         [&](const otel::Attribute& a) { return a.key == key; });
  if (it == span.attributes.end()) return std::nullopt;
  return it->value;
}

}  // namespace babelqueue::test_support
