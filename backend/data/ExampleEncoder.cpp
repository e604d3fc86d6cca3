// ExampleEncoder.cpp — rendering, tokenization, response masking and the max_seq_len policy.
#include "data/ExampleEncoder.h"

#include <algorithm>
#include <utility>

#include "common/EnumNames.h"

namespace lorascope::data {

namespace {

constexpr common::EnumName<OverLengthPolicy> kPolicyNames[] = {
    {OverLengthPolicy::Truncate, "truncate"}, {OverLengthPolicy::Drop, "drop"}};
static_assert(common::coversEnum(kPolicyNames));

std::size_t commonPrefix(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::size_t>(ia - a.begin());
}

// Position in `whole` where the tokens of `part` end, when `part` is a prefix of `whole`. Else
// the end of the common prefix, plus one when `straddle` (the token that crosses the boundary
// then counts as before it); `exact` is cleared.
std::size_t prefixEnd(const std::vector<std::int32_t>& part, const std::vector<std::int32_t>& whole,
                      bool straddle, bool& exact) {
  const std::size_t common = commonPrefix(part, whole);
  if (common == part.size()) {
    return common;
  }
  exact = false;
  return std::min(whole.size(), common + (straddle ? 1 : 0));
}

}  // namespace

std::string_view policyName(OverLengthPolicy policy) {
  return common::enumName(kPolicyNames, policy);
}

std::optional<OverLengthPolicy> parsePolicyName(std::string_view name) {
  return common::parseEnum(kPolicyNames, name);
}

std::size_t EncodedExample::trainedTokens() const {
  return static_cast<std::size_t>(std::count_if(labels.begin(), labels.end(),
                                                [](std::int32_t l) { return l != kIgnoreLabel; }));
}

ExampleEncoder::ExampleEncoder(text::Tokenizer tokenizer, text::ChatTemplate chatTemplate)
    : tokenizer_(std::move(tokenizer)), template_(std::move(chatTemplate)) {}

void ExampleEncoder::encodeChat(const Example& example, EncodedExample& out) const {
  std::vector<text::ChatMessage> messages;
  messages.reserve(example.messages.size());
  for (const Message& m : example.messages) {
    messages.push_back({m.role, m.content});
  }
  out.ids = tokenizer_.encode(template_.render(messages, false));
  out.labels.assign(out.ids.size(), kIgnoreLabel);
  bool exact = true;
  for (std::size_t turn = 0; turn < messages.size(); ++turn) {
    if (messages[turn].role != "assistant") {
      continue;
    }
    const std::vector<text::ChatMessage> before(messages.begin(), messages.begin() + turn);
    const std::vector<text::ChatMessage> through(messages.begin(), messages.begin() + turn + 1);
    const std::size_t begin =
        prefixEnd(tokenizer_.encode(template_.render(before, true)), out.ids, true, exact);
    const std::size_t end =
        turn + 1 == messages.size()
            ? out.ids.size()
            : prefixEnd(tokenizer_.encode(template_.render(through, false)), out.ids, false, exact);
    for (std::size_t i = begin; i < end; ++i) {
      out.labels[i] = out.ids[i];
    }
  }
  out.prefixMismatch = !exact;
}

void ExampleEncoder::encodePromptCompletion(const Example& example, EncodedExample& out) const {
  // As TRL trains the standard form: prompt + completion as one text, loss on the completion.
  out.ids = tokenizer_.encodeWithPostProcessor(example.prompt + example.text);
  if (const auto eos = tokenizer_.eosId()) {
    out.ids.push_back(*eos);
  }
  bool exact = true;
  const std::size_t begin =
      prefixEnd(tokenizer_.encodeWithPostProcessor(example.prompt), out.ids, true, exact);
  out.labels.assign(out.ids.size(), kIgnoreLabel);
  for (std::size_t i = begin; i < out.ids.size(); ++i) {
    out.labels[i] = out.ids[i];
  }
  out.prefixMismatch = !exact;
}

void ExampleEncoder::encodeText(const Example& example, EncodedExample& out) const {
  out.ids = tokenizer_.encodeWithPostProcessor(example.text);
  if (const auto eos = tokenizer_.eosId()) {
    out.ids.push_back(*eos);
  }
  out.labels = out.ids;
}

EncodedExample ExampleEncoder::encode(const Example& example, const EncodeOptions& options) const {
  EncodedExample out;
  if (example.format == Format::Text) {
    encodeText(example, out);
  } else if (example.format == Format::PromptCompletion && example.messages.empty()) {
    encodePromptCompletion(example, out);
  } else {
    encodeChat(example, out);
  }
  if (options.trainOnAll) {
    out.labels = out.ids;
  }
  out.tokensBeforePolicy = out.ids.size();
  out.trainedTokensBeforePolicy = out.trainedTokens();
  if (options.maxSeqLen > 0 && out.ids.size() > options.maxSeqLen) {
    if (options.policy == OverLengthPolicy::Drop) {
      out.dropped = true;
    } else {
      out.ids.resize(options.maxSeqLen);
      out.labels.resize(options.maxSeqLen);
    }
  }
  if (!out.dropped && out.trainedTokens() == 0) {
    out.dropped = true;  // nothing left to learn from (the prompt fills max_seq_len)
  }
  if (out.dropped) {
    out.ids.clear();
    out.labels.clear();
  }
  return out;
}

}  // namespace lorascope::data
