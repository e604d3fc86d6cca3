// ExampleEncoder.h — an Example to token ids and labels, the input of the training loop.
//
// - Chat and alpaca examples are rendered with the model's chat template (or the alpaca prompt)
//   and tokenized whole. Each assistant turn is found by tokenizing the rendered prompt before it
//   (with the generation prompt) and the conversation up to its end, and checking that both are
//   prefixes of the whole: labels of those turn tokens equal the ids, all other labels are −100
//   (train on responses). Where the prefix property fails (a merge across the boundary), the
//   boundary falls after the longest common prefix plus the straddling token, and the example
//   is flagged so the report can list it.
// - Text examples are the post-processor's encoding (e.g. BOS first) plus EOS, all trained.
// - Standard prompt-completion examples are encoded as the text prompt + completion (plus EOS);
//   the tokens of the prompt (its own encoding, a prefix of the whole) are masked.
// - trainOnAll labels every token. max_seq_len applies after: truncate keeps the first tokens,
//   drop discards the example; an example left with no trained token is dropped either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "data/Example.h"
#include "text/ChatTemplate.h"  // defines: ChatTemplate, ChatMessage
#include "text/Tokenizer.h"     // defines: Tokenizer

namespace lorascope::data {

constexpr std::int32_t kIgnoreLabel = -100;  // label of a token the loss skips (HF convention)

enum class OverLengthPolicy { Truncate, Drop };

std::string_view policyName(OverLengthPolicy policy);                    // "truncate", "drop"
std::optional<OverLengthPolicy> parsePolicyName(std::string_view name);  // none if unknown

struct EncodeOptions {
  bool trainOnAll = false;
  std::size_t maxSeqLen = 2048;  // tokens; 0 = no limit
  OverLengthPolicy policy = OverLengthPolicy::Truncate;
};

struct EncodedExample {
  std::vector<std::int32_t> ids;     // (T) after the policy; empty when dropped
  std::vector<std::int32_t> labels;  // (T) ids or kIgnoreLabel; unshifted (the loss shifts)
  std::size_t tokensBeforePolicy = 0;
  std::size_t trainedTokensBeforePolicy = 0;
  bool dropped = false;
  bool prefixMismatch = false;

  std::size_t trainedTokens() const;  // labels that are not kIgnoreLabel
};

class ExampleEncoder {
 public:
  ExampleEncoder(text::Tokenizer tokenizer, text::ChatTemplate chatTemplate);

  // Throws text::TextError when the template cannot express the conversation.
  EncodedExample encode(const Example& example, const EncodeOptions& options) const;

  const text::Tokenizer& tokenizer() const { return tokenizer_; }
  const text::ChatTemplate& chatTemplate() const { return template_; }

 private:
  void encodeChat(const Example& example, EncodedExample& out) const;
  void encodePromptCompletion(const Example& example, EncodedExample& out) const;
  void encodeText(const Example& example, EncodedExample& out) const;

  text::Tokenizer tokenizer_;
  text::ChatTemplate template_;
};

}  // namespace lorascope::data
