// test_tokenizer_units.cpp — backend/text behaviour beyond the reference ids: every bad input
// gives a TextError naming the file and the problem; model folders with tokenizer_config.json;
// both merge spellings; thread safety; the CLI-visible API (tokenId, isSpecial, describe).
#include "TempDir.h"
#include "TestRunner.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "text/Tokenizer.h"

using lorascope::text::TextError;
using lorascope::text::Tokenizer;
using Json = nlohmann::json;

namespace {

const std::filesystem::path kData = lstest::sourcePath("tests/text/data");

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

Json loadJson(const char* file) {
  return Json::parse(readText(kData / file));
}

// The TextError message of `load`, or "" when it did not throw.
template <typename Load>
std::string errorOf(Load load) {
  try {
    load();
  } catch (const TextError& e) {
    return e.what();
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_DATA(unsupportedModelTypeIsNamed) {
  lstest::addColumn<std::string>("type");
  lstest::newRow("WordPiece") << "WordPiece";
  lstest::newRow("Unigram") << "Unigram";
  lstest::newRow("WordLevel") << "WordLevel";
}
TEST_CASE(unsupportedModelTypeIsNamed) {
  FETCH(std::string, type);
  Json spec = loadJson("gpt2_bpe.tokenizer.json");
  spec["model"]["type"] = type;
  const std::string message =
      errorOf([&] { Tokenizer::fromJsonText(spec.dump(), "wordpiece/tokenizer.json"); });
  VERIFY2(contains(message, "wordpiece/tokenizer.json"), message.c_str());
  VERIFY2(contains(message, "model type '" + type + "' is not supported"), message.c_str());
}

TEST_CASE(invalidRegexIsReported) {
  Json spec = loadJson("llama3_bpe.tokenizer.json");
  spec["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(?i:'s|\\p{L}+";
  const std::string message = errorOf([&] { Tokenizer::fromJsonText(spec.dump(), "bad.json"); });
  VERIFY2(contains(message, "bad.json"), message.c_str());
  VERIFY2(contains(message, "invalid regex"), message.c_str());
  VERIFY2(contains(message, "missing closing parenthesis"), message.c_str());
}

TEST_DATA(unsupportedComponentsAreNamed) {
  lstest::addColumn<std::string>("field");
  lstest::addColumn<std::string>("type");
  lstest::newRow("normalizer") << "normalizer"
                               << "Precompiled";
  lstest::newRow("pre_tokenizer") << "pre_tokenizer"
                                  << "BertPreTokenizer";
  lstest::newRow("decoder") << "decoder"
                            << "WordPiece";
  lstest::newRow("post_processor") << "post_processor"
                                   << "Mystery";
}
TEST_CASE(unsupportedComponentsAreNamed) {
  FETCH(std::string, field);
  FETCH(std::string, type);
  Json spec = loadJson("gpt2_bpe.tokenizer.json");
  spec[field] = {{"type", type}};
  const std::string message = errorOf([&] { Tokenizer::fromJsonText(spec.dump(), "x.json"); });
  VERIFY2(contains(message, "x.json: " + field), message.c_str());
  VERIFY2(contains(message, "'" + type + "' is not supported"), message.c_str());
}

// A hostile file nesting Sequences thousands deep is refused, not a stack overflow.
TEST_CASE(deeplyNestedSequenceIsRefused) {
  Json spec = loadJson("gpt2_bpe.tokenizer.json");
  Json normalizer = {{"type", "NFC"}};
  for (int i = 0; i < 1000; ++i) {
    normalizer = {{"type", "Sequence"}, {"normalizers", Json::array({normalizer})}};
  }
  spec["normalizer"] = normalizer;
  const std::string message = errorOf([&] { Tokenizer::fromJsonText(spec.dump(), "deep.json"); });
  VERIFY2(contains(message, "deep.json: normalizer: Sequence nested more than 16 levels deep"),
          message.c_str());
}

TEST_CASE(malformedAndTruncatedJsonNameTheFile) {
  lstest::TempDir dir;
  const auto path = std::filesystem::path(dir.path()) / "tokenizer.json";
  const std::string full = readText(kData / "spm_bpe.tokenizer.json");
  writeText(path, full.substr(0, full.size() / 2));
  std::string message = errorOf([&] { Tokenizer::fromFile(path); });
  VERIFY2(contains(message, path.string()) && contains(message, "malformed JSON"), message.c_str());
  // A number no double holds is nlohmann's out_of_range, not a parse error (found by
  // fuzz_tokenizer_json: it ended the program).
  writeText(path, R"({"model": {"type": "BPE", "vocab": {}}, "added_tokens": [{"id": 5E999}]})");
  message = errorOf([&] { Tokenizer::fromFile(path); });
  VERIFY2(contains(message, path.string()) && contains(message, "malformed JSON") &&
              contains(message, "number overflow"),
          message.c_str());
  writeText(path, "[1, 2, 3]");
  message = errorOf([&] { Tokenizer::fromFile(path); });
  VERIFY2(contains(message, "top level must be a JSON object"), message.c_str());
  writeText(path, R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})");
  message = errorOf([&] { Tokenizer::fromFile(path); });
  VERIFY2(contains(message, "vocab entry 'a' has no valid id"), message.c_str());
}

TEST_CASE(missingFileIsNamed) {
  const std::string message = errorOf([] { Tokenizer::fromFile("/nonexistent/tokenizer.json"); });
  VERIFY2(contains(message, "/nonexistent/tokenizer.json: tokenizer.json not found"),
          message.c_str());
  const std::string dirMessage = errorOf([] { Tokenizer::fromModelDir("/nonexistent-model"); });
  // Joined with the system's separator ('\\' on Windows).
  const std::string joined =
      (std::filesystem::path("/nonexistent-model") / "tokenizer.json").string();
  VERIFY2(contains(dirMessage, joined), dirMessage.c_str());
}

TEST_CASE(aModelFolderWithoutTokenizerJsonSaysWhatToCopy) {
  const std::string message = errorOf([] { Tokenizer::fromModelDir("/nonexistent-model"); });
  VERIFY2(contains(message, ": not found; the model folder needs its tokenizer.json") &&
              contains(message, "copy it into the folder"),
          message.c_str());
}

TEST_CASE(mergeWithUnknownTokenIsRejected) {
  Json spec = loadJson("gpt2_bpe.tokenizer.json");
  spec["model"]["merges"].push_back(Json::array({"Ġ", "notatoken"}));
  const std::string message = errorOf([&] { Tokenizer::fromJsonText(spec.dump(), "m.json"); });
  VERIFY2(contains(message, "m.json: model: merge #") && contains(message, "not in the vocabulary"),
          message.c_str());
  spec = loadJson("gpt2_bpe.tokenizer.json");
  spec["model"]["merges"][0] = "a b c";
  const std::string spaced = errorOf([&] { Tokenizer::fromJsonText(spec.dump(), "m.json"); });
  VERIFY2(contains(spaced, "merge #0 'a b c' is not two tokens"), spaced.c_str());
}

// "a b" strings (Qwen2 files) and [a, b] pairs (newer files) are the same merges.
TEST_CASE(mergeSpellingsGiveSameIds) {
  Json pairs = loadJson("llama3_bpe.tokenizer.json");
  Json strings = pairs;
  for (Json& merge : strings["model"]["merges"]) {
    merge = merge[0].get<std::string>() + " " + merge[1].get<std::string>();
  }
  const Tokenizer a = Tokenizer::fromJsonText(pairs.dump(), "pairs.json");
  const Tokenizer b = Tokenizer::fromJsonText(strings.dump(), "strings.json");
  const std::string text = "The quick brown fox: I'm 12345 steps in, 日本語 😀 café.";
  VERIFY(a.encode(text).size() > 5);
  COMPARE(a.encode(text), b.encode(text));
}

TEST_CASE(invalidUtf8InputIsRejected) {
  const Tokenizer t = Tokenizer::fromFile(kData / "llama3_bpe.tokenizer.json");
  const std::string message = errorOf([&] { t.encode("ok \xC3\x28 bad"); });
  VERIFY2(contains(message, "not valid UTF-8 (byte 3)"), message.c_str());
}

TEST_CASE(unknownIdIsNotDecoded) {
  const Tokenizer t = Tokenizer::fromFile(kData / "llama3_bpe.tokenizer.json");
  const std::vector<std::int32_t> ids = {10, t.vocabSize() + 7};
  const std::string message = errorOf([&] { t.decode(ids); });
  VERIFY2(contains(message, "cannot decode id " + std::to_string(t.vocabSize() + 7)),
          message.c_str());
  // What `generate` asks for (issue 31 item 8): an id past the tokenizer, from an embedding padded
  // past it, decodes as nothing, as transformers does; the ids around it are kept.
  const std::vector<std::int32_t> around = {10, t.vocabSize() + 7, 11};
  const std::vector<std::int32_t> known = {10, 11};
  COMPARE(t.decode(around, false, Tokenizer::UnknownIds::Skip), t.decode(known));
}

TEST_CASE(specialTokensAreSingleIds) {
  const Tokenizer t = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  const auto imStart = t.tokenId("<|im_start|>");
  const auto imEnd = t.tokenId("<|im_end|>");
  VERIFY(imStart && imEnd);
  VERIFY(t.isSpecial(*imStart));
  const auto ids = t.encode("<|im_start|>user\nhi<|im_end|>");
  COMPARE(ids.front(), *imStart);
  COMPARE(ids.back(), *imEnd);
  COMPARE(t.decode(ids, true), std::string("user\nhi"));
  COMPARE(t.tokenText(*imEnd).value(), std::string("<|im_end|>"));
  VERIFY(!t.tokenId("<|not_a_token|>"));
}

TEST_CASE(modelDirReadsBosAndEos) {
  lstest::TempDir dir;
  const std::filesystem::path root = dir.path();
  std::filesystem::copy_file(kData / "llama3_bpe.tokenizer.json", root / "tokenizer.json");
  writeText(root / "tokenizer_config.json",
            R"({"bos_token": "<|begin_of_text|>",
                "eos_token": {"content": "<|eot_id|>", "special": true}})");
  const Tokenizer t = Tokenizer::fromModelDir(root);
  COMPARE(t.bosId(), t.tokenId("<|begin_of_text|>"));
  COMPARE(t.eosId(), t.tokenId("<|eot_id|>"));
  VERIFY(t.bosId().has_value());
  COMPARE(t.eosToken().value(), std::string("<|eot_id|>"));

  writeText(root / "tokenizer_config.json", R"({"eos_token": "<|missing|>"})");
  const std::string message = errorOf([&] { Tokenizer::fromModelDir(root); });
  VERIFY2(contains(message, "tokenizer_config.json: token '<|missing|>' is not in the vocabulary"),
          message.c_str());
  writeText(root / "tokenizer_config.json", "{ not json");
  VERIFY(contains(errorOf([&] { Tokenizer::fromModelDir(root); }), "malformed JSON"));
}

// A model folder under C:\Users\Łukasz\日本: the files are read, and a message about one of them
// holds its path as UTF-8 text (on Windows, path::string() would throw for these names).
TEST_CASE(modelDirUnderNonAsciiNamesLoadsAndNamesItsFiles) {
  lstest::TempDir dir;
  const std::filesystem::path root = dir.nonAsciiFolder();
  std::filesystem::copy_file(kData / "llama3_bpe.tokenizer.json", root / "tokenizer.json");
  writeText(root / "tokenizer_config.json", R"({"bos_token": "<|begin_of_text|>"})");
  const Tokenizer t = Tokenizer::fromModelDir(root);
  COMPARE(t.bosId(), t.tokenId("<|begin_of_text|>"));
  VERIFY(t.bosId().has_value());
  VERIFY(contains(t.source(), lstest::utf8Text(root / "tokenizer.json")));

  writeText(root / "tokenizer_config.json", R"({"eos_token": "<|missing|>"})");
  std::string message = errorOf([&] { Tokenizer::fromModelDir(root); });
  VERIFY2(contains(message, lstest::utf8Text(root / "tokenizer_config.json") +
                                ": token '<|missing|>' is not in the vocabulary"),
          message.c_str());
  std::filesystem::remove(root / "tokenizer.json");
  message = errorOf([&] { Tokenizer::fromModelDir(root); });
  VERIFY2(contains(message, lstest::utf8Text(root / "tokenizer.json") +
                                ": not found; the model folder needs its tokenizer.json") &&
              contains(message, lstest::kNonAsciiUser) && contains(message, lstest::kNonAsciiSub),
          message.c_str());
}

TEST_CASE(tokenizerWithoutConfigHasNoBos) {
  const Tokenizer t = Tokenizer::fromFile(kData / "spm_bpe.tokenizer.json");
  VERIFY(!t.bosId().has_value());
  const std::string description = t.describe();
  VERIFY2(contains(description, "normalizer Sequence[Prepend,Replace]") &&
              contains(description, "decoder Sequence[Replace,ByteFallback,Fuse,Strip]") &&
              contains(description, "post-processor TemplateProcessing"),
          description.c_str());
}

// The word cache is shared: concurrent encodes must give the single-threaded ids.
TEST_CASE(concurrentEncodesAgree) {
  const Tokenizer t = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) {
    texts.push_back("Sample " + std::to_string(i * 7919) + ": the café's naïve 日本 text " +
                    std::string(static_cast<std::size_t>(i % 7), ' ') + "end");
  }
  // Expected ids from a separate instance (its own word cache), one thread.
  const Tokenizer reference = Tokenizer::fromFile(kData / "qwen2_bpe.tokenizer.json");
  std::vector<std::vector<std::int32_t>> expected;
  for (const auto& text : texts) {
    expected.push_back(reference.encode(text));
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (std::size_t i = 0; i < texts.size(); ++i) {
        const std::size_t j = (i * 31 + static_cast<std::size_t>(k) * 17) % texts.size();
        if (t.encode(texts[j]) != expected[j])
          ++mismatches;
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  COMPARE(mismatches.load(), 0);
}

// Older files write Metaspace with add_prefix_space instead of prepend_scheme.
TEST_CASE(legacyMetaspaceSpellingIsRead) {
  Json spec = loadJson("spm_metaspace.tokenizer.json");
  const Tokenizer modern = Tokenizer::fromJsonText(spec.dump(), "modern.json");
  spec["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"add_prefix_space", true}};
  const Tokenizer legacy = Tokenizer::fromJsonText(spec.dump(), "legacy.json");
  // "always" and "first" agree on text that does not follow an added token.
  COMPARE(legacy.encode("hello world  again"), modern.encode("hello world  again"));
  VERIFY(legacy.encode("<s>hello") != modern.encode("<s>hello"));
}
