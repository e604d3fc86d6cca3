// test_dataset_labels.cpp — examples to ids and labels: prompt tokens masked to −100 and
// response tokens equal to their ids (ChatML, alpaca, text, prompt-completion, ShareGPT), several
// assistant turns, train-on-all, truncate vs drop, and the prefix check of the prompt/response
// boundary. Uses the committed test tokenizers of backend/text (tests/text/data).
#include "TestRunner.h"

#include <filesystem>

#include "TestPaths.h"
#include "data/ExampleEncoder.h"

using namespace lorascope::data;
using lorascope::text::ChatMessage;
using lorascope::text::ChatTemplate;
using lorascope::text::Tokenizer;

namespace {

Tokenizer qwenTokenizer() {
  return Tokenizer::fromFile(std::filesystem::path(lstest::sourcePath("tests/text/data")) /
                             "qwen2_bpe.tokenizer.json");
}

Tokenizer llama3Tokenizer() {
  return Tokenizer::fromFile(std::filesystem::path(lstest::sourcePath("tests/text/data")) /
                             "llama3_bpe.tokenizer.json");
}

Example chatExample(std::vector<Message> messages) {
  Example example;
  example.format = Format::Chat;
  example.messages = std::move(messages);
  return example;
}

std::vector<ChatMessage> toChat(const std::vector<Message>& messages) {
  std::vector<ChatMessage> out;
  for (const Message& m : messages) {
    out.push_back({m.role, m.content});
  }
  return out;
}

// The text of the tokens whose label is not −100, in order.
std::string trainedText(const Tokenizer& tokenizer, const EncodedExample& encoded) {
  std::vector<std::int32_t> trained;
  for (std::size_t i = 0; i < encoded.ids.size(); ++i) {
    if (encoded.labels[i] != kIgnoreLabel) {
      lstest::compare(encoded.labels[i], encoded.ids[i], "label", "id", __FILE__, __LINE__);
      trained.push_back(encoded.ids[i]);
    }
  }
  return tokenizer.decode(trained);
}

bool isPrefix(const std::vector<std::int32_t>& part, const std::vector<std::int32_t>& whole) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
}

const EncodeOptions kNoLimit{false, 0, OverLengthPolicy::Truncate};

}  // namespace

TEST_CASE(chatMlMasksThePromptAndTrainsTheReply) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("chatml"));
  const std::vector<Message> messages{
      {"system", "You are terse."}, {"user", "Hi"}, {"assistant", "Hello."}};
  const EncodedExample encoded = encoder.encode(chatExample(messages), kNoLimit);
  const auto& tok = encoder.tokenizer();
  const auto& tpl = encoder.chatTemplate();
  COMPARE(encoded.ids, tok.encode(tpl.render(toChat(messages), false)));
  const auto prompt = tok.encode(tpl.render(toChat({messages[0], messages[1]}), true));
  VERIFY(!encoded.prefixMismatch);
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    COMPARE(encoded.labels[i], kIgnoreLabel);
  }
  for (std::size_t i = prompt.size(); i < encoded.ids.size(); ++i) {
    COMPARE(encoded.labels[i], encoded.ids[i]);
  }
  COMPARE(trainedText(tok, encoded), std::string("Hello.<|im_end|>\n"));
  COMPARE(encoded.trainedTokensBeforePolicy, encoded.ids.size() - prompt.size());
}

TEST_CASE(everyAssistantTurnIsTrainedAndUserTurnsBetweenAreMasked) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("chatml"));
  const EncodedExample encoded = encoder.encode(
      chatExample({{"user", "2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}, {"assistant", "6"}}),
      kNoLimit);
  COMPARE(trainedText(encoder.tokenizer(), encoded), std::string("4<|im_end|>\n6<|im_end|>\n"));
}

TEST_CASE(alpacaTemplateTrainsOnTheOutputOnly) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("alpaca"));
  Example example = chatExample(
      {{"user", ChatTemplate::alpacaUserMessage("Name a colour.", "")}, {"assistant", "Red."}});
  example.format = Format::Alpaca;
  const EncodedExample encoded = encoder.encode(example, kNoLimit);
  VERIFY(!encoded.prefixMismatch);
  COMPARE(trainedText(encoder.tokenizer(), encoded), std::string("Red."));
  VERIFY(encoded.ids.size() > encoded.trainedTokensBeforePolicy);
}

TEST_CASE(trainOnAllLabelsEveryToken) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("chatml"));
  const EncodedExample encoded = encoder.encode(
      chatExample({{"user", "Hi"}, {"assistant", "Hello."}}), {true, 0, OverLengthPolicy::Drop});
  COMPARE(encoded.labels, encoded.ids);
  COMPARE(encoded.trainedTokensBeforePolicy, encoded.ids.size());
}

TEST_CASE(textExamplesAreTheirPostProcessedTokensAllTrained) {
  const Tokenizer llama3 = llama3Tokenizer();
  const ExampleEncoder encoder(llama3, ChatTemplate::byName("llama3"));
  Example example;
  example.format = Format::Text;
  example.text = "The quick brown fox.";
  const EncodedExample encoded = encoder.encode(example, kNoLimit);
  COMPARE(encoded.ids, llama3.encodeWithPostProcessor(example.text));
  COMPARE(encoded.ids.front(), *llama3.tokenId("<|begin_of_text|>"));
  COMPARE(encoded.labels, encoded.ids);
}

