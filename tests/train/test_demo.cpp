// test_demo.cpp — the built-in demo: the untrained model, the demo base and the dataset are the
// same bytes on every run (and match committed fingerprints), the folder opens as a Llama model
// with a byte-level tokenizer and a ChatML template, the dataset's answers are right (none
// repeated, the held-out prompts not among them), and a short run on it learns. Whether the
// default demo run answers the held-out prompts is tests/cli/test_demo_learns.
#include "TempDir.h"
#include "TestRunner.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "TrainTestUtil.h"
#include "common/OsError.h"  // defines: pathText
#include "model/Forward.h"
#include "model/ModelLayout.h"
#include "text/ChatTemplate.h"
#include "text/Tokenizer.h"
#include "train/DemoDataset.h"
#include "train/DemoModel.h"
#include "train/RunDirectory.h"  // defines: fnv1a64
#include "train/TrainLoop.h"
#include "train/TrainingData.h"

using namespace lorascope;
using namespace lorascope::test;
namespace fs = std::filesystem;

namespace {

// Fingerprints of the demo files as this version writes them; a change here changes what every
// install trains on, so bump kDemoModelName / kDemoDatasetName with it. The demo base's must be
// the same on every platform (this test runs under Wine too): it is what the demo trains.
constexpr std::uint64_t kDemoModelFnv = 0x170b28e0f4cb5113ull;
constexpr std::uint64_t kDemoBaseFnv = 0xbd91198ad0f44b57ull;
constexpr std::uint64_t kDemoDatasetFnv = 0xc7bc667684bc9c45ull;

std::string readBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

lstest::TempDir tmp_;
fs::path path(const std::string& name) {
  return fs::path(tmp_.path()) / name;
}

TEST_CASE(modelFolderIsDeterministic) {
  train::writeUntrainedDemoModel(path("a"));
  train::writeUntrainedDemoModel(path("b"));
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json",
                           "tokenizer_config.json", "generation_config.json"}) {
    VERIFY2(readBytes(path("a") / file) == readBytes(path("b") / file), file);
  }
  // The same bits on every platform: the weights use no libm function.
  const std::string weights = readBytes(path("a") / "model.safetensors");
  lstest::info("demo model.safetensors: %zu bytes, fnv1a64 %016llx", weights.size(),
               static_cast<unsigned long long>(train::fnv1a64(weights)));
  COMPARE(train::fnv1a64(weights), kDemoModelFnv);
}

// The demo base: the pretraining start with the committed pretraining adapter merged, the same
// bytes every time and on every platform.
TEST_CASE(demoBaseIsDeterministic) {
  const fs::path a = train::ensureDemoModel(path("base-a"));
  const fs::path b = train::ensureDemoModel(path("base-b"));
  const std::string weights = readBytes(a / "model.safetensors");
  COMPARE(weights, readBytes(b / "model.safetensors"));
  lstest::info("demo base model.safetensors: %zu bytes, fnv1a64 %016llx", weights.size(),
               static_cast<unsigned long long>(train::fnv1a64(weights)));
  COMPARE(train::fnv1a64(weights), kDemoBaseFnv);
  // The pretraining start differs from the untrained model in the letters' embeddings only.
  train::writeUntrainedDemoModel(path("untrained"));
  train::writeDemoPretrainingStart(path("start"));
  const model::ModelFolder untrained = model::ModelFolder::open(path("untrained").string());
  const model::ModelFolder start = model::ModelFolder::open(path("start").string());
  const float* before = untrained.weights().embed.as<float>();
  const float* after = start.weights().embed.as<float>();
  constexpr int kHidden = 256;
  for (int token = 0; token < train::kDemoVocabSize; ++token) {
    const bool letter = std::isalpha(token) != 0 && token < 128;
    const bool same = std::equal(before + token * kHidden, before + (token + 1) * kHidden,
                                 after + token * kHidden);
    VERIFY2(same != letter, std::to_string(token));
  }
  // Upper minus lower case is one vector for every letter.
  for (int letter = 1; letter < 26; ++letter) {
    for (int i = 0; i < kHidden; ++i) {
      const auto difference = [&](int pair) {
        return after[('A' + pair) * kHidden + i] - after[('a' + pair) * kHidden + i];
      };
      VERIFY(std::fabs(difference(letter) - difference(0)) < 1e-6f);
    }
  }
}

