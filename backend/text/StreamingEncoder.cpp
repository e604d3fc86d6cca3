// text/StreamingEncoder.cpp — buffer to the next cut, encode, hand on.
#include "text/StreamingEncoder.h"

#include <algorithm>
#include <vector>

#include "common/Utf8.h"
#include "text/TextError.h"

namespace lorascope::text {

StreamingEncoder::StreamingEncoder(const Tokenizer& tokenizer, bool postProcessor, IdSink sink,
                                   std::size_t partBytes)
    : tokenizer_(tokenizer),
      framing_(postProcessor ? tokenizer.postProcessorFraming() : Tokenizer::Framing{}),
      sink_(std::move(sink)),
      partBytes_(std::max<std::size_t>(partBytes, 1)) {}

void StreamingEncoder::append(std::string_view text) {
  if (!started_) {
    started_ = true;
    if (!framing_.before.empty())
      sink_(framing_.before);
  }
  pending_.append(text);
  if (pending_.size() < partBytes_ || !tokenizer_.hasCuts())
    return;
  // The last cut among the bytes not searched yet (a cut needs the byte after it, so the last
  // byte is searched again next time).
  const std::size_t from = scannedUpTo_ > 0 ? scannedUpTo_ - 1 : 0;
  const std::size_t cut = tokenizer_.lastCut(std::string_view(pending_).substr(from));
  scannedUpTo_ = pending_.size();
  if (cut > 0)
    encodePart(from + cut);
}

void StreamingEncoder::finish() {
  if (!started_ && !framing_.before.empty())
    sink_(framing_.before);
  encodePart(pending_.size());
  if (!framing_.after.empty())
    sink_(framing_.after);
  std::string().swap(pending_);
  scannedUpTo_ = 0;
  encodedBytes_ = 0;
  started_ = false;
}

void StreamingEncoder::encodePart(std::size_t bytes) {
  const std::string_view part = std::string_view(pending_).substr(0, bytes);
  // Parts end before an ASCII space (or at the text's end), never inside a character: an invalid
  // byte is named by its offset in the whole text.
  if (const auto bad = common::utf8::firstInvalidByte(part)) {
    throw TextError("text to encode is not valid UTF-8 (byte " +
                    std::to_string(encodedBytes_ + *bad) + ")");
  }
  if (!part.empty()) {
    const std::vector<std::int32_t> ids = tokenizer_.encode(part);
    if (!ids.empty())
      sink_(ids);
  }
  encodedBytes_ += bytes;
  pending_.erase(0, bytes);
  scannedUpTo_ = scannedUpTo_ > bytes ? scannedUpTo_ - bytes : 0;
}

}  // namespace lorascope::text
