// Tokenizer.h — Hugging Face tokenizer.json (model type BPE) in plain C++: byte-level BPE with
// Split-regex pre-tokenizers (Llama-3, Qwen2, GPT-2 patterns) and SentencePiece-style BPE
// (Metaspace or Prepend+Replace, byte_fallback). Ids equal those of the `tokenizers` library.
//
// The pipeline of encode(), as in `tokenizers`:
//   1. added tokens with normalized=false are split out of the raw text (leftmost-longest,
//      honouring single_word / lstrip / rstrip);
//   2. each remaining piece is normalized (NFC, Prepend, Replace, ...), then added tokens with
//      normalized=true are split out of it;
//   3. each remaining piece is pre-tokenized (Split regex, ByteLevel, Metaspace, ...) into words;
//   4. each word is run through BPE (cached per word) and yields ids.
// A Tokenizer is immutable after loading and cheap to copy (shared state); encode/decode may be
// called from several threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/TextError.h"  // defines: TextError

namespace lorascope::text {

class Tokenizer {
 public:
  // Loads a tokenizer.json. Throws TextError naming the file for a missing/unreadable file,
  // malformed JSON, an unsupported model type or component, or an invalid regex.
  static Tokenizer fromFile(const std::filesystem::path& tokenizerJson);
  // Same, from text already in memory; `sourceName` is what error messages call it.
  static Tokenizer fromJsonText(std::string_view jsonText, const std::string& sourceName);
  // dir/tokenizer.json, plus dir/tokenizer_config.json (when present) for bos/eos tokens.
  static Tokenizer fromModelDir(const std::filesystem::path& dir);

  // Ids of `text` without the post-processor's tokens (HF: add_special_tokens=False). Special
  // and added tokens written in the text (e.g. "<|im_start|>") are recognised. Throws TextError
  // (naming the byte offset) for text that is not valid UTF-8.
  std::vector<std::int32_t> encode(std::string_view text) const;
  // Ids with the post-processor applied (HF's default encode: e.g. Llama-3 prepends
  // <|begin_of_text|> through its TemplateProcessing).
  std::vector<std::int32_t> encodeWithPostProcessor(std::string_view text) const;
  // The ids the post-processor puts before and after a sequence's own (both empty without one).
  struct Framing {
    std::vector<std::int32_t> before;
    std::vector<std::int32_t> after;
  };
  Framing postProcessorFraming() const;

  // Long text in parts (encode() itself, text/StreamingEncoder): the offset of the last place in
  // `text` where it can be cut so that the ids of the two sides, joined, are the ids of the
  // whole; 0 when there is none. The places are where the pipeline splits by itself and joins
  // nothing across (hasCuts()): the spaces between an ASCII letter or digit and an ASCII letter,
  // and, where every digit is a piece of its own, the places between two ASCII digits.
  std::size_t lastCut(std::string_view text) const;
  // Whether this tokenizer's pipeline has such places: its pre-tokenizer splits before a space
  // (GPT-2, Llama-3 and Qwen2 patterns, Metaspace, Whitespace) or between digits (Qwen2's
  // pattern, Digits with individual_digits), no normalizer adds or strips text at a part's ends
  // (Prepend, Strip), and no added token holds a space (or a digit) or strips a space next to a
  // letter. Otherwise text is encoded whole, however long.
  bool hasCuts() const;
  // What decode does with an id the tokenizer lacks: Refuse (TextError naming it, for ids a user
  // typed) or Skip (decoded as nothing, as transformers does: a model's embedding is often padded
  // past its tokenizer, Qwen2.5's 151,936 rows for 151,665 tokens, and may emit such an id).
  enum class UnknownIds { Refuse, Skip };
  // Text of `ids` (HF: decode).
  std::string decode(std::span<const std::int32_t> ids, bool skipSpecial = false,
                     UnknownIds unknown = UnknownIds::Refuse) const;

  // One past the largest id of the model vocabulary and the added tokens (the embedding rows a
  // model needs at least).
  std::int32_t vocabSize() const;
  std::optional<std::int32_t> tokenId(std::string_view token) const;
  std::optional<std::string> tokenText(std::int32_t id) const;
  bool isSpecial(std::int32_t id) const;  // an added token marked "special"

  // From tokenizer_config.json (bos_token / eos_token) when loaded with fromModelDir.
  std::optional<std::int32_t> bosId() const;
  std::optional<std::int32_t> eosId() const;
  std::optional<std::string> bosToken() const;
  std::optional<std::string> eosToken() const;

  const std::string& source() const;  // the file it came from
  std::string describe() const;       // one line: model, normalizer, pre-tokenizer, decoder

  struct State;  // defined in Tokenizer.cpp

 private:
  explicit Tokenizer(std::shared_ptr<const State> state);
  // encode()'s pipeline on one part (the whole text, or a part cut by lastCut's rule).
  void encodeInto(std::string_view text, std::vector<std::int32_t>& ids) const;
  std::shared_ptr<const State> state_;
};

}  // namespace lorascope::text
