// train/RunDirectory.cpp — config.json, metrics.jsonl, checkpoint rotation, the final adapter.
#include "train/RunDirectory.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "common/DurableFile.h"
#include "common/FolderContents.h"
#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "compute/BuildInfo.h"
#include "train/CheckpointError.h"
#include "train/HfLogs.h"
#include "train/ModelCard.h"
#include "train/PeftExport.h"
#include "train/SafetensorsWriter.h"

namespace lorascope::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kStepPrefix = "step-";

// "step-120" → 120; anything else (temp folders, stray files) → none.
std::optional<std::int64_t> parseStepName(const std::string& name) {
  if (name.rfind(kStepPrefix, 0) != 0 || name.size() == std::strlen(kStepPrefix) ||
      name.size() > std::strlen(kStepPrefix) + 18) {
    return std::nullopt;
  }
  std::int64_t step = 0;
  for (std::size_t i = std::strlen(kStepPrefix); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') {
      return std::nullopt;
    }
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

}  // namespace

json toJson(const StepMetrics& m) {
  json out = {{"step", m.step},
              {"loss", m.loss},
              {"lr", m.learningRate},
              {"grad_norm", m.gradNorm},
              {"tokens_per_s", m.tokensPerS},
              {"micro_batch", m.microBatch},
              {"accumulation", m.accumulation},
              {"epoch", m.epoch},
              {"seconds", m.seconds},
              {"cycle_seconds", m.cycleSeconds},
              {"compute_tokens_per_s", m.computeTokensPerS},
              {"tokens", m.tokens},
              {"positions", m.positions},
              {"predicted_tokens", m.predictedTokens},
              {"device", compute::deviceName(m.device)}};
  // JSON has no NaN: a loss or norm that is not finite is written as null, with the reason.
  if (!m.nonFinite.empty()) {
    out["non_finite"] = m.nonFinite;
  }
  if (m.eval) {
    out["eval_loss"] = m.eval->loss;  // null when not finite, as the loss
    out["eval_predicted_tokens"] = m.eval->predictedTokens;
    out["eval_sequences"] = m.eval->sequences;
    out["eval_batches"] = m.eval->batches;
    out["eval_seconds"] = m.eval->seconds;
  }
  return out;
}

namespace {
double numberOrNaN(const json& j, const char* key) {
  const json& v = j.at(key);
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}
}  // namespace

StepMetrics stepMetricsFromJson(const json& j) {
  StepMetrics m;
  m.step = j.at("step").get<std::int64_t>();
  m.loss = numberOrNaN(j, "loss");
  m.learningRate = j.at("lr").get<double>();
  m.gradNorm = numberOrNaN(j, "grad_norm");
  m.nonFinite = j.value("non_finite", std::string());
  m.tokensPerS = j.at("tokens_per_s").get<double>();
  m.microBatch = j.at("micro_batch").get<std::int64_t>();
  m.accumulation = j.at("accumulation").get<std::int64_t>();
  m.epoch = j.value("epoch", std::int64_t{0});
  m.seconds = j.value("seconds", 0.0);
  // Lines written before the step cycle was measured: tokens_per_s was the compute's.
  m.cycleSeconds = j.value("cycle_seconds", m.seconds);
  m.computeTokensPerS = j.value("compute_tokens_per_s", m.tokensPerS);
  m.tokens = j.value("tokens", std::int64_t{0});
  m.predictedTokens = j.value("predicted_tokens", std::int64_t{0});
  m.positions = j.value("positions", std::int64_t{0});  // 0: a line from before it was written
  // Lines written before runs could move between devices were all CPU steps.
  m.device = j.value("device", "cpu") == "gpu" ? compute::Device::Gpu : compute::Device::Cpu;
  if (j.contains("eval_loss")) {
    EvalMetrics eval;
    eval.step = m.step;
    eval.loss = numberOrNaN(j, "eval_loss");
    eval.predictedTokens = j.value("eval_predicted_tokens", std::int64_t{0});
    eval.sequences = j.value("eval_sequences", std::int64_t{0});
    eval.batches = j.value("eval_batches", std::int64_t{0});
    eval.seconds = j.value("eval_seconds", 0.0);
    m.eval = eval;
  }
  return m;
}

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

RunDirectory::RunDirectory(fs::path dir, json config, std::shared_ptr<const common::FileLock> lock)
    : dir_(std::move(dir)),
      lock_(std::move(lock)),
      config_(std::move(config)),
      configHash_(runConfigHash(config_)) {}

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

// Whether `configPath` is a LoRAscope run's config.json (an object with a "model_path" string),
// not a model's or anything else's.
bool isRunConfig(const fs::path& configPath) {
  try {
    const json config = readRunJson(configPath);
    return config.contains("model_path") && config.at("model_path").is_string();
  } catch (const CheckpointError&) {
    return false;
  }
}