TEST_CASE(modelOpensWithTokenizerAndTemplate) {
  const fs::path dir = path("open");
  train::writeUntrainedDemoModel(dir);
  const model::ModelFolder folder = model::ModelFolder::open(dir.string());
  const model::ModelConfig& c = folder.config();
  COMPARE(c.family, model::Family::Llama);
  COMPARE(c.hiddenSize, std::int64_t{256});
  COMPARE(c.numLayers, std::int64_t{4});
  COMPARE(c.numKvHeads, std::int64_t{2});
  VERIFY(c.tieWordEmbeddings);
  const std::int64_t params = model::countParameters(c).total;
  VERIFY2(params > 2'500'000 && params < 4'000'000, std::to_string(params));

  const text::Tokenizer tokenizer = text::Tokenizer::fromModelDir(dir);
  COMPARE(tokenizer.vocabSize(), static_cast<std::int32_t>(train::kDemoVocabSize));
  const std::string sample = "Add the two numbers.\n17 + 25 = 42 {ok}";
  const std::vector<std::int32_t> ids = tokenizer.encode(sample);
  COMPARE(ids.size(), sample.size());  // one token per byte
  for (std::size_t i = 0; i < ids.size(); ++i)
    COMPARE(ids[i], static_cast<std::int32_t>(static_cast<unsigned char>(sample[i])));
  COMPARE(tokenizer.decode(ids), sample);
  COMPARE(tokenizer.encode("<|im_start|>user"),
          (std::vector<std::int32_t>{257, 'u', 's', 'e', 'r'}));
  COMPARE(tokenizer.eosId(), std::optional<std::int32_t>{258});
  // The demo's own chat_template runs as Jinja and renders what the built-in ChatML does.
  const text::ChatTemplate own = text::ChatTemplate::forModelDir(dir);
  COMPARE(own.name(), std::string("jinja"));
  const std::vector<text::ChatMessage> turns = {{"user", "Hi"}, {"assistant", "Hello"}};
  const text::ChatTemplate chatMl = text::ChatTemplate::byName("chatml");
  COMPARE(own.render(turns, false), chatMl.render(turns, false));
  COMPARE(own.render({turns[0]}, true), chatMl.render({turns[0]}, true));

  // A fresh random model predicts close to uniformly: loss ≈ ln(vocab).
  auto backend = compute::createCpuBackend();
  const std::vector<std::int32_t> labels = ids;
  const model::ForwardResult r = model::forward(
      *backend, c, folder.weights(), {1, static_cast<std::int64_t>(ids.size()), ids, labels});
  VERIFY2(std::fabs(*r.loss - std::log(259.0)) < 0.5, lstest::format("%g", *r.loss));
}

TEST_CASE(datasetIsDeterministicAndCorrect) {
  const std::vector<train::DemoExample> examples = train::demoExamples();
  COMPARE(examples.size(), std::size_t{train::kDemoExampleCount});
  const std::string jsonl = train::demoDatasetJsonl();
  COMPARE(jsonl, train::demoDatasetJsonl());
  lstest::info("demo dataset: %zu bytes, fnv1a64 %016llx", jsonl.size(),
               static_cast<unsigned long long>(train::fnv1a64(jsonl)));
  COMPARE(train::fnv1a64(jsonl), kDemoDatasetFnv);
  const std::string instruction = "Write the word in upper case.\n";
  const auto checkUpperCased = [&](const train::DemoExample& e) {
    VERIFY2(e.prompt.rfind(instruction, 0) == 0, e.prompt);
    std::string upper = e.prompt.substr(instruction.size());
    for (char& ch : upper)
      ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    COMPARE(e.answer, upper);
  };
  std::set<std::string> prompts;
  for (const train::DemoExample& e : examples) {
    checkUpperCased(e);
    prompts.insert(e.prompt);
  }
  COMPARE(prompts.size(), examples.size());  // no example repeated (validate-data: no duplicate)
  // The held-out prompts: the same task, none of them in the dataset, none repeated.
  const std::vector<train::DemoExample> heldOut = train::demoHeldOutPrompts();
  COMPARE(heldOut.size(), std::size_t{train::kDemoHeldOutCount});
  std::set<std::string> heldOutPrompts;
  for (const train::DemoExample& e : heldOut) {
    checkUpperCased(e);
    VERIFY2(prompts.count(e.prompt) == 0, e.prompt);
    heldOutPrompts.insert(e.prompt);
  }
  COMPARE(heldOutPrompts.size(), heldOut.size());
  // The base's pretraining tasks never upper-case: that is what the demo's adapter teaches.
  for (const train::DemoExample& e : train::demoPretrainingExamples(200)) {
    VERIFY2(e.prompt.rfind("Copy the word.\n", 0) == 0 ||
                e.prompt.rfind("Write the word in lower case.\n", 0) == 0,
            e.prompt);
    VERIFY2(e.prompt.find("upper") == std::string::npos, e.prompt);
  }
  std::size_t lines = 0;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line); ++lines) {
    const nlohmann::json row = nlohmann::json::parse(line);
    COMPARE(row.at("messages").size(), std::size_t{2});
    COMPARE(row["messages"][0].at("role").get<std::string>(), std::string("user"));
    COMPARE(row["messages"][1].at("role").get<std::string>(), std::string("assistant"));
  }
  COMPARE(lines, examples.size());
}

