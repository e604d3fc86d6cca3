// train/RunDirectory.cpp — writing a run: config.json, metrics, checkpoint rotation, the adapter.
#include "train/RunDirectory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <mutex>

#include "common/DurableFile.h"
#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "common/Platform.h"
#include "compute/BuildInfo.h"
#include "train/CheckpointError.h"
#include "train/HfLogs.h"
#include "train/ModelCard.h"
#include "train/PeftExport.h"
#include "train/SafetensorsWriter.h"

namespace lorascope::train {
namespace fs = std::filesystem;
using nlohmann::json;

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash) {
  for (char c : bytes) {
    hash ^= static_cast<std::uint8_t>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string fnv1a64Text(std::uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return std::string("fnv1a64:") + text;
}

std::string runConfigHash(const json& config) {
  json relevant = config;
  if (relevant.is_object()) {
    relevant.erase("versions");
    relevant.erase("created");
  }
  return fnv1a64Text(fnv1a64(relevant.dump()));
}

struct RunDirectory::Writer {
  std::mutex mutex;
  std::unique_ptr<const common::FileLock> lock;  // this process's own
  LockHolderPid supervisor;  // else: the parent that holds the lock for this process
};

RunDirectory::RunDirectory(runs::RunFolder folder, std::shared_ptr<Writer> writer)
    : folder_(std::move(folder)),
      writer_(std::move(writer)),
      configHash_(runConfigHash(config())) {}

namespace {

// Whether a run folder holds anything a resume or an export could use: a checkpoint (complete or
// not) or a final adapter. A run that failed or was killed before its first checkpoint holds
// neither, and its folder may be used again.
bool holdsProgress(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / kFinalAdapterDir, ec))
    return true;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir / kCheckpointsDir, ec)) {
    if (common::pathText(entry.path().filename()).rfind("step-", 0) == 0)
      return true;
  }
  return false;
}

// Staging folders of writes by processes that are gone (".adapter.tmp-PID",
// ".adapter.old.tmp-PID" after a kill -9 mid-write): never complete, so they are removed.
void removeStaleStaging(const fs::path& dir) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = common::pathText(entry.path().filename());
    if (!name.empty() && name[0] == '.' && common::isStaleTempName(name)) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

std::string inUse(const common::LockHolder& holder) {
  return "is in use: " + holder.describe() +
         " trains or exports this run (a run has one writer at a time). Wait for it to end, or "
         "stop it, then try again";
}

}  // namespace

// The writer's hold on a run folder: its lock, or (`lockHolder`) the lock its supervisor holds
// for it; none for a folder no one may write. CheckpointError naming who holds it otherwise.
std::shared_ptr<RunDirectory::Writer> RunDirectory::lockForWriting(const fs::path& dir,
                                                                   LockHolderPid lockHolder) {
  auto writer = std::make_shared<Writer>();
  try {
    writer->lock = std::make_unique<common::FileLock>(dir / kRunLockFile);
    return writer;
  } catch (const common::LockBusy& e) {
    const std::uint32_t holder = e.holder().pid;
    if (lockHolder && holder == *lockHolder && holder != 0) {
      const std::uint32_t parent = common::parentProcessId();
      if (holder == parent) {
        writer->supervisor = holder;  // the supervisor that started this engine holds it
        return writer;
      }
      throw CheckpointError(common::pathText(dir),
                            "is in use: " + e.holder().describe() +
                                " holds its lock and is not this engine's supervisor (its parent "
                                "is pid " +
                                std::to_string(parent) +
                                "); a run has one writer at a time. Wait for it to end, or stop "
                                "it, then try again");
    }
    throw CheckpointError(common::pathText(dir), inUse(e.holder()));
  } catch (const common::OsError& e) {
    // A folder no one may write (a read-only copy of a run, to export from) has no writer to
    // keep out; a writer's own writes then fail with their own errors.
    if (e.code() == std::errc::read_only_file_system || e.code() == std::errc::permission_denied)
      return nullptr;
    throw CheckpointError(common::pathText(dir), "cannot take the run's lock: " + e.detail());
  }
}

void RunDirectory::checkWriter() const {
  if (!writer_)
    return;
  const std::lock_guard hold(writer_->mutex);
  if (writer_->lock || !writer_->supervisor || common::parentRuns(*writer_->supervisor))
    return;
  // The supervisor ended, and the system dropped its lock with it.
  try {
    writer_->lock = std::make_unique<common::FileLock>(dir() / kRunLockFile);
  } catch (const common::LockBusy& e) {
    throw CheckpointError(common::pathText(dir()),
                          "is in use: " + e.holder().describe() +
                              " took this run when this engine's supervisor (pid " +
                              std::to_string(*writer_->supervisor) +
                              ") ended; this engine writes no more into it");
  } catch (const common::OsError& e) {
    throw CheckpointError(common::pathText(dir()), "cannot take the run's lock: " + e.detail());
  }
}