// Whether `inner` is `outer` or inside it, after following links ("./m", "m/../m", a link to m).
bool isWithin(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(inner), ec);
  const fs::path b = fs::weakly_canonical(fs::absolute(outer), ec);
  if (ec)
    return false;
  auto ai = a.begin();
  for (auto bi = b.begin(); bi != b.end(); ++bi, ++ai) {
    if (bi->empty())
      continue;  // a trailing separator
    if (ai == a.end() || *ai != *bi)
      return false;
  }
  return true;
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

// The writer's lock of a run folder (none for a folder no one may write), or CheckpointError
// naming who holds it.
std::shared_ptr<const common::FileLock> lockForWriting(const fs::path& dir) {
  try {
    return std::make_shared<common::FileLock>(dir / kRunLockFile);
  } catch (const common::LockBusy& e) {
    throw CheckpointError(common::pathText(dir),
                          "is in use: " + e.holder().describe() +
                              " trains or exports this run (a run has one writer at a time). "
                              "Wait for it to end, or stop it, then try again");
  } catch (const common::OsError& e) {
    // A folder no one may write (a read-only copy of a run, to export from) has no writer to
    // keep out; a writer's own writes then fail with their own errors.
    if (e.code() == std::errc::read_only_file_system || e.code() == std::errc::permission_denied)
      return nullptr;
    throw CheckpointError(common::pathText(dir), "cannot take the run's lock: " + e.detail());
  }
}

}  // namespace

void checkOutputFolder(const fs::path& dir, const fs::path& modelDir) {
  const std::string shown = common::pathText(dir);
  std::error_code ec;
  if (!modelDir.empty() && isWithin(dir, modelDir)) {
    throw CheckpointError(shown,
                          std::string(fs::equivalent(dir, modelDir, ec) ? "is" : "is inside") +
                              " the model's folder " + common::pathText(modelDir) +
                              ": a run never writes into its model's folder; choose "
                              "another --out folder");
  }
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status))
    return;  // a new folder
  if (!fs::is_directory(status)) {
    throw CheckpointError(shown, "exists and is not a folder; choose another --out folder");
  }
  if (fs::exists(dir / kRunConfigFile, ec) && isRunConfig(dir / kRunConfigFile))
    return;  // a LoRAscope run: RunDirectory::create decides whether it may be reused
  const std::string contents = common::describeFolderEntries(dir, kRunLockFile, ec);
  if (ec) {
    throw CheckpointError(shown,
                          "cannot be listed (" + ec.message() + "); choose another --out folder");
  }
  if (contents.empty())
    return;  // empty, or only the lock file of a run killed as it began
  throw CheckpointError(shown, "is not empty and is not a LoRAscope run: it holds " + contents +
                                   ". A run goes only into a new or empty folder (or its own run "
                                   "folder, to resume it); choose another --out folder");
}

