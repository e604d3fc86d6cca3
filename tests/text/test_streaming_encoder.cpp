// test_streaming_encoder.cpp — long text in parts (issue 20 item 5: a 200 MB `tokenize` line took
// 23x its size): the ids of text streamed through text::StreamingEncoder, cut where the
// tokenizer allows, equal encode() of the whole text for every fixture tokenizer; the text held
// stays bounded; cuts exist only where the pipeline splits by itself.
#include "TestRunner.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "text/StreamingEncoder.h"
#include "text/Tokenizer.h"

using lorascope::text::StreamingEncoder;
using lorascope::text::TextError;
using lorascope::text::Tokenizer;
using Json = nlohmann::json;

namespace {

const std::filesystem::path kData = lstest::sourcePath("tests/text/data");

// `bytes` of text mixing what the pipelines treat differently: words, contractions, digit runs,
// punctuation, runs of spaces and tabs, newlines, accents, CJK, emoji and special tokens.
std::string mixedText(std::size_t bytes) {
  static const char* const kFragments[] = {
      "the",  "Quick", "brown", "fox's", "don't", "1234567", "42",     ",",    ".",  "!?",
      "  ",   "\t",    "\n",    "\n\n",  "café",  "naïve",   "日本語", "🙂", "x2", "<|im_start|>",
      "user", "(a)",   "e.g.",  "--",    "I'll",  "A",       "zz",     "3.14"};
  constexpr std::size_t kCount = sizeof kFragments / sizeof kFragments[0];
  std::string text;
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  while (text.size() < bytes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    text += kFragments[(state >> 33) % kCount];
    text += (state >> 20) % 5 == 0 ? "" : " ";
  }
  return text;
}

// The ids of `text` streamed `appendBytes` at a time into an encoder cutting every `partBytes`;
// `maxPending` gets the most text it held.
std::vector<std::int32_t> streamed(const Tokenizer& tokenizer, std::string_view text,
                                   bool postProcessor, std::size_t appendBytes,
                                   std::size_t partBytes, std::size_t* maxPending = nullptr) {
  std::vector<std::int32_t> ids;
  StreamingEncoder encoder(
      tokenizer, postProcessor,
      [&](std::span<const std::int32_t> part) { ids.insert(ids.end(), part.begin(), part.end()); },
      partBytes);
  for (std::size_t at = 0; at < text.size(); at += appendBytes) {
    encoder.append(text.substr(at, appendBytes));
    if (maxPending)
      *maxPending = std::max(*maxPending, encoder.pendingBytes());
  }
  encoder.finish();
  return ids;
}

}  // namespace

