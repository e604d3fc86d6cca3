// job/RunOpening.cpp — the start command's config made into a run: created, or opened and resumed.
#include "job/RunOpening.h"

#include <filesystem>
#include <limits>
#include <map>

#include "common/JsonReader.h"
#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "engine/StateMirror.h"
#include "job/CliArgs.h"    // defines: UsageError
#include "job/EngineJob.h"  // defines: kStateMirrorFile
#include "train/DemoDataset.h"
#include "train/DemoModel.h"
#include "train/StateCodec.h"

namespace lorascope::job {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::map<std::string, std::string> optionsOf(const json& config) {
  std::map<std::string, std::string> options;
  if (config.contains("options")) {
    if (!config["options"].is_object())
      throw UsageError("start: \"options\" must be an object");
    for (const auto& [key, value] : config["options"].items()) {
      options[key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
  return options;
}

std::string requiredString(const json& config, const char* key) {
  if (!config.contains(key) || !config[key].is_string() || config[key].get<std::string>().empty()) {
    throw UsageError(std::string("start: \"") + key + "\" (a path) is required");
  }
  return config[key].get<std::string>();
}

// An optional true/false field of the start command; names the field when it is anything else
// ("demo": "yes" used to surface as the JSON library's "type must be boolean, but is string").
bool optionalFlag(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) {
    return false;
  }
  if (!it->is_boolean()) {
    throw UsageError(std::string("start: \"") + key + "\" must be true or false, got " +
                     it->dump());
  }
  return it->get<bool>();
}

// An optional whole number of the start command, at least 0; names the field when it is anything
// else.
std::optional<std::int64_t> optionalCount(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) {
    return std::nullopt;
  }
  if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
    throw UsageError(std::string("start: \"") + key +
                     "\" must be a whole number of at least 0, got " + it->dump());
  }
  return it->get<std::int64_t>();
}

void warn(const engine::EventSink& sink, const std::string& line) {
  sink(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Warning, line}});
}

}  // namespace

StartRequest StartRequest::of(const json& config) {
  StartRequest request;
  request.resume = optionalFlag(config, "resume");
  request.resumeFromMirror = optionalFlag(config, "resume_from_mirror");
  if (const auto holder = optionalCount(config, "run_lock_holder")) {
    if (*holder == 0 || *holder > std::numeric_limits<std::uint32_t>::max())
      throw UsageError("start: \"run_lock_holder\" must be a process id, got " +
                       std::to_string(*holder));
    request.runLockHolder = static_cast<std::uint32_t>(*holder);
  }
  if (!request.resumes())
    return request;  // the rest is a resume's
  if (config.contains("checkpoint")) {
    // A checkpoint chosen by step (`train --resume RUN --checkpoint N`).
    if (!config["checkpoint"].is_number_integer())
      throw UsageError("start: \"checkpoint\" must be a step number");
    request.checkpoint = config["checkpoint"].get<std::int64_t>();
  }
  request.announcedThrough = optionalCount(config, "announced_through");
  return request;
}

