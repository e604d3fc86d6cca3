// test_run_folder.cpp — reading a run folder as the window's pages do: config.json, the complete
// checkpoints, the rule for a new run's --out folder, and errors that name the file.
#include "TempDir.h"
#include "TestRunner.h"

#include <fstream>

#include "ExpectError.h"
#include "runs/RunFileError.h"
#include "runs/RunFolder.h"

using namespace lorascope;
using lorascope::test::throwsWith;
namespace fs = std::filesystem;

namespace {

void writeText(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

TEST_CASE(aRunFolderIsReadWithItsStepsAndCompleteCheckpoints) {
  const lstest::TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  writeText(dir / "config.json", R"({"model_path": "/models/m", "training": {"max_steps": 10}})");
  writeText(dir / "metrics.jsonl",
            R"({"step":1,"loss":2,"lr":0.1,"grad_norm":1,"tokens_per_s":5,"micro_batch":1,)"
            R"("accumulation":1})"
            "\n");
  fs::create_directories(dir / "checkpoints" / "step-10");
  fs::create_directories(dir / "checkpoints" / "step-2");
  fs::create_directories(dir / "checkpoints" / ".step-12.tmp-1");  // one being written
  writeText(dir / "checkpoints" / "step-3", "a file, not a checkpoint");
  fs::create_directories(dir / "checkpoints" / "step-x");
  const runs::RunFolder run = runs::RunFolder::open(dir);
  COMPARE(run.config().at("training").at("max_steps").get<int>(), 10);
  COMPARE(run.checkpointSteps(), (std::vector<std::int64_t>{2, 10}));
  COMPARE(run.checkpointDir(2), dir / "checkpoints" / "step-2");
  COMPARE(run.finalAdapterDir(), dir / "adapter");
  COMPARE(run.readSteps().size(), std::size_t{1});
  COMPARE(run.readSteps().front().loss, 2.0);
}

TEST_CASE(checkpointFolderNamesAreStepsAndNothingElse) {
  COMPARE(runs::checkpointStepOfName("step-120"), std::optional<std::int64_t>(120));
  COMPARE(runs::checkpointFolderName(120), std::string("step-120"));
  for (const char* name :
       {"step-", "step-1a", ".step-4.tmp-9", "Step-4", "step-1234567890123456789"})
    VERIFY2(!runs::checkpointStepOfName(name), name);
}

TEST_CASE(whatIsNoRunFolderIsRefusedNamingTheFile) {
  const lstest::TempDir tmp;
  VERIFY(throwsWith<runs::RunFileError>([&] { runs::RunFolder::open(tmp.path() / "none"); },
                                        {lstest::utf8Text(tmp.path() / "none" / "config.json"),
                                         "is missing", "not a LoRAscope run"}));
  writeText(tmp.path() / "model" / "config.json", R"({"model_type": "llama"})");
  VERIFY(throwsWith<runs::RunFileError>([&] { runs::RunFolder::open(tmp.path() / "model"); },
                                        {"is not a run config"}));
  writeText(tmp.path() / "torn" / "config.json", R"({"model_path": )");
  VERIFY(throwsWith<runs::RunFileError>([&] { runs::RunFolder::open(tmp.path() / "torn"); },
                                        {"config.json: is not a well-formed JSON object"}));
  VERIFY(!runs::isRunConfig(tmp.path() / "model" / "config.json"));
  VERIFY(!runs::isRunConfig(tmp.path() / "torn" / "config.json"));
}

TEST_CASE(aNewRunGoesIntoANewEmptyOrRunFolderOutsideTheModel) {
  const lstest::TempDir tmp;
  const fs::path model = tmp.path() / "model";
  writeText(model / "config.json", R"({"model_type": "llama"})");
  runs::checkOutputFolder(tmp.path() / "new", model);
  fs::create_directories(tmp.path() / "empty");
  writeText(tmp.path() / "empty" / "run.lock", "pid=1\n");  // a run killed as it began
  runs::checkOutputFolder(tmp.path() / "empty", model);
  writeText(tmp.path() / "old_run" / "config.json", R"({"model_path": "/models/m"})");
  writeText(tmp.path() / "old_run" / "metrics.jsonl", "");
  runs::checkOutputFolder(tmp.path() / "old_run", model);
  VERIFY(throwsWith<runs::RunFileError>([&] { runs::checkOutputFolder(model / "out", model); },
                                        {"is inside the model's folder"}));
  VERIFY(throwsWith<runs::RunFileError>([&] { runs::checkOutputFolder(model, model); },
                                        {"is the model's folder"}));
  writeText(tmp.path() / "notes" / "todo.txt", "x");
  VERIFY(throwsWith<runs::RunFileError>(
      [&] { runs::checkOutputFolder(tmp.path() / "notes", model); },
      {"is not empty and is not a LoRAscope run: it holds todo.txt"}));
}

TEST_CASE(aFolderNamedByTheTimeTakesTheFirstUnusedSuffix) {
  const lstest::TempDir tmp;
  const fs::path wanted = tmp.path() / "demo-20261129-073000";
  COMPARE(runs::unusedFolder(wanted), wanted);
  fs::create_directories(wanted);
  COMPARE(runs::unusedFolder(wanted), tmp.path() / "demo-20261129-073000-2");
  writeText(tmp.path() / "demo-20261129-073000-2", "a file is there too");
  COMPARE(runs::unusedFolder(wanted), tmp.path() / "demo-20261129-073000-3");
}

TEST_CASE(runFilesAreAppendedAndReadWhole) {
  const lstest::TempDir tmp;
  const fs::path file = tmp.path() / "events.jsonl";
  runs::appendRunFile(file, "one\n");
  runs::appendRunFile(file, "two\n");
  COMPARE(runs::readRunFile(file), std::string("one\ntwo\n"));
  VERIFY(
      throwsWith<runs::RunFileError>([&] { runs::readRunFile(tmp.path() / "gone"); },
                                     {lstest::utf8Text(tmp.path() / "gone"), "cannot be opened"}));
  VERIFY(throwsWith<runs::RunFileError>(
      [&] { runs::appendRunFile(tmp.path() / "no" / "such" / "folder", "x"); },
      {lstest::utf8Text(tmp.path() / "no" / "such" / "folder")}));
}
