// test_training_data.cpp — `train` reads a dataset by validate-data's rules (issue 20 item 7):
// a chat record the template refuses is one skipped record with its file and line, counted by
// cause, as validate-data reports it; it no longer ends the whole run. And what group-by-length
// does to the shared alpaca fixture: the share of computed positions that are real tokens.
#include "TempDir.h"
#include "TestRunner.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "TrainExamples.h"
#include "TrainTestUtil.h"
#include "common/OsError.h"  // defines: pathText
#include "data/Validator.h"
#include "text/ChatTemplate.h"
#include "text/Tokenizer.h"
#include "train/Batching.h"
#include "train/TrainingData.h"

using namespace lorascope;
namespace fs = std::filesystem;

namespace {

// DIR/alpaca.jsonl holding LINES (and a newline), beside the Qwen2 BPE tokenizer.json.
fs::path alpacaBesideQwenTokenizer(const fs::path& dir, const std::string& lines) {
  fs::copy_file(test::kModelDataDir + "/../../text/data/qwen2_bpe.tokenizer.json",
                dir / "tokenizer.json");
  const fs::path data = dir / "alpaca.jsonl";
  std::ofstream(data) << lines << "\n";
  return data;
}

}  // namespace

TEST_CASE(systemMessageAfterTheStartSkipsOneRecordNotTheRun) {
  const lstest::TempDir tmp;
  const fs::path dir = tmp.path();
  // A model folder's text side: a BPE tokenizer and a chat template that, like many models'
  // own, refuses a system message anywhere but first.
  fs::copy_file(test::kModelDataDir + "/../../text/data/qwen2_bpe.tokenizer.json",
                dir / "tokenizer.json");
  nlohmann::json config;
  config["chat_template"] =
      "{% for m in messages %}{% if m['role'] == 'system' and not loop.first %}"
      "{{ raise_exception('a system message may only come first') }}{% endif %}"
      "{{ m['role'] + ': ' + m['content'] + '\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}";
  std::ofstream(dir / "tokenizer_config.json") << config.dump();
  const fs::path data = dir / "chat.jsonl";
  std::ofstream(data)
      << R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]})"
      << "\n"
      << R"({"messages":[{"role":"user","content":"hi"},{"role":"system","content":"late"},)"
      << R"({"role":"assistant","content":"x"}]})"
      << "\n"
      << R"({"messages":[{"role":"user","content":"ho"},{"role":"assistant","content":"ya"}]})"
      << "\n";

  const train::TrainingData loaded = train::loadTrainingData(data, dir, 2048);
  COMPARE(loaded.examples.size(), std::size_t{2});
  COMPARE(loaded.skippedRecords, std::int64_t{1});
  COMPARE(loaded.skippedByCause.at("tokenize_error"), std::int64_t{1});
  COMPARE(loaded.firstProblems.size(), std::size_t{1});
  VERIFY2(loaded.firstProblems[0].find(data.string() + ": line 2: ") == 0,
          loaded.firstProblems[0].c_str());
  VERIFY2(loaded.firstProblems[0].find("system message may only come first") != std::string::npos,
          loaded.firstProblems[0].c_str());
  COMPARE(train::describeDataLosses(loaded), std::string("1 skipped (tokenize_error 1)"));

  // validate-data counts the same record as its one error.
  const data::ExampleEncoder encoder(text::Tokenizer::fromModelDir(dir),
                                     text::ChatTemplate::forModelDir(dir));
  data::ValidateOptions options;
  options.encoder = &encoder;
  const data::ValidationReport report = data::validateDataset(data, options);
  COMPARE(report.validExamples, std::size_t{2});
  COMPARE(report.tokens->tokenizeErrors, std::size_t{1});
}

TEST_CASE(warningsNameTheirLineOnce) {
  // Issue 20 item 9: "bad.jsonl: line 4: line 4: field \"output\" is empty".
  const lstest::TempDir tmp;
  const fs::path dir = tmp.path();
  const fs::path data = alpacaBesideQwenTokenizer(dir, R"({"instruction": "a", "output": "b"})"
                                                       "\n"
                                                       R"({"instruction": "x", "output": ""})");
  const train::TrainingData loaded = train::loadTrainingData(data, dir, 2048);
  COMPARE(loaded.firstProblems.size(), std::size_t{1});
  VERIFY2(loaded.firstProblems[0].find("line 2: line 2") == std::string::npos,
          loaded.firstProblems[0].c_str());
  VERIFY2(loaded.firstProblems[0].find(data.string() + ": line 2: ") == 0,
          loaded.firstProblems[0].c_str());
}