RunDirectory RunDirectory::create(const fs::path& dir, const json& config,
                                  LockHolderPid lockHolder) {
  if (!config.is_object() || !config.contains("model_path") ||
      !config.at("model_path").is_string()) {
    throw std::invalid_argument("run config must be an object with a \"model_path\" string");
  }
  // The model and data paths are checked before the folder is made: a typo leaves none behind.
  // They are UTF-8 text (pathFromUtf8: no code page on Windows).
  const std::string modelText = config.at("model_path").get<std::string>();
  const fs::path modelConfig = common::pathFromUtf8(modelText) / "config.json";
  if (!fs::exists(modelConfig)) {
    throw CheckpointError(modelText, "has no config.json: not a model folder (check --model)");
  }
  if (const std::optional<std::string> base = runs::runModelPath(common::pathFromUtf8(modelText))) {
    throw CheckpointError(modelText,  // its config.json is a run's, which no model reader parses
                          "is a LoRAscope run, not a model folder (check --model): --resume " +
                              modelText + " continues that run; its model is " + *base);
  }
  if (config.contains("data_path") && config.at("data_path").is_string()) {
    const std::string data = config.at("data_path").get<std::string>();
    const fs::path dataFile = common::pathFromUtf8(data);
    if (!std::ifstream(dataFile).good() || fs::is_directory(dataFile)) {
      throw CheckpointError(data, "cannot be read as a dataset file (check --data)");
    }
  }
  checkOutputFolder(dir, common::pathFromUtf8(modelText));
  // The folder is made and locked before anything in it is looked at closely or changed (a run
  // that trains there now is the first thing to hear of); config.json comes before the
  // checkpoints folder, so that a run killed in between leaves a folder that is a run or empty.
  fs::create_directories(dir);
  std::shared_ptr<Writer> writer = lockForWriting(dir, lockHolder);
  const fs::path configPath = dir / kRunConfigFile;
  const bool reused = fs::exists(configPath);
  if (reused && holdsProgress(dir)) {
    throw CheckpointError(common::pathText(configPath),
                          "exists: this folder already holds a run with a checkpoint; resume it "
                          "with --resume " +
                              common::pathText(dir) + " or choose another --out folder");
  }
  if (reused) {
    // A run that stopped before its first checkpoint: nothing to resume, so this one takes over
    // its folder (the old metrics lines described steps whose results were never saved).
    fs::remove(dir / kMetricsFile);
  }
  removeStaleStaging(dir);
  common::writeFileDurably(configPath, config.dump(2) + "\n");
  fs::create_directories(dir / kCheckpointsDir);
  return RunDirectory(runs::RunFolder(dir, config), std::move(writer));
}

RunDirectory RunDirectory::open(const fs::path& dir, Access access, LockHolderPid lockHolder) {
  runs::RunFolder folder = runs::RunFolder::open(dir);
  std::shared_ptr<Writer> writer;
  if (access == Access::Write) {
    writer = lockForWriting(dir, lockHolder);
  }
  removeStaleStaging(dir);
  return RunDirectory(std::move(folder), std::move(writer));
}

std::string RunDirectory::baseModel() const {
  return config().at("model_path").get<std::string>();
}

std::string RunDirectory::baseModelName() const {
  if (config().contains("model_id") && config().at("model_id").is_string())
    return config().at("model_id").get<std::string>();
  return baseModel();
}

void RunDirectory::writeModelCard(const fs::path& dir, const LoraAdapter& adapter,
                                  std::optional<std::int64_t> step) const {
  ModelCardFacts facts;
  facts.baseModel = baseModelName();
  facts.lora = adapter.config;
  facts.dataset =
      common::pathText(common::pathFromUtf8(config().value("data_path", std::string())).filename());
  facts.lorascopeVersion = compute::buildInfo().version;
  // Runs from before --quantize have no such key: their base weights were as stored.
  const json training = config().value("training", json::object());
  facts.quantization =
      training.is_object() ? training.value("quantize", std::string("none")) : std::string("none");
  for (const StepMetrics& m : folder_.readSteps()) {
    if (step && m.step > *step)
      break;
    facts.steps = m.step;
    facts.finalLoss = m.loss;
    facts.trainedTokens += m.predictedTokens;
  }
  if (step)
    facts.steps = *step;
  common::writeFileDurably(dir / kModelCardFile, peftModelCard(facts));
}

void RunDirectory::appendMetrics(const StepMetrics& metrics) const {
  checkWriter();
  appendRunFile(dir() / kMetricsFile, runs::toJson(metrics).dump() + "\n");
  appendTfEvent(tfEventsPath(dir()), tfEventOf(metrics));
}

void RunDirectory::recordEvaluation(const EvalMetrics& eval) const {
  checkWriter();
  const fs::path path = dir() / kMetricsFile;
  std::vector<StepMetrics> lines = runs::readStepRecords(path);
  const auto last = std::find_if(lines.rbegin(), lines.rend(),
                                 [&](const StepMetrics& m) { return m.step == eval.step; });
  if (last == lines.rend()) {
    throw CheckpointError(
        common::pathText(path),
        "has no line for step " + std::to_string(eval.step) + " to record its evaluation in");
  }
  last->eval = eval;
  std::string text;
  for (const StepMetrics& m : lines) {
    text += runs::toJson(m).dump() + "\n";
  }
  common::writeFileDurably(path, text);
  appendTfEvent(tfEventsPath(dir()), tfEventOf(eval));
}

