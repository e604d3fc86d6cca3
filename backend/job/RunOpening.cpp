// job/RunOpening.cpp — the start command's config made into a run: created, or opened and resumed.
#include "job/RunOpening.h"

#include <filesystem>
#include <limits>
#include <map>

#include "common/JsonReader.h"
#include "common/OsError.h"     // defines: pathFromUtf8, pathText
#include "compute/BuildInfo.h"  // defines: queryGpuInventory
#include "compute/Errors.h"     // defines: NoGpuError
#include "engine/StateMirror.h"
#include "group/NcclCollective.h"
#include "group/RankPlan.h"  // defines: parseGpuList
#include "job/CliArgs.h"     // defines: UsageError
#include "job/EngineJob.h"   // defines: kStateMirrorFile
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

// The start's "group": {"rank": R, "size": N, "device": D, "rendezvous": FILE}.
RankSpec rankSpecOf(const json& group) {
  const auto count = [&](const char* key) -> int {
    const auto it = group.find(key);
    if (it == group.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > 4096) {
      throw UsageError(std::string("start: \"group\" needs \"") + key +
                       "\", a whole number from 0 to 4096, got " +
                       (it == group.end() ? std::string("none") : it->dump()));
    }
    return it->get<int>();
  };
  if (!group.is_object()) {
    throw UsageError("start: \"group\" must be an object (rank, size, device, rendezvous)");
  }
  RankSpec spec{count("rank"), count("size"), count("device"), ""};
  if (spec.size < 1 || spec.rank >= spec.size) {
    throw UsageError("start: \"group\": rank " + std::to_string(spec.rank) +
                     " is outside a group of " + std::to_string(spec.size));
  }
  if (spec.size > 1) {
    const auto it = group.find("rendezvous");
    if (it == group.end() || !it->is_string() || it->get<std::string>().empty()) {
      throw UsageError("start: \"group\" of " + std::to_string(spec.size) +
                       " ranks needs \"rendezvous\", the path of its rendezvous file");
    }
    spec.rendezvous = it->get<std::string>();
  }
  return spec;
}