TEST_CASE(aTokenizerBeyondTheModelsVocabularyIsNamedBeforeTraining) {
  // Another model's tokenizer.json in the folder: its ids pass the model's vocab_size, and the
  // first step's embedding would fail on an id with no word of where it came from.
  const lstest::TempDir tmp;
  const fs::path dir = tmp.path();
  const fs::path data =
      alpacaBesideQwenTokenizer(dir, R"({"instruction": "Name a colour.", "output": "Blue."})");
  const train::TrainingData loaded = train::loadTrainingData(data, dir, 2048);
  std::int32_t largest = 0;
  for (const std::int32_t id : loaded.examples.at(0).ids) {
    largest = std::max(largest, id);
  }
  train::checkTokenIdsFit(loaded, dir, largest + 1);  // fits: no error
  try {
    train::checkTokenIdsFit(loaded, dir, largest);
    FAIL("an id equal to vocab_size was accepted");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    VERIFY2(message.find(common::pathText(dir / "tokenizer.json") + ": gives token id " +
                         std::to_string(largest) + ", beyond the model's vocab_size " +
                         std::to_string(largest)) == 0,
            message.c_str());
    VERIFY2(message.find(common::pathText(dir / "config.json")) != std::string::npos,
            message.c_str());
  }
}

TEST_CASE(positionsPastTheModelsAreWarnedOnlyWhenTheDataReachesThem) {
  train::TrainingData data;
  data.examples.push_back({std::vector<std::int32_t>(100, 1), std::vector<std::int32_t>(100, 1)});
  // Within the model's positions, or a model that does not say: nothing to warn of.
  COMPARE(train::positionsWarning(data, 512, false, 512), std::string());
  COMPARE(train::positionsWarning(data, 1024, false, 0), std::string());
  // max_seq_len beyond them, but every example shorter and no packing: positions stay within.
  COMPARE(train::positionsWarning(data, 1024, false, 64 + 64), std::string());
  // An example longer than the model's positions, or packing to max_seq_len: warned.
  const std::string longer = train::positionsWarning(data, 1024, false, 64);
  VERIFY2(longer.rfind("max_seq_len 1024 exceeds the model's max_position_embeddings 64 (1 "
                       "example is longer): positions past 64 were never trained",
                       0) == 0,
          longer.c_str());
  VERIFY(longer.find("lower --max-seq-len to 64 or less") != std::string::npos);
  const std::string packed = train::positionsWarning(data, 1024, true, 128);
  VERIFY2(packed.find("(packing fills sequences to max_seq_len)") != std::string::npos,
          packed.c_str());
}

namespace {

// ../shared/fixtures/<relative> through LORASCOPE_SHARED_FIXTURES; empty when absent.
fs::path sharedFixture(const std::string& relative) {
  const char* root = std::getenv("LORASCOPE_SHARED_FIXTURES");
  if (root == nullptr || !fs::exists(fs::path(root) / relative))
    return {};
  return fs::path(root) / relative;
}

}  // namespace

// The alpaca fixture (999 records) with a Qwen2-style tokenizer, max_seq_len 512, micro-batch 8
// (scripts/gpu-check.sh loop's setting): grouped by length, >= 95% of the positions computed
// are real tokens in every epoch, with and without packing; the plain shuffle's share is printed
// beside it (README quotes both). Document packing fills >= 95% in the plain shuffle too.
TEST_CASE(groupingByLengthFillsTheAlpacaFixturesBatches) {
  const fs::path data = sharedFixture("datasets/alpaca_en_demo.json");
  const fs::path tokenizer = sharedFixture("tokenizers/qwen2_style_bpe2000.tokenizer.json");
  if (data.empty() || tokenizer.empty())
    SKIP("shared fixtures absent (LORASCOPE_SHARED_FIXTURES)");
  const lstest::TempDir tmp;
  fs::copy_file(tokenizer, tmp.path() / "tokenizer.json");
  const train::TrainingData loaded = train::loadTrainingData(data, tmp.path(), 512);
  VERIFY(loaded.examples.size() > 900);
  std::vector<std::size_t> lengths;
  for (const auto& e : loaded.examples)
    lengths.push_back(std::min<std::size_t>(e.ids.size(), 512));
  std::sort(lengths.begin(), lengths.end());
  std::cout << "example lengths: quartiles " << lengths[lengths.size() / 4] << " "
            << lengths[lengths.size() / 2] << " " << lengths[3 * lengths.size() / 4] << ", p95 "
            << lengths[lengths.size() * 95 / 100] << ", longest " << lengths.back() << "\n";
  for (const train::Packing packing :
       {train::Packing::Off, train::Packing::Causal, train::Packing::Documents}) {
    const auto sequences = train::buildSequences(loaded.examples, 512, packing).sequences;
    const auto count = static_cast<std::int64_t>(sequences.size());
    for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
      const double grouped =
          test::fillOf(sequences, train::lengthGroupedOrder(sequences, 8, 42, epoch, true), 8);
      const double plain = test::fillOf(sequences, train::epochOrder(count, 42, epoch, true), 8);
      std::cout << "alpaca_en_demo, qwen2_style_bpe2000, B8 x S512, packing "
                << train::packingName(packing) << ", epoch " << epoch << ": " << sequences.size()
                << " sequences, fill " << grouped << " grouped by length, " << plain << " not\n";
      const bool documents = packing == train::Packing::Documents;
      VERIFY2(grouped >= 0.95 && (documents ? plain >= 0.95 : grouped > plain),
              lstest::format("packing %s, epoch %lld: fill %.4f grouped, %.4f not",
                             train::packingName(packing), static_cast<long long>(epoch), grouped,
                             plain));
    }
  }
}