TEST_CASE(promptCompletionTrainsOnTheCompletionOnly) {
  const Tokenizer llama3 = llama3Tokenizer();
  const ExampleEncoder encoder(llama3, ChatTemplate::byName("llama3"));
  Example example;
  example.format = Format::PromptCompletion;
  example.prompt = "The capital of France is";
  example.text = " Paris.";
  const EncodedExample encoded = encoder.encode(example, kNoLimit);
  std::vector<std::int32_t> whole = llama3.encodeWithPostProcessor(example.prompt + example.text);
  if (const auto eos = llama3.eosId())
    whole.push_back(*eos);
  COMPARE(encoded.ids, whole);
  const auto prompt = llama3.encodeWithPostProcessor(example.prompt);
  VERIFY(isPrefix(prompt, encoded.ids));
  VERIFY(!encoded.prefixMismatch);
  for (std::size_t i = 0; i < encoded.ids.size(); ++i) {
    COMPARE(encoded.labels[i], i < prompt.size() ? kIgnoreLabel : encoded.ids[i]);
  }
  VERIFY(trainedText(llama3, encoded).rfind(" Paris.", 0) == 0);
}

TEST_CASE(shareGptExamplesRenderLikeChat) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("chatml"));
  Example example = chatExample({{"user", "Hi"}, {"assistant", "Hello."}});
  const EncodedExample asChat = encoder.encode(example, kNoLimit);
  example.format = Format::ShareGpt;
  const EncodedExample asShareGpt = encoder.encode(example, kNoLimit);
  COMPARE(asShareGpt.ids, asChat.ids);
  COMPARE(asShareGpt.labels, asChat.labels);
}

TEST_CASE(truncateKeepsTheFirstTokensAndCountsTheLoss) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("chatml"));
  const Example example = chatExample({{"user", "Hi"}, {"assistant", "Hello there, friend."}});
  const EncodedExample full = encoder.encode(example, kNoLimit);
  const std::size_t max = full.ids.size() - 3;
  const EncodedExample cut = encoder.encode(example, {false, max, OverLengthPolicy::Truncate});
  VERIFY(!cut.dropped);
  COMPARE(cut.ids, std::vector<std::int32_t>(full.ids.begin(), full.ids.begin() + max));
  COMPARE(cut.labels, std::vector<std::int32_t>(full.labels.begin(), full.labels.begin() + max));
  COMPARE(cut.tokensBeforePolicy, full.ids.size());
  COMPARE(cut.trainedTokens(), full.trainedTokens() - 3);
}

TEST_CASE(dropDiscardsExamplesOverMaxSeqLenOnly) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("chatml"));
  const Example example = chatExample({{"user", "Hi"}, {"assistant", "Hello there, friend."}});
  const std::size_t length = encoder.encode(example, kNoLimit).ids.size();
  const EncodedExample over = encoder.encode(example, {false, length - 1, OverLengthPolicy::Drop});
  VERIFY(over.dropped);
  VERIFY(over.ids.empty() && over.labels.empty());
  COMPARE(over.tokensBeforePolicy, length);
  const EncodedExample fits = encoder.encode(example, {false, length, OverLengthPolicy::Drop});
  VERIFY(!fits.dropped);
  COMPARE(fits.ids.size(), length);
}

TEST_CASE(truncationThatLeavesNoResponseDropsTheExample) {
  const ExampleEncoder encoder(qwenTokenizer(), ChatTemplate::byName("chatml"));
  const std::vector<Message> messages{{"user", "A long question about many things"},
                                      {"assistant", "Yes."}};
  const auto prompt =
      encoder.tokenizer().encode(encoder.chatTemplate().render(toChat({messages[0]}), true));
  const EncodedExample cut =
      encoder.encode(chatExample(messages), {false, prompt.size(), OverLengthPolicy::Truncate});
  VERIFY(cut.dropped);
  COMPARE(cut.trainedTokens(), std::size_t{0});
}

TEST_CASE(prefixMismatchIsFlaggedAndTheStraddlingTokenMasked) {
  // newline_merge.tokenizer.json: byte-level BPE whose only merge is "\n\n". The alpaca prompt
  // ends in "### Response:\n"; a reply starting with "\n\n" turns that last "\n" into part of
  // a "\n\n" token, so the prompt's own tokens are no prefix of the whole conversation's.
  const ExampleEncoder encoder(
      Tokenizer::fromFile(std::filesystem::path(lstest::sourcePath("tests/data/data")) /
                          "newline_merge.tokenizer.json"),
      ChatTemplate::byName("alpaca"));
  const std::vector<Message> messages{{"user", "Say hi."}, {"assistant", "\n\nHi."}};
  const auto& tok = encoder.tokenizer();
  const auto prompt = tok.encode(encoder.chatTemplate().render(toChat({messages[0]}), true));
  const auto whole = tok.encode(encoder.chatTemplate().render(toChat(messages), false));
  VERIFY2(!isPrefix(prompt, whole), "the fixture must break the prefix property");
  const EncodedExample encoded = encoder.encode(chatExample(messages), kNoLimit);
  VERIFY(encoded.prefixMismatch);
  const std::size_t common = static_cast<std::size_t>(
      std::mismatch(prompt.begin(), prompt.end(), whole.begin(), whole.end()).first -
      prompt.begin());
  for (std::size_t i = 0; i <= common; ++i) {
    COMPARE(encoded.labels[i], kIgnoreLabel);
  }
  COMPARE(encoded.labels.back(), encoded.ids.back());
}