RunDirectory RunDirectory::create(const fs::path& dir, const json& config) {
  if (!config.is_object() || !config.contains("model_path") ||
      !config.at("model_path").is_string()) {
    throw std::invalid_argument("run config must be an object with a \"model_path\" string");
  }
  // The model and data paths are checked before the folder is made: a typo leaves none behind.
  // They are UTF-8 text (pathFromUtf8: no code page on Windows).
  const std::string modelText = config.at("model_path").get<std::string>();
  if (!fs::exists(common::pathFromUtf8(modelText) / "config.json")) {
    throw CheckpointError(modelText, "has no config.json: not a model folder (check --model)");
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
  std::shared_ptr<const common::FileLock> lock = lockForWriting(dir);
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
  return RunDirectory(dir, config, std::move(lock));
}

RunDirectory RunDirectory::open(const fs::path& dir, Access access) {
  const fs::path configPath = dir / kRunConfigFile;
  if (!fs::exists(configPath)) {
    throw CheckpointError(common::pathText(configPath), "is missing: " + common::pathText(dir) +
                                                            " is not a LoRAscope run folder");
  }
  const json config = readRunJson(configPath);
  if (!config.contains("model_path") || !config.at("model_path").is_string()) {
    throw CheckpointError(common::pathText(configPath),
                          "is not a run config (a JSON object with \"model_path\")");
  }
  std::shared_ptr<const common::FileLock> lock;
  if (access == Access::Write) {
    lock = lockForWriting(dir);
  }
  removeStaleStaging(dir);
  return RunDirectory(dir, config, std::move(lock));
}

std::string RunDirectory::baseModel() const {
  return config_.at("model_path").get<std::string>();
}

std::string RunDirectory::baseModelName() const {
  if (config_.contains("model_id") && config_.at("model_id").is_string())
    return config_.at("model_id").get<std::string>();
  return baseModel();
}

void RunDirectory::writeModelCard(const fs::path& dir, const LoraAdapter& adapter,
                                  std::optional<std::int64_t> step) const {
  ModelCardFacts facts;
  facts.baseModel = baseModelName();
  facts.lora = adapter.config;
  facts.dataset =
      common::pathText(common::pathFromUtf8(config_.value("data_path", std::string())).filename());
  facts.lorascopeVersion = compute::buildInfo().version;
  // Runs from before --quantize have no such key: their base weights were as stored.
  const json training = config_.value("training", json::object());
  facts.quantization =
      training.is_object() ? training.value("quantize", std::string("none")) : std::string("none");
  for (const StepMetrics& m : readMetrics(dir_ / kMetricsFile)) {
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
  appendRunFile(dir_ / kMetricsFile, toJson(metrics).dump() + "\n");
  appendTfEvent(tfEventsPath(dir_), tfEventOf(metrics));
}

void RunDirectory::recordEvaluation(const EvalMetrics& eval) const {
  const fs::path path = dir_ / kMetricsFile;
  std::vector<StepMetrics> lines = readMetrics(path);
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
    text += toJson(m).dump() + "\n";
  }
  common::writeFileDurably(path, text);
  appendTfEvent(tfEventsPath(dir_), tfEventOf(eval));
}

std::vector<StepMetrics> RunDirectory::readMetrics(const fs::path& file) {
  if (!fs::exists(file)) {
    return {};
  }
  const std::string text = readRunFile(file);
  std::vector<StepMetrics> out;
  std::size_t start = 0;
  int lineNumber = 0;
  while (start < text.size()) {
    const std::size_t newline = text.find('\n', start);
    const bool terminated = newline != std::string::npos;
    const std::string line = text.substr(start, terminated ? newline - start : std::string::npos);
    start = terminated ? newline + 1 : text.size();
    ++lineNumber;
    if (line.empty()) {
      continue;
    }
    try {
      out.push_back(stepMetricsFromJson(json::parse(line)));
    } catch (const json::exception& e) {
      if (!terminated) {
        break;  // the torn last line of a crash
      }
      throw CheckpointError(common::pathText(file) + ":" + std::to_string(lineNumber),
                            std::string("malformed metrics line: ") + e.what());
    }
  }
  return out;
}

void RunDirectory::truncateMetricsAfter(std::int64_t step) const {
  const fs::path path = dir_ / kMetricsFile;
  if (!fs::exists(path)) {
    return;
  }
  std::string kept;
  for (const StepMetrics& m : readMetrics(path)) {
    if (m.step <= step) {
      kept += toJson(m).dump() + "\n";
    }
  }
  common::writeFileDurably(path, kept);
  truncateTfEventsAfter(tfEventsPath(dir_), step);
}

fs::path RunDirectory::checkpointDir(std::int64_t step) const {
  return dir_ / kCheckpointsDir / (kStepPrefix + std::to_string(step));
}

std::vector<std::int64_t> RunDirectory::checkpointSteps() const {
  std::vector<std::int64_t> steps;
  const fs::path root = dir_ / kCheckpointsDir;
  if (!fs::is_directory(root)) {
    return steps;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    if (const auto step = parseStepName(common::pathText(entry.path().filename()));
        step && entry.is_directory()) {
      steps.push_back(*step);
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

fs::path RunDirectory::saveCheckpoint(const TrainerState& state, int keepLast) const {
  const fs::path root = dir_ / kCheckpointsDir;
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
  const std::string hfState =
      hfTrainerState(readMetrics(dir_ / kMetricsFile), state, config_).dump(2) + "\n";
  common::writeFileDurably(staging / kHfTrainerStateFile, hfState);
  common::replaceDirectory(staging, target);
  common::writeFileDurably(dir_ / kHfTrainerStateFile, hfState);

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
  const fs::path root = dir_ / kCheckpointsDir;
  if (steps.empty()) {
    throw CheckpointError(common::pathText(root),
                          "holds no complete checkpoint to resume from: the run stopped before "
                          "its first one. Start it again with the same train command and --out " +
                              common::pathText(dir_) +
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
  const fs::path target = finalAdapterDir();
  const fs::path staging = dir_ / ("." + std::string(kFinalAdapterDir) + common::tempSuffix());
  fs::remove_all(staging);
  fs::create_directory(staging);
  writePeftAdapter(staging, adapter, baseModelName());
  writeModelCard(staging, adapter);
  common::replaceDirectory(staging, target);
}

}  // namespace lorascope::train
