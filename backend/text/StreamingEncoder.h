// text/StreamingEncoder.h — the ids of one long text that arrives in parts (`lorascope-train
// tokenize` reading a 200 MB line from stdin), with bounded memory: the text is held only until
// the tokenizer's next cut (Tokenizer::lastCut), each part's ids are handed on as soon as they are
// final, and the ids handed on, joined, equal Tokenizer::encode (or encodeWithPostProcessor) of
// the whole text.
//
// Memory: at most about partBytes of text plus the longest stretch without a cut (a word), and
// one part's ids. A tokenizer without cuts (Tokenizer::hasCuts() false: a Prepend
// normalizer, no splitting pre-tokenizer) gets the whole text encoded at finish(), as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "text/Tokenizer.h"

namespace lorascope::text {

class StreamingEncoder {
 public:
  using IdSink = std::function<void(std::span<const std::int32_t> ids)>;
  // 64 KiB per part: its pieces (about 130 bytes each, one per byte for a line of digits) stay
  // in the low megabytes.
  static constexpr std::size_t kDefaultPartBytes = std::size_t{64} << 10;

  // `postProcessor`: frame the ids as encodeWithPostProcessor does (BOS first, ...).
  StreamingEncoder(const Tokenizer& tokenizer, bool postProcessor, IdSink sink,
                   std::size_t partBytes = kDefaultPartBytes);

  // More of the text. Throws TextError for bytes that are not UTF-8 (naming the byte's offset
  // in the whole text), as encode() does.
  void append(std::string_view text);
  // The text is complete: hands on the rest of its ids; the next append starts a new text.
  void finish();
  // Bytes of text held now (what has not been encoded yet).
  std::size_t pendingBytes() const { return pending_.size(); }

 private:
  void encodePart(std::size_t bytes);

  const Tokenizer& tokenizer_;
  Tokenizer::Framing framing_;
  IdSink sink_;
  std::size_t partBytes_;
  std::string pending_;
  std::size_t scannedUpTo_ = 0;   // pending_ holds no cut before this offset
  std::size_t encodedBytes_ = 0;  // of this text, before pending_
  bool started_ = false;          // the framing's first ids are out
};

}  // namespace lorascope::text