void RunDirectory::truncateMetricsAfter(std::int64_t step) const {
  checkWriter();
  const fs::path path = dir() / kMetricsFile;
  if (!fs::exists(path)) {
    return;
  }
  std::string kept;
  for (const StepMetrics& m : runs::readStepRecords(path)) {
    if (m.step <= step) {
      kept += runs::toJson(m).dump() + "\n";
    }
  }
  common::writeFileDurably(path, kept);
  truncateTfEventsAfter(tfEventsPath(dir()), step);
}

fs::path RunDirectory::saveCheckpoint(const TrainerState& state, int keepLast) const {
  checkWriter();
  const fs::path root = dir() / kCheckpointsDir;
  fs::create_directories(root);
  // Leftovers of a crash mid-checkpoint are incomplete by construction.
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    const std::string name = common::pathText(entry.path().filename());
    if (name.rfind(".step-", 0) == 0) {
      fs::remove_all(entry.path());
    }
  }
  const fs::path target = checkpointDir(state.step);
  const fs::path staging = root / ("." + target.filename().string() + common::tempSuffix());
  fs::create_directory(staging);
  writeCheckpointFiles(staging, state, configHash_, baseModelName());
  // Hugging Face's trainer_state.json, in the checkpoint and (the newest) in the run folder.
  const std::string hfState = hfTrainerState(folder_.readSteps(), state, config()).dump(2) + "\n";
  common::writeFileDurably(staging / kHfTrainerStateFile, hfState);
  common::replaceDirectory(staging, target);
  common::writeFileDurably(dir() / kHfTrainerStateFile, hfState);

  if (keepLast > 0) {
    const std::vector<std::int64_t> steps = checkpointSteps();
    const std::size_t keep = static_cast<std::size_t>(keepLast);
    for (std::size_t i = 0; i + keep < steps.size(); ++i) {
      fs::remove_all(checkpointDir(steps[i]));
    }
    common::syncDirectory(root);
  }
  return target;
}

TrainerState RunDirectory::loadCheckpoint(
    std::optional<std::int64_t> step,
    const std::function<void(const std::string&)>& onFallback) const {
  const std::vector<std::int64_t> steps = checkpointSteps();
  std::string available;
  for (std::int64_t s : steps) {
    available += (available.empty() ? "" : ", ") + std::to_string(s);
  }
  const fs::path root = dir() / kCheckpointsDir;
  if (steps.empty()) {
    throw CheckpointError(common::pathText(root),
                          "holds no complete checkpoint to resume from: the run stopped before "
                          "its first one. Start it again with the same train command and --out " +
                              common::pathText(dir()) +
                              " (the folder is reused), or choose another --out");
  }
  if (step && std::find(steps.begin(), steps.end(), *step) == steps.end()) {
    throw CheckpointError(
        common::pathText(root),
        "has no checkpoint of step " + std::to_string(*step) + " (available: " + available + ")");
  }
  const auto read = [&](std::int64_t chosen) {
    TrainerState state = readCheckpoint(checkpointDir(chosen), configHash_);
    if (state.step != chosen) {
      throw CheckpointError(
          common::pathText(checkpointDir(chosen)),
          common::pathText(checkpointStateFile(checkpointDir(chosen)).filename()) + " says step " +
              std::to_string(state.step) + " but the folder is step-" + std::to_string(chosen));
    }
    return state;
  };
  if (step) {
    return read(*step);  // the one asked for, or its error
  }
  // The newest intact one: a damaged newest checkpoint (a bit flip, a corrupted file) falls back
  // to the one before it, and the caller hears which was skipped and why.
  std::string damaged;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    try {
      TrainerState state = read(*it);
      if (!damaged.empty() && onFallback) {
        onFallback("resuming from checkpoint step-" + std::to_string(*it) +
                   ", the newest intact one; skipped: " + damaged);
      }
      return state;
    } catch (const CheckpointError& e) {
      if (std::string(e.what()).find("config hash") != std::string::npos) {
        throw;  // the run's settings changed: no older checkpoint fits either
      }
      damaged += (damaged.empty() ? "" : "; ") + std::string("step-") + std::to_string(*it) + " (" +
                 e.what() + ")";
    }
  }
  throw CheckpointError(common::pathText(root),
                        "holds no intact checkpoint to resume from: " + damaged +
                            ". Restore the files from a copy, or start a new run "
                            "with another --out folder");
}

void RunDirectory::saveFinalAdapter(const LoraAdapter& adapter) const {
  checkWriter();
  const fs::path target = finalAdapterDir();
  const fs::path staging = dir() / ("." + std::string(kFinalAdapterDir) + common::tempSuffix());
  fs::remove_all(staging);
  fs::create_directory(staging);
  writePeftAdapter(staging, adapter, baseModelName());
  writeModelCard(staging, adapter);
  common::replaceDirectory(staging, target);
}

}  // namespace lorascope::train