OpenedRun openRun(const json& config, const DeviceLog& log) {
  const std::string out = requiredString(config, "out");
  const StartRequest request = StartRequest::of(config);
  if (request.resumes()) {
    train::RunDirectory run = train::RunDirectory::open(
        common::pathFromUtf8(out), train::RunDirectory::Access::Write, request.runLockHolder);
    // The run's config.json, read back through the one strict reader (common/JsonReader.h).
    const std::string configFile = common::pathText(run.dir() / train::kRunConfigFile);
    const common::JsonReader recorded(
        run.config(), configFile + ": ",
        [](const std::string& message) { throw UsageError(message); });
    TrainRunSettings settings = settingsFromJson(recorded.object("training").value(), configFile);
    if (config.contains("device")) {
      // This session only: config.json keeps the device the run started with.
      settings.device = requiredString(config, "device");
    }
    std::unique_ptr<compute::Backend> backend = openBackend(settings.device, log);
    const std::string dataPath = recorded.string("data_path");
    const std::string fingerprint = recorded.stringOr("data_fingerprint", "");
    if (const std::string now = fileFingerprint(dataPath); now != fingerprint) {
      throw std::runtime_error(dataPath + ": the data file changed since the run started (" + now +
                               ", recorded " + fingerprint + "); restore it or start a new run");
    }
    return OpenedRun{std::move(settings), std::move(backend), std::move(run)};
  }
  const bool demo = optionalFlag(config, "demo");
  std::string modelPath, dataPath;
  if (demo) {
    const fs::path cache = train::defaultCacheDir();
    modelPath = common::pathText(train::ensureDemoModel(cache));
    dataPath = common::pathText(train::ensureDemoDataset(cache));
  } else {
    modelPath = requiredString(config, "model");
    dataPath = requiredString(config, "data");
  }
  TrainRunSettings settings = defaultSettings(demo);
  applyOptions(settings, optionsOf(config));
  // Before the folder is made, so that a start that cannot get its device leaves none behind.
  std::unique_ptr<compute::Backend> backend = openBackend(settings.device, log);
  // The protocol's paths are UTF-8 text: pathFromUtf8, not a narrow (ANSI on Windows) path.
  train::RunDirectory run = train::RunDirectory::create(
      common::pathFromUtf8(out), newRunConfig(modelPath, dataPath, demo, settings),
      request.runLockHolder);
  return OpenedRun{std::move(settings), std::move(backend), std::move(run)};
}

train::TrainingData loadRunData(const OpenedRun& opened, const model::ModelConfig& model,
                                const engine::EventSink& sink) {
  const train::RunDirectory& run = opened.run;
  const TrainRunSettings& settings = opened.settings;
  const std::string dataPath = run.config().at("data_path").get<std::string>();
  train::TrainingData data =
      train::loadTrainingData(common::pathFromUtf8(dataPath), common::pathFromUtf8(run.baseModel()),
                              settings.train.maxSeqLen);
  train::checkTokenIdsFit(data, common::pathFromUtf8(run.baseModel()), model.vocabSize);
  for (const std::string& problem : data.firstProblems)
    warn(sink, problem);
  // Document packing restarts the positions at each example: only causal packing runs them on.
  if (const std::string warning = train::positionsWarning(
          data, settings.train.maxSeqLen, settings.train.packing == train::Packing::Causal,
          model.maxPositionEmbeddings);
      !warning.empty()) {
    warn(sink, warning);
  }
  if (const std::string losses = train::describeDataLosses(data); !losses.empty())
    warn(sink, dataPath + ": " + losses);
  return data;
}

std::optional<train::TrainerState> resumeState(const StartRequest& request, const OpenedRun& opened,
                                               const engine::EventSink& sink) {
  if (!request.resumes())
    return std::nullopt;
  const train::RunDirectory& run = opened.run;
  std::optional<train::TrainerState> state;
  if (request.checkpoint) {
    state = run.loadCheckpoint(*request.checkpoint);
  } else if (!run.checkpointSteps().empty()) {
    state =
        run.loadCheckpoint(std::nullopt, [&sink](const std::string& note) { warn(sink, note); });
  }
  // The newest of the state mirror (supervisor restarts) and the newest checkpoint.
  const fs::path mirrorPath = run.dir() / kStateMirrorFile;
  if (request.resumeFromMirror && fs::exists(mirrorPath)) {
    if (auto mirrored = engine::StateMirror::readLatest(mirrorPath)) {
      train::TrainerState fromMirror = train::decodeTrainerState(mirrored->payload);
      if (!state || fromMirror.step > state->step) {
        fromMirror.adapter.config = opened.settings.train.lora;
        state = std::move(fromMirror);
      }
    }
  }
  if (state)
    run.truncateMetricsAfter(state->step);
  return state;
}

}  // namespace lorascope::job