TEST_DATA(streamedIdsEqualWholeIds) {
  lstest::addColumn<std::string>("file");
  lstest::addColumn<bool>("cuts");
  lstest::newRow("gpt2") << std::string("gpt2_bpe.tokenizer.json") << true;
  lstest::newRow("llama3") << std::string("llama3_bpe.tokenizer.json") << true;
  lstest::newRow("qwen2") << std::string("qwen2_bpe.tokenizer.json") << true;
  lstest::newRow("spm metaspace") << std::string("spm_metaspace.tokenizer.json") << true;
  lstest::newRow("spm prepend (no cuts)") << std::string("spm_bpe.tokenizer.json") << false;
}
TEST_CASE(streamedIdsEqualWholeIds) {
  FETCH(std::string, file);
  FETCH(bool, cuts);
  const Tokenizer tokenizer = Tokenizer::fromFile(kData / file);
  COMPARE(tokenizer.hasCuts(), cuts);
  // Under 128 KiB: encode() runs the pipeline on the whole text, the reference for the parts.
  const std::string text = mixedText(120'000);
  const std::vector<std::int32_t> whole = tokenizer.encode(text);
  VERIFY(whole.size() > 20'000);
  VERIFY(streamed(tokenizer, text, false, 1000, 4096) == whole);
  VERIFY(streamed(tokenizer, text, false, 7, 300) == whole);
  VERIFY(streamed(tokenizer, text, true, 65536, 4096) == tokenizer.encodeWithPostProcessor(text));
}

TEST_CASE(longTextIsEncodedInPartsWithTheSameIds) {
  // Over 128 KiB encode() cuts too (about every 64 KiB): its ids equal the ids of the text
  // streamed with cuts every 4 KiB, elsewhere.
  const Tokenizer tokenizer = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  const std::string text = mixedText(5'000'000);
  VERIFY(tokenizer.encode(text) == streamed(tokenizer, text, false, 65536, 4096));
}

TEST_CASE(aLineOfDigitsIsCutBetweenDigits) {
  // No space in it: Qwen2 cuts between digits (its pattern makes each one a piece).
  const Tokenizer qwen = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  std::string digits;
  for (std::size_t i = 0; i < 120'000; ++i)
    digits += static_cast<char>('0' + (i * 7919 + i / 13) % 10);
  const std::string text = "Call 555" + digits + " now";  // under 128 KiB: encode() is whole
  std::size_t maxPending = 0;
  VERIFY(streamed(qwen, text, false, 1000, 4096, &maxPending) == qwen.encode(text));
  VERIFY2(maxPending <= 8192, ("held " + std::to_string(maxPending) + " bytes").c_str());
}

TEST_CASE(streamingHoldsBoundedText) {
  const Tokenizer tokenizer = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  const std::string text = mixedText(1'000'000);
  std::size_t maxPending = 0;
  streamed(tokenizer, text, false, 1024, 4096, &maxPending);
  // A part, one append and the stretch to the next cut: never the megabyte.
  VERIFY2(maxPending <= 8192, ("held " + std::to_string(maxPending) + " bytes").c_str());
  // Without cuts the text is held whole, to be encoded at the end.
  const Tokenizer prepend = Tokenizer::fromFile(kData / "spm_bpe.tokenizer.json");
  maxPending = 0;
  streamed(prepend, text, false, 1024, 4096, &maxPending);
  COMPARE(maxPending, text.size());
}

TEST_CASE(cutsOnlyWhereThePipelineSplits) {
  const Tokenizer qwen = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  COMPARE(qwen.lastCut("abc def ghi"), std::size_t{7});
  COMPARE(qwen.lastCut("abc def"), std::size_t{3});
  COMPARE(qwen.lastCut("7 days"), std::size_t{1});
  COMPARE(qwen.lastCut("abc  def"), std::size_t{0});  // a run of spaces: Qwen's \s+(?!\S)
  COMPARE(qwen.lastCut("abc 7"), std::size_t{0});     // before a digit
  COMPARE(qwen.lastCut("abc, def"), std::size_t{0});  // after punctuation: " ?[^\s...]"
  COMPARE(qwen.lastCut("café def"), std::size_t{0});  // after a non-ASCII letter
  COMPARE(qwen.lastCut("abc "), std::size_t{0});
  // Qwen2 makes every digit a piece: a line of digits has cuts; Llama-3 groups three.
  COMPARE(qwen.lastCut("x 12345"), std::size_t{6});
  const Tokenizer llama3 = Tokenizer::fromFile(kData / "llama3_bpe.tokenizer.json");
  COMPARE(llama3.lastCut("x 12345"), std::size_t{0});
  // Pipelines that would join or change text across a cut have none.
  const Json base = Json::parse(std::ifstream(kData / "qwen2_bpe.tokenizer.json"));
  const auto cutsWith = [&](const auto& change) {
    Json spec = base;
    change(spec);
    return Tokenizer::fromJsonText(spec.dump(), "changed").hasCuts();
  };
  VERIFY(cutsWith([](Json&) {}));
  VERIFY(!cutsWith([](Json& s) { s["normalizer"] = {{"type", "Prepend"}, {"prepend", "_"}}; }));
  VERIFY(!cutsWith([](Json& s) {
    s["normalizer"] = {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}};
  }));
  VERIFY(!cutsWith([](Json& s) { s["pre_tokenizer"] = nullptr; }));
  VERIFY(cutsWith([](Json& s) {  // digits only
    s["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", true}};
  }));
  VERIFY(!cutsWith([](Json& s) {
    s["pre_tokenizer"] = {{"type", "Digits"}, {"individual_digits", false}};
  }));
  VERIFY(!cutsWith(
      [](Json& s) { s["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s?\\w+"; }));
  VERIFY(!cutsWith([](Json& s) {
    s["added_tokens"].push_back({{"id", 5000},
                                 {"content", "a b"},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", false}});
  }));
  VERIFY(!cutsWith([](Json& s) {
    s["added_tokens"].push_back({{"id", 5000},
                                 {"content", "END"},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", true},
                                 {"normalized", false},
                                 {"special", false}});
  }));
}

TEST_CASE(invalidUtf8IsNamedByItsOffsetInTheWholeText) {
  const Tokenizer tokenizer = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  std::string text = mixedText(50'000);
  const std::size_t bad = text.size();
  text += "\xff tail and more words";
  std::string message;
  try {
    streamed(tokenizer, text, false, 1000, 4096);
  } catch (const TextError& e) {
    message = e.what();
  }
  COMPARE(message, "text to encode is not valid UTF-8 (byte " + std::to_string(bad) + ")");
}