// `train` reads ShareGPT and prompt/completion files like the others: the same conversation
// gives the same tokens and labels as its chat form; a prompt/completion record trains on the
// completion only.
TEST_CASE(trainingReadsShareGptAndPromptCompletion) {
  const fs::path model = train::ensureDemoModel(path("formats"));
  const auto write = [&](const char* name, const std::string& text) {
    std::ofstream(path("formats") / name) << text;
    return path("formats") / name;
  };
  const fs::path chat =
      write("chat.jsonl", R"({"messages": [{"role": "user", "content": "Add 2 and 3."}, )"
                          R"({"role": "assistant", "content": "5"}]})"
                          "\n");
  const fs::path shareGpt =
      write("sharegpt.jsonl", R"({"conversations": [{"from": "human", "value": "Add 2 and 3."}, )"
                              R"({"from": "gpt", "value": "5"}]})"
                              "\n");
  const fs::path promptCompletion = write("pc.jsonl", R"({"prompt": "2 + 3 =", "completion": " 5"})"
                                                      "\n");
  const train::TrainingData fromChat = train::loadTrainingData(chat, model, 64);
  const train::TrainingData fromShareGpt = train::loadTrainingData(shareGpt, model, 64);
  COMPARE(fromShareGpt.examples.size(), std::size_t{1});
  COMPARE(fromShareGpt.examples[0].ids, fromChat.examples[0].ids);
  COMPARE(fromShareGpt.examples[0].labels, fromChat.examples[0].labels);
  const train::TrainingData fromPc = train::loadTrainingData(promptCompletion, model, 64);
  COMPARE(fromPc.examples.size(), std::size_t{1});
  const train::TokenizedExample& pc = fromPc.examples[0];
  // The demo tokenizer has one token per byte: "2 + 3 =" is 7 masked tokens, " 5" and EOS are
  // trained.
  COMPARE(pc.ids.size(), std::size_t{10});
  COMPARE(std::count(pc.labels.begin(), pc.labels.end(), -100), std::ptrdiff_t{7});
  COMPARE(pc.labels.back(), 258);  // <|im_end|>, the demo's EOS
}

TEST_CASE(cacheIsWrittenOnce) {
  const fs::path cache = path("cache");
  const fs::path model = train::ensureDemoModel(cache);
  const fs::path data = train::ensureDemoDataset(cache);
  COMPARE(model, cache / train::kDemoModelName);
  COMPARE(data, cache / train::kDemoDatasetName);
  const auto written = fs::last_write_time(model / "model.safetensors");
  COMPARE(train::ensureDemoModel(cache), model);
  COMPARE(fs::last_write_time(model / "model.safetensors"), written);
  for (const fs::directory_entry& e : fs::directory_iterator(cache))
    VERIFY2(e.path().filename().string()[0] != '.',
            lorascope::common::pathText(e.path()));  // no temp left
  const train::TrainingData tokenized = train::loadTrainingData(data, model, 256);
  COMPARE(tokenized.chatTemplate, std::string("jinja"));
  COMPARE(tokenized.examples.size(), std::size_t{train::kDemoExampleCount});
  COMPARE(tokenized.skippedRecords, std::int64_t{0});
  // Labels cover the response only: "<|im_start|>assistant\n" is masked, "<|im_end|>" trained.
  const train::TokenizedExample& first = tokenized.examples[0];
  std::size_t trained = 0;
  for (std::int32_t label : first.labels)
    trained += label != -100 ? 1 : 0;
  VERIFY(trained > 5 && trained < first.ids.size() / 2);
  COMPARE(first.labels[first.labels.size() - 2], 258);  // <|im_end|> before the final "\n"
}

