// SPDX-License-Identifier: Apache-2.0
// The error of a message larger than a broker (or its client library) takes,
// shared by the transports so that every one names both sizes and the setting
// that holds the limit the same way. Not part of the stable API.
#pragma once

#include <babelqueue/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace babelqueue::detail {

// "the message for queue Q is N bytes; WHO takes at most L bytes (SETTING)".
// `who` names what refuses it ("Redis", "the Kafka producer"), `setting` the
// option or broker setting that holds `limit`.
inline ErrorInfo message_too_large(std::string_view queue, std::size_t size, std::string_view who, std::size_t limit,
                                   std::string_view setting) {
  std::string text = "the message for queue ";
  text.append(queue).append(" is ").append(std::to_string(size)).append(" bytes; ");
  text.append(who).append(" takes at most ").append(std::to_string(limit)).append(" bytes (");
  text.append(setting).append(")");
  return ErrorInfo(Errc::invalid_argument, std::move(text));
}

// The same for the message at `index` of a batch that was refused whole.
inline ErrorInfo batch_message_too_large(std::size_t index, const ErrorInfo& error) {
  return ErrorInfo(error.code(), "message " + std::to_string(index) + " of the batch: " + error.message() +
                                     "; nothing was published");
}

}  // namespace babelqueue::detail
