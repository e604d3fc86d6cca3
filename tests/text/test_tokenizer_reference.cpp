// test_tokenizer_reference.cpp — backend/text against Hugging Face `tokenizers` 0.23: ids,
// post-processed ids and decoded text recorded by scripts/reference/tokenizers.py in
// data/reference_ids.json, for five tokenizers trained there (data/*.tokenizer.json) and the two
// shared fixtures (../shared/fixtures/tokenizers, skipped when absent).
#include "TestRunner.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "text/Tokenizer.h"

using lorascope::text::Tokenizer;
using Json = nlohmann::json;

namespace {

const std::filesystem::path kData = lstest::sourcePath("tests/text/data");

const Json& reference() {
  static const Json data = [] {
    std::ifstream in(kData / "reference_ids.json", std::ios::binary);
    return Json::parse(in);
  }();
  return data;
}

// Where a reference entry's tokenizer.json lives; empty when it is an absent shared fixture.
std::filesystem::path tokenizerPath(const Json& entry) {
  const std::string file = entry.at("file").get<std::string>();
  const std::string prefix = "fixtures:";
  if (file.rfind(prefix, 0) != 0)
    return kData / file;
  const char* fixtures = std::getenv("LORASCOPE_SHARED_FIXTURES");
  if (fixtures == nullptr)
    return {};
  const auto path = std::filesystem::path(fixtures) / file.substr(prefix.size());
  return std::filesystem::exists(path) ? path : std::filesystem::path();
}

std::string show(const std::vector<std::int32_t>& ids) {
  return Json(ids).dump();
}

// Shows text with escapes so that whitespace differences are visible in a failure message.
std::string quoted(const std::string& text) {
  return Json(text).dump();
}

}  // namespace

TEST_DATA(matchesHuggingFace) {
  lstest::addColumn<std::string>("name");
  for (const auto& [name, entry] : reference().items()) {
    if (entry.is_object() && entry.contains("file")) {
      lstest::newRow(name.c_str()) << name;
    }
  }
}

// Every text: encode (no post-processor), encode with it, and decode of both.
TEST_CASE(matchesHuggingFace) {
  FETCH(std::string, name);
  const Json& entry = reference().at(name);
  const auto path = tokenizerPath(entry);
  if (path.empty()) {
    SKIP("shared fixture absent (set LORASCOPE_SHARED_FIXTURES to ../shared/fixtures)");
  }
  const Tokenizer tokenizer = Tokenizer::fromFile(path);
  const Json& texts = reference().at("texts").at("all");
  VERIFY(texts.size() > 100);
  std::vector<std::string> failures;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const auto expected = entry.at("ids")[i].get<std::vector<std::int32_t>>();
    const auto expectedPost = entry.at("ids_post")[i].get<std::vector<std::int32_t>>();
    const auto ids = tokenizer.encode(text);
    if (ids != expected) {
      failures.push_back("encode " + quoted(text) + ": got " + show(ids) + ", HF " +
                         show(expected));
      continue;
    }
    const auto post = tokenizer.encodeWithPostProcessor(text);
    if (post != expectedPost) {
      failures.push_back("post-processed " + quoted(text) + ": got " + show(post) + ", HF " +
                         show(expectedPost));
    }
    const std::string decoded = tokenizer.decode(ids);
    if (decoded != entry.at("decoded")[i].get<std::string>()) {
      failures.push_back("decode " + show(ids) + ": got " + quoted(decoded) + ", HF " +
                         entry.at("decoded")[i].dump());
    }
    if (tokenizer.decode(expectedPost) != entry.at("decoded_post")[i].get<std::string>() ||
        tokenizer.decode(expectedPost, true) !=
            entry.at("decoded_post_skip")[i].get<std::string>()) {
      failures.push_back("decode with special tokens " + show(expectedPost) + " differs");
    }
  }
  std::string report;
  for (std::size_t i = 0; i < failures.size() && i < 8; ++i)
    report += "\n  " + failures[i];
  VERIFY2(failures.empty(), (std::to_string(failures.size()) + " of " +
                             std::to_string(texts.size()) + " texts differ:" + report)
                                .c_str());
}

TEST_DATA(decodesRandomIdsLikeHuggingFace) {
  matchesHuggingFace_data();
}

// Seeded random id sequences (split UTF-8 sequences, byte-fallback bytes, special tokens).
TEST_CASE(decodesRandomIdsLikeHuggingFace) {
  FETCH(std::string, name);
  const Json& entry = reference().at(name);
  const auto path = tokenizerPath(entry);
  if (path.empty())
    SKIP("shared fixture absent (LORASCOPE_SHARED_FIXTURES)");
  const Tokenizer tokenizer = Tokenizer::fromFile(path);
  COMPARE(tokenizer.vocabSize(), entry.at("vocab_size_with_added").get<std::int32_t>());
  int checked = 0;
  for (const Json& c : entry.at("decode_cases")) {
    const auto ids = c.at("ids").get<std::vector<std::int32_t>>();
    const std::string text = tokenizer.decode(ids);
    const std::string skipped = tokenizer.decode(ids, true);
    VERIFY2(
        text == c.at("text").get<std::string>(),
        ("decode " + show(ids) + ": got " + quoted(text) + ", HF " + c.at("text").dump()).c_str());
    VERIFY2(skipped == c.at("text_skip").get<std::string>(),
            ("decode(skip special) " + show(ids) + ": got " + quoted(skipped) + ", HF " +
             c.at("text_skip").dump())
                .c_str());
    ++checked;
  }
  VERIFY(checked >= 50);
}
