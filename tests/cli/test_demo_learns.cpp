// test_demo_learns.cpp — the built-in demo visibly learns: after the default demo run
// (`lorascope-train train --demo`, a fresh cache), the greedy replies of `lorascope-train
// generate` to the demo's held-out prompts (train/DemoDataset.h) begin with the expected answer
// for at least 8 of the 10 with the run's adapter, and for at most 2 of the 10 without it (the
// demo base alone). Prints every reply and how long the first use and the run took.
#include "TempDir.h"
#include "TestRunner.h"

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "common/ChildProcess.h"
#include "common/OsError.h"  // defines: pathText
#include "train/DemoDataset.h"
#include "train/DemoModel.h"

using namespace lorascope;
namespace fs = std::filesystem;

namespace {

struct Output {
  int exitCode = -1;
  std::string out;
  std::string err;
};

Output runTrainer(std::vector<std::string> arguments, const fs::path& cache) {
  common::ChildProcess child({lstest::trainProgram(),
                              std::move(arguments),
                              {{"LORASCOPE_CACHE_DIR", common::pathText(cache)}}});
  child.closeInput();
  Output o;
  std::thread errors([&] {
    char buffer[4096];
    while (std::size_t n = child.readErrorOutput(buffer))
      o.err.append(buffer, n);
  });
  char buffer[4096];
  while (std::size_t n = child.readOutput(buffer))
    o.out.append(buffer, n);
  errors.join();
  const common::ChildExit exit = child.wait();
  o.exitCode = exit.signaled ? 128 + exit.signal : exit.exitCode;
  return o;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

lstest::TempDir tmp_;

TEST_CASE(theDefaultDemoRunAnswersTheHeldOutPrompts) {
  const fs::path cache = fs::path(tmp_.path()) / "cache";
  const fs::path run = fs::path(tmp_.path()) / "run";
  // The first use: the demo base assembled from its committed pretraining adapter.
  auto start = std::chrono::steady_clock::now();
  const fs::path model = train::ensureDemoModel(cache);
  lstest::info("demo base assembled in %.1f s", secondsSince(start));
  start = std::chrono::steady_clock::now();
  const Output training = runTrainer({"train", "--demo", "--out", common::pathText(run)}, cache);
  VERIFY2(training.exitCode == 0, training.out + training.err);
  lstest::info("default demo run: %.1f s", secondsSince(start));

  int withAdapter = 0;
  int withoutAdapter = 0;
  for (const train::DemoExample& heldOut : train::demoHeldOutPrompts()) {
    std::string replies[2];
    for (int adapter = 0; adapter < 2; ++adapter) {
      std::vector<std::string> arguments = {"generate",         "--prompt", heldOut.prompt,
                                            "--max-new-tokens", "40",       "--json"};
      if (adapter == 1) {  // as a user asks: the run alone names its model
        arguments.insert(arguments.end(), {"--adapter", common::pathText(run)});
      } else {
        arguments.insert(arguments.end(), {"--model", common::pathText(model)});
      }
      const Output generated = runTrainer(arguments, cache);
      VERIFY2(generated.exitCode == 0, generated.out + generated.err);
      replies[adapter] = nlohmann::json::parse(generated.out).at("text").get<std::string>();
    }
    const bool baseRight = replies[0].rfind(heldOut.answer, 0) == 0;
    const bool adapterRight = replies[1].rfind(heldOut.answer, 0) == 0;
    withoutAdapter += baseRight ? 1 : 0;
    withAdapter += adapterRight ? 1 : 0;
    lstest::info("%s -> base \"%s\" (%s), adapter \"%s\" (%s)",
                 nlohmann::json(heldOut.prompt).dump().c_str(), replies[0].c_str(),
                 baseRight ? "right" : "wrong", replies[1].c_str(),
                 adapterRight ? "right" : "wrong");
  }
  lstest::info("held-out prompts answered: %d of %d with the adapter, %d without", withAdapter,
               train::kDemoHeldOutCount, withoutAdapter);
  VERIFY2(withAdapter >= 8, std::to_string(withAdapter));
  VERIFY2(withoutAdapter <= 2, std::to_string(withoutAdapter));
}

// A run folder given where a model folder is asked for (its config.json is the run's, not a
// model's) is named as a run, with what to give instead.
TEST_CASE(aRunGivenAsTheModelIsNamedAsARun) {
  const fs::path cache = fs::path(tmp_.path()) / "cache-run-as-model";
  const fs::path run = fs::path(tmp_.path()) / "run-as-model";
  const std::string runText = common::pathText(run);
  const Output training = runTrainer({"train", "--demo", "--steps", "1", "--out", runText}, cache);
  VERIFY2(training.exitCode == 0, training.out + training.err);
  const std::vector<std::pair<std::vector<std::string>, std::string>> asked = {
      {{"generate", "--model", runText, "--ids", "1,2"}, "give it as --adapter " + runText},
      {{"eval", "--model", runText, "--ids", "1,2"}, "give that model"},
      {{"inspect-model", runText}, "inspect that model"},
  };
  for (const auto& [arguments, instead] : asked) {
    const Output answer = runTrainer(arguments, cache);
    VERIFY2(answer.exitCode == 2, arguments.front() + ": " + answer.out + answer.err);
    VERIFY2(answer.err.find(runText + " is a LoRAscope run, not a model folder (it trained on ") !=
                    std::string::npos &&
                answer.err.find("): " + instead) != std::string::npos,
            answer.err);
  }
}

// The Setup page's report on the demo (validate-data with the demo's model, as it lists issues):
// every example valid, no warning, no error, no duplicate.
TEST_CASE(theDemoDatasetValidatesClean) {
  const fs::path cache = fs::path(tmp_.path()) / "validate";
  const Output report =
      runTrainer({"validate-data", common::pathText(train::ensureDemoDataset(cache)), "--model",
                  common::pathText(train::ensureDemoModel(cache)), "--json"},
                 cache);
  VERIFY2(report.exitCode == 0, report.out + report.err);
  const nlohmann::json doc = nlohmann::json::parse(report.out);
  COMPARE(doc.at("records").at("valid_examples").get<int>(), train::kDemoExampleCount);
  COMPARE(doc.at("warnings").at("total").get<int>(), 0);
  COMPARE(doc.at("errors").at("total").get<int>(), 0);
  COMPARE(doc.at("duplicates").at("examples").get<int>(), 0);
}