TEST_CASE(aShortRunLearns) {
  const fs::path cache = path("learn");
  const fs::path model = train::ensureDemoModel(cache);
  const train::TrainingData data =
      train::loadTrainingData(train::ensureDemoDataset(cache), model, 128);
  const model::ModelFolder folder = model::ModelFolder::open(model.string());
  auto backend = compute::createCpuBackend();
  train::TrainConfig config;
  config.lora.rank = 8;
  config.lora.alpha = 16;
  config.adamw.learningRate = 3e-3;
  config.schedule = train::ScheduleKind::Constant;
  config.microBatchSize = 8;
  config.maxSteps = 12;
  config.maxSeqLen = 128;
  train::TrainLoop loop(*backend, folder.config(), folder.weights(), data.examples, config);
  std::vector<double> losses;
  loop.run([&](const train::StepMetrics& m) { losses.push_back(m.loss); });
  COMPARE(losses.size(), std::size_t{12});
  const double first = (losses[0] + losses[1] + losses[2]) / 3;
  const double last = (losses[9] + losses[10] + losses[11]) / 3;
  lstest::info("demo loss: first three steps %.3f, last three %.3f", first, last);
  VERIFY2(last < 0.8 * first, lstest::format("%g → %g", first, last));
}

// scripts/reference/peft_check.py loaded the demo folder with transformers 5.17: its tokenizer
// gives our ids, its chat template our rendering, its forward our logits.
TEST_CASE(transformersReadsTheDemoAsWeDo) {
  const fs::path reference =
      fs::path(lstest::sourcePath("tests/train/peft_reference")) / "peft_check.json";
  if (!fs::exists(reference))
    SKIP("no committed reference (run scripts/reference/peft_check.py on the device machine)");
  std::ifstream in(reference);
  const nlohmann::json demo = nlohmann::json::parse(in).at("demo");
  const fs::path dir = path("hf");
  train::writeUntrainedDemoModel(dir);
  const text::Tokenizer tokenizer = text::Tokenizer::fromModelDir(dir);
  const std::vector<std::int32_t> ids = tokenizer.encode(demo.at("sample").get<std::string>());
  COMPARE(ids, demo.at("ids").get<std::vector<std::int32_t>>());
  COMPARE(tokenizer.eosId(), std::optional<std::int32_t>{demo.at("eos_token_id").get<int>()});
  const std::string rendered = text::ChatTemplate::forModelDir(dir).render(
      {{"user", "Reverse the order of the words.\n\n### Input:\nred fox"},
       {"assistant", "fox red"}},
      false);
  COMPARE(rendered, demo.at("chat_rendered").get<std::string>());

  const model::ModelFolder folder = model::ModelFolder::open(dir.string());
  auto backend = compute::createCpuBackend();
  const auto n = static_cast<std::int64_t>(ids.size());
  const model::ForwardResult r =
      model::forward(*backend, folder.config(), folder.weights(), {1, n, ids, ids});
  VERIFY(std::fabs(*r.loss - demo.at("loss").get<double>()) < 1e-4);
  const std::vector<int> positions = demo.at("positions").get<std::vector<int>>();
  for (std::size_t k = 0; k < positions.size(); ++k) {
    const float* row = r.logits.as<float>() + positions[k] * train::kDemoVocabSize;
    const std::vector<float> ours(row, row + train::kDemoVocabSize);
    VERIFY(closeRelativeToMax(ours, demo.at("logits")[k].get<std::vector<float>>(), 1e-4,
                              "demo logits at " + std::to_string(positions[k])));
  }
}