// The device the run computes on: the rank's GPU in a group; the one GPU of --gpus for an engine
// that runs alone (an in-process host: only a supervisor forms a group); else --device's.
std::unique_ptr<compute::Backend> openDevice(const TrainRunSettings& settings,
                                             const StartRequest& request, const RankOpener& opener,
                                             const DeviceLog& log) {
  if (request.group) {
    return opener.backend(*request.group);
  }
  if (settings.gpus.empty()) {
    return openBackend(settings.device, log);
  }
  std::vector<int> devices;
  try {
    devices = group::parseGpuList(settings.gpus,
                                  static_cast<int>(compute::queryGpuInventory().devices.size()));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (devices.size() > 1) {
    throw UsageError("--gpus " + settings.gpus +
                     ": a group of GPUs is formed by the engine supervisor (lorascope-train "
                     "train, the window), one engine per GPU; this engine runs alone");
  }
  return opener.backend(RankSpec{0, 1, devices.front(), ""});
}

// The group a rank joins once its run is open (rank 0) or before it opens it (the others): none
// for a group of one. The barrier: every rank has joined, so rank 0's folder is there to read.
std::unique_ptr<group::Collective> joinGroup(const StartRequest& request,
                                             const RankOpener& opener) {
  if (!request.group || request.group->size < 2) {
    return nullptr;
  }
  std::unique_ptr<group::Collective> collective = opener.join(*request.group);
  collective->barrier();
  return collective;
}

// --batch-size auto in a group: every rank plans its own card and the group runs the smallest
// plan, at most the effective batch over the ranks so that each rank computes at least one
// micro-batch of every step (job/AutoBatch.h). An effective batch smaller than the group leaves
// some rank none at any micro-batch.
void checkGroupSettings(const TrainRunSettings& settings, const StartRequest& request) {
  if (!request.group || !settings.autoMicroBatch) {
    return;
  }
  const std::int64_t ranks = request.group->size;
  const std::int64_t effective = settings.train.effectiveBatch();
  if (effective < ranks) {
    throw UsageError("--batch-size auto on " + std::to_string(ranks) +
                     " GPUs needs an effective batch of at least " + std::to_string(ranks) +
                     " sequences, one micro-batch per GPU; it is " + std::to_string(effective) +
                     " (micro-batch " + std::to_string(settings.train.microBatchSize) + " x " +
                     std::to_string(settings.train.gradAccumulation) +
                     " accumulation): raise --grad-accum, or use fewer GPUs");
  }
}

// A run's settings as its config.json recorded them, its data checked against the fingerprint
// it started with.
TrainRunSettings recordedSettings(const train::RunDirectory& run) {
  const std::string configFile = common::pathText(run.dir() / train::kRunConfigFile);
  const common::JsonReader recorded(run.config(), configFile + ": ",
                                    [](const std::string& message) { throw UsageError(message); });
  TrainRunSettings settings = settingsFromJson(recorded.object("training").value(), configFile);
  const std::string dataPath = recorded.string("data_path");
  const std::string fingerprint = recorded.stringOr("data_fingerprint", "");
  if (const std::string now = fileFingerprint(dataPath); now != fingerprint) {
    throw std::runtime_error(dataPath + ": the data file changed since the run started (" + now +
                             ", recorded " + fingerprint + "); restore it or start a new run");
  }
  return settings;
}

// A rank other than 0: its GPU, the group, then the run rank 0 opened, to read.
OpenedRun openAsRank(const std::string& out, const StartRequest& request,
                     const RankOpener& opener) {
  std::unique_ptr<compute::Backend> backend = opener.backend(*request.group);
  std::unique_ptr<group::Collective> collective = joinGroup(request, opener);
  train::RunDirectory run =
      train::RunDirectory::open(common::pathFromUtf8(out), train::RunDirectory::Access::Read);
  TrainRunSettings settings = recordedSettings(run);
  return OpenedRun{std::move(settings), std::move(backend), std::move(run), request.group->rank,
                   std::move(collective)};
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
  if (config.contains("group")) {
    request.group = rankSpecOf(config["group"]);
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

OpenedRun openRun(const json& config, const DeviceLog& log, const RankOpener& opener) {
  const std::string out = requiredString(config, "out");
  const StartRequest request = StartRequest::of(config);
  if (request.group && request.group->rank > 0) {
    return openAsRank(out, request, opener);
  }
  if (request.resumes()) {
    train::RunDirectory run = train::RunDirectory::open(
        common::pathFromUtf8(out), train::RunDirectory::Access::Write, request.runLockHolder);
    // The run's config.json, read back through the one strict reader (common/JsonReader.h).
    TrainRunSettings settings = recordedSettings(run);
    if (config.contains("device") && !request.group) {
      // This session only: config.json keeps the device the run started with.
      settings.device = requiredString(config, "device");
      settings.gpus.clear();  // a device asked for now is one device
    }
    checkGroupSettings(settings, request);
    std::unique_ptr<compute::Backend> backend = openDevice(settings, request, opener, log);
    std::unique_ptr<group::Collective> collective = joinGroup(request, opener);
    return OpenedRun{std::move(settings), std::move(backend), std::move(run), 0,
                     std::move(collective)};
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
  checkGroupSettings(settings, request);
  // Before the folder is made, so that a start that cannot get its device leaves none behind.
  std::unique_ptr<compute::Backend> backend = openDevice(settings, request, opener, log);
  // The protocol's paths are UTF-8 text: pathFromUtf8, not a narrow (ANSI on Windows) path.
  train::RunDirectory run = train::RunDirectory::create(
      common::pathFromUtf8(out), newRunConfig(modelPath, dataPath, demo, settings),
      request.runLockHolder);
  std::unique_ptr<group::Collective> collective = joinGroup(request, opener);
  return OpenedRun{std::move(settings), std::move(backend), std::move(run), 0,
                   std::move(collective)};
}

const RankOpener& defaultRankOpener() {
  static const RankOpener opener{
      [](const RankSpec& spec) -> std::unique_ptr<compute::Backend> {
        try {
          return compute::createGpuBackend(spec.device);
        } catch (const compute::NoGpuError& e) {
          throw std::runtime_error("GPU " + std::to_string(spec.device) + " is not usable: " +
                                   e.what() + " (lorascope-train devices lists the GPUs)");
        }
      },
      [](const RankSpec& spec) {
        return group::openNcclGroup({spec.rank, spec.size, spec.device,
                                     common::pathFromUtf8(spec.rendezvous), kCollectiveTimeoutMs});
      }};
  return opener;
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
  if (state && opened.writes())
    run.truncateMetricsAfter(state->step);
  return state;
}

}  // namespace lorascope::job
