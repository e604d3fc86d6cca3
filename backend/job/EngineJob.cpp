// job/EngineJob.cpp — a TrainLoop behind the engine's EngineJob interface.
#include "job/EngineJob.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>

#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "compute/Backend.h"
#include "compute/BuildInfo.h"
#include "compute/Errors.h"
#include "engine/StateMirror.h"
#include "job/AutoBatch.h"
#include "job/RunDevice.h"
#include "job/TrainRunConfig.h"
#include "memory/DeviceAllocator.h"
#include "model/ModelFolder.h"
#include "runtime/LaunchControl.h"
#include "telemetry/Providers.h"
#include "telemetry/Sampler.h"
#include "train/DemoDataset.h"
#include "train/DemoModel.h"
#include "train/Evaluation.h"
#include "train/RunDirectory.h"
#include "train/StateCodec.h"
#include "train/TrainingData.h"

namespace lorascope::job {
namespace {

namespace fs = std::filesystem;
using engine::CancelFlag;
using engine::CheckpointEvent;
using engine::StepEvent;
using engine::Toggle;
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

// How often the state mirror waits for the disk (a machine that goes down loses at most the steps
// since, which are then redone from the mirror's last durable state or the newest checkpoint).
constexpr std::chrono::milliseconds kMirrorDurableEvery{2000};

class TrainingJob : public engine::EngineJob {
 public:
  TrainingJob(const json& config, const engine::EventSink& sink)
      : sink_(sink),
        run_(openOrCreateRun(config)),
        folder_(model::ModelFolder::open(run_.baseModel())),
        faultLedger_(run_.dir() / kFaultLedgerFile),
        sampler_(openSampler()) {
    // LORASCOPE_FAULTS: each rule fires once per run, however often the engine restarts.
    runtime::FaultInjector& faults = runtime::launchControl().faults();
    faults.configure(faultLedger_.begin(runtime::faultConfigFromEnvironment()));
    faults.setObserver([this](const runtime::FiredFault& fault) { faultLedger_.record(fault); });
    const std::string dataPath = run_.config().at("data_path").get<std::string>();
    train::TrainingData data =
        train::loadTrainingData(common::pathFromUtf8(dataPath),
                                common::pathFromUtf8(run_.baseModel()), settings_.train.maxSeqLen);
    train::checkTokenIdsFit(data, common::pathFromUtf8(run_.baseModel()),
                            folder_.config().vocabSize);
    for (const std::string& problem : data.firstProblems) {
      sink(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Warning, problem}});
    }
    if (const std::string warning =
            train::positionsWarning(data, settings_.train.maxSeqLen, settings_.train.packing,
                                    folder_.config().maxPositionEmbeddings);
        !warning.empty()) {
      sink(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Warning, warning}});
    }
    if (const std::string losses = train::describeDataLosses(data); !losses.empty()) {
      sink(engine::TimedEvent{
          0, engine::LogEvent{engine::LogLevel::Warning, dataPath + ": " + losses}});
    }
    prepareEvaluation(data.examples, sink);
    std::optional<train::TrainerState> resume = resumeState(config);
    weights_ =
        placeWeightsLogged(*backend_, folder_.weights(), logLine(), settings_.train.quantization);
    loop_ = std::make_unique<train::TrainLoop>(*backend_, folder_.config(), weights_, data.examples,
                                               settings_.train, std::move(resume));
    if (settings_.autoMicroBatch) {
      autoBatch_.emplace(settings_, *backend_, folder_.config(), data.examples);
      autoBatch_->apply(*loop_, logLine());
    }
    const std::vector<std::byte> state = train::encodeTrainerState(loop_->state());
    mirror_ = std::make_unique<engine::StateMirror>(
        run_.dir() / kStateMirrorFile, state.size() + state.size() / 8 + 4096, state.size());
    // Every step is mirrored for an engine that dies; the disk is waited for at most every
    // kMirrorDurableEvery, for a machine that goes down (engine/StateMirror.h). Two msyncs of
    // the whole state took 74 ms of a 44 ms Qwen-shaped step on the H200, so a durable write
    // after every step kept the engine waiting for the writer.
    mirror_->setDurableEvery(kMirrorDurableEvery);
    if (config.value("resume", false) && !config.value("resume_from_mirror", false)) {
      // A run resumed from a checkpoint: the mirror an earlier session left (maybe further on,
      // when an older checkpoint was chosen) must not be what a crash in this one resumes from.
      mirror_->write(state);
    }
    // The stability options the run starts with, as their toggles would set them.
    applyLaunchOptions(settings_, *backend_);
    if (settings_.allocatorPolicy == "arena") {
      logLine()("allocator-policy arena: " +
                applyToggle(Toggle::AllocatorPolicy, settings_.allocatorPolicy));
    }
    sink(engine::TimedEvent{
        0, engine::LogEvent{
               engine::LogLevel::Info,
               "run " + common::pathText(run_.dir()) + ": " + std::to_string(data.examples.size()) +
                   " examples (" + std::to_string(data.skippedRecords) + " skipped), " +
                   std::to_string(loop_->totalSteps()) + " steps from step " +
                   std::to_string(loop_->state().step) + ", " +
                   std::to_string(loop_->state().adapter.parameterCount()) +
                   " LoRA parameters, micro-batch " + std::to_string(loop_->microBatchSize()) +
                   " x " + std::to_string(loop_->accumulation()) + ", chat template " +
                   data.chatTemplate + ", on " + backend_->capabilities().name}});
    reportStartToggles(sink);
    // The run's metrics so far (cut back to the step it resumes from), read once.
    const std::vector<train::StepMetrics> history =
        runs::readStepRecords(run_.dir() / runs::kMetricsFile);
    replayMirroredStep(config, history, sink);
    restoreEarlyStopping(history);
    findPendingEvaluation(history);
  }

  ~TrainingJob() override {
    runtime::launchControl().faults().setObserver(nullptr);
    if (mirrorWrite_.valid()) {
      mirrorWrite_.wait();  // the writer uses mirror_ until it is done
    }
  }

  std::optional<StepEvent> runStep(const CancelFlag& cancel) override {
    if (pendingEvaluation_ && (!runPendingEvaluation(cancel) || finished())) {
      return takeMirrored();  // cut short again (it runs when the run goes on), or stopped early
    }
    train::StepMetrics m;
    try {
      // The step boundary: watchdog progress, then step fault rules (LORASCOPE_FAULTS). Faults
      // injected here or inside an op behave like the real errors.
      // The watchdog checks from here to the end of the step (StepScope), not between steps.
      struct StepScope {
        ~StepScope() { runtime::launchControl().endStep(); }
      } stepScope;
      timed(between_.beginMs, [&] {
        runtime::launchControl().beginStep(loop_->completedSteps() + 1);
        if (memory::DeviceAllocator* allocator = backend_->deviceAllocator()) {
          allocator->resetPeakStats();  // the readings' "largest request", "at the peak": per step
        }
      });
      m = loop_->step(cancel.flag());
    } catch (const train::TrainingCancelled&) {
      return takeMirrored();  // the step before, as the engine pauses or stops
    } catch (const runtime::InjectedFault& fault) {
      if (fault.kind() == runtime::FaultKind::OutOfMemory) {
        return recoverFromOutOfMemory(fault.op(), fault.what());
      }
      throw engine::StickyDeviceError(
          engine::ErrorEvent{runtime::faultKindName(fault.kind()), fault.op(), 0, fault.what(),
                             "the engine restarts on the next rung of the recovery ladder", true});
    } catch (const memory::OutOfMemoryError& oom) {
      return recoverFromOutOfMemory("allocate", oom.what());
    } catch (const train::NonFiniteTraining&) {
      // The last finite state becomes the newest checkpoint, so that a resume starts there.
      run_.saveCheckpoint(loop_->state(), settings_.keepCheckpoints);
      throw;
    }
    outOfMemoryRetries_ = 0;
    reportStepTiming(m);
    between_ = {};
    // Note [asynchronous state mirror]: the step before was written while this one ran.
    std::optional<StepEvent> previous;
    timed(between_.mirrorWaitMs, [&] { previous = takeMirrored(); });
    if (evaluatesAfter(m.step)) {
      timed(between_.evaluationMs, [&] { m.eval = evaluate(cancel); });
    }
    // Before the mirror: replayMirroredStep reads the step's metrics.
    timed(between_.metricsMs, [&] { run_.appendMetrics(m); });
    // The state as this step left it, downloading while the next step runs; the writer waits
    // for it, encodes it into mirrorPayload_ and writes it.
    timed(between_.snapshotMs, [&] {
      mirrorWrite_ =
          std::async(std::launch::async, [this, pending = loop_->snapshotState()]() mutable {
            pending.waitEncoded(mirrorPayload_);
            mirror_->write(mirrorPayload_);
          });
    });
    if (settings_.checkpointEvery > 0 && m.step % settings_.checkpointEvery == 0 && !finished()) {
      timed(between_.checkpointMs,
            [&] { run_.saveCheckpoint(loop_->state(), settings_.keepCheckpoints); });
    }
    if (m.eval) {  // announced now, after the step before: it may stop the run early
      if (previous) {
        sink_(engine::TimedEvent{0, *previous});
        previous.reset();
      }
      announceEvaluation(*m.eval);
    }
    mirrored_ = std::move(m);
    if (finished()) {  // nothing runs after the last step: it is announced once written
      if (previous) {
        sink_(engine::TimedEvent{0, *previous});
      }
      return takeMirrored();
    }
    return previous;
  }

  std::optional<StepEvent> settle() override {
    loop_->restartCycle();  // stepping stopped (paused, stopping, commands): not the run's time
    between_ = {};
    try {
      return takeMirrored();
    } catch (const std::exception& e) {  // the step's state could not be mirrored: unannounced
      sink_(engine::TimedEvent{
          0, engine::LogEvent{engine::LogLevel::Error,
                              std::string("state mirror: ") + e.what() +
                                  "; the step is not announced and a restart redoes it"}});
      return std::nullopt;
    }
  }

  bool finished() const override { return loop_->finished() || stoppedEarly_; }
  std::int64_t completedSteps() const override { return loop_->completedSteps(); }

  std::string applyToggle(Toggle toggle, const json& value) override {
    announceMirrored();     // the confirmation's step is then the last one announced
    loop_->restartCycle();  // a device move, a rebuilt graph: the user's change, not the run's
    if (toggle == Toggle::MicroBatch) {
      loop_->setMicroBatchSize(value.get<int>(), "user");
      return {};
    }
    if (toggle == Toggle::CpuFallback) {
      if (!value.get<bool>() && !gpuUnavailable_.empty()) {
        throw std::runtime_error(gpuUnavailable_);
      }
      return moveRun(value.get<bool>() ? compute::Device::Cpu : compute::Device::Gpu);
    }
    if (toggle == Toggle::Serialize || toggle == Toggle::Blocking) {
      // Process-wide and live: the next launch sees it (runtime/LaunchControl.h). On the CPU
      // it is kept for when the run is on the GPU (notApplicable() says so).
      runtime::LaunchPolicy policy = runtime::launchControl().policy();
      (toggle == Toggle::Serialize ? policy.serialize : policy.blocking) = value.get<bool>();
      runtime::launchControl().setPolicy(policy);
      return {};
    }
    if (toggle == Toggle::GemmBackend) {
      // Throws UnsupportedOpError (the toggle is refused) for vendor in a build without one.
      backend_->setGemmImplementation(*settings::parseGemm(value.get<std::string>()));
      return {};
    }
    if (toggle == Toggle::AllocatorPolicy) {
      arenaMode_ = value.get<std::string>() == "arena";
      if (memory::DeviceAllocator* allocator = backend_->deviceAllocator()) {
        return applyAllocatorMode(*allocator);
      }
      return {};
    }
    if (toggle == Toggle::ActivationCheckpointing) {
      // At this step boundary: the graph is rebuilt with the option, the adapter and the
      // optimizer state carry over, and the next step stores (or recomputes) activations.
      const bool on = value.get<bool>();
      if (on == settings_.train.activationCheckpointing) {
        return {};
      }
      loop_->setActivationCheckpointing(on, weights_);
      settings_.train.activationCheckpointing = on;
      return std::string(on ? "activations recomputed in backward" : "activations stored") +
             " from step " + std::to_string(loop_->completedSteps() + 1);
    }
    // A toggle of the registry with no effect here: refused (the run stays as it was).
    throw std::runtime_error("this engine has no effect for the toggle " + toggle.name());
  }

  // What does nothing where the run computes now, and why: on a CPU run the settings the registry
  // marks GPU-only (Setting::cpuNote: launch settings, GEMM choice, allocator), kept for when it
  // moves to a GPU; the CPU fallback where there is no GPU to come back to.
  std::string notApplicable(Toggle toggle) const override {
    if (toggle == Toggle::CpuFallback && !gpuUnavailable_.empty()) {
      return "the run can only compute on the CPU here: " + gpuUnavailable_;
    }
    const settings::Setting* setting = settings::registry().findToggle(toggle);
    if (onGpu() || setting == nullptr || setting->cpuNote.empty()) {
      return {};
    }
    return "this run computes on the CPU, " + setting->cpuNote +
           "; the value is kept for when the run is on a GPU";
  }

  CheckpointEvent checkpoint() override {
    announceMirrored();
    const fs::path dir = run_.saveCheckpoint(loop_->state(), settings_.keepCheckpoints);
    if (finished())
      run_.saveFinalAdapter(loop_->state().adapter);
    return CheckpointEvent{common::pathText(dir), loop_->state().step};
  }

  // The device allocator's segments and blocks (PyTorch's snapshot layout); a CPU run has none.
  std::optional<engine::SnapshotEvent> snapshot() override {
    if (memory::DeviceAllocator* allocator = backend_->deviceAllocator()) {
      return engine::SnapshotEvent{allocator->snapshot()};
    }
    return std::nullopt;
  }

  // On the engine's sampler thread, while steps run or hang: queue depth per stream (a CPU run
  // has no queue: it sends none, and the dashboard says that queue depth is a GPU reading),
  // memory, and the watchdog's report when an op of the running step is over its budget.
  engine::InstrumentEvents sampleInstruments() override {
    engine::InstrumentEvents out;
    const runtime::InstrumentReading reading = runtime::launchControl().sample();
    if (!reading.queues.empty()) {
      engine::QueueEvent queue;
      for (const runtime::StreamQueueSample& s : reading.queues) {
        queue.streams.push_back(
            {s.name, static_cast<std::int64_t>(s.depth), static_cast<std::int64_t>(s.peak)});
      }
      out.queue = std::move(queue);
    }
    out.memory = memory();
    const std::int64_t activity = runtime::launchControl().lastActivityMs();
    out.progressed = activity > lastActivitySeenMs_;
    lastActivitySeenMs_ = activity;
    if (const std::optional<runtime::HangReport>& hang = reading.hang) {
      out.hang = engine::ErrorEvent{
          runtime::categoryName(hang->error.category),        hang->op, 0, hang->message,
          "the engine restarts from the last completed step", true};
    }
    return out;
  }

  // The three readings kept apart: our allocator's (GPU runs), the driver's and the host's, the
  // last two from the sampler's latest refresh so that a slow vendor library never delays a step.
  // Between readings: the queue tracker pops completed launches and notes the depth towards the
  // next reading's peak.
  void pollInstruments() override { runtime::launchControl().queues().poll(); }

  // Also called on the sampler thread: the backend is read under backendMutex_.
  std::optional<engine::MemoryEvent> memory() override {
    const std::lock_guard backendLock(backendMutex_);
    engine::MemoryEvent event;
    bool any = false;
    if (memory::DeviceAllocator* allocator = backend_->deviceAllocator()) {
      const memory::AllocatorStats stats = allocator->stats();
      event.allocatedBytes = static_cast<std::uint64_t>(stats.allocatedBytes.current);
      event.reservedBytes = static_cast<std::uint64_t>(stats.reservedBytes.current);
      event.largestFreeBytes = stats.largestFreeBlockBytes;
      event.fragmentation = stats.externalFragmentation;
      event.largestRequestBytes = stats.largestRequestBytes;
      event.inactiveSplitBytes = stats.inactiveSplitBytes;
      event.largestFreeAtPeakBytes = stats.largestFreeAtPeakBytes;
      event.inactiveSplitAtPeakBytes = stats.inactiveSplitAtPeakBytes;
      any = true;
    }
    for (const telemetry::ProviderStatus& status : sampler_->status()) {
      const std::optional<telemetry::Snapshot> snapshot = sampler_->latest(status.provider);
      if (!snapshot || status.stale)
        continue;
      if (snapshot->host) {
        event.hostRssBytes = snapshot->host->processRssBytes;
        event.hostAvailableBytes = snapshot->host->ramAvailableBytes;
        any = true;
      }
      // The first device a GPU provider lists: the one a single-GPU run uses.
      if (!snapshot->devices.empty() && !event.driverUsedBytes) {
        const telemetry::DeviceReading& device = snapshot->devices.front();
        event.driverUsedBytes = device.vramUsedBytes;
        event.driverTotalBytes = device.vramTotalBytes;
        if (device.vramUsedBytes && event.reservedBytes) {
          event.heldOutsideBytes =
              *device.vramUsedBytes - std::min(*device.vramUsedBytes, *event.reservedBytes);
        }
        any = true;
      }
    }
    return any ? std::optional(event) : std::nullopt;
  }

 private:
  DeviceLog logLine() const {
    return [sink = sink_](const std::string& line) {
      sink(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Info, line}});
    };
  }

  // The CPU-fallback toggle: the run moves at this step boundary with everything it carries
  // (TrainLoop::moveTo), the old device's blocks are freed and its cache handed back to the
  // driver, and the confirmation says what happened. When the new device cannot take the run
  // (no GPU, out of memory), the run stays where it is and the toggle is refused.
  std::string moveRun(compute::Device target) {
    if (backend_->capabilities().device == target) {
      return {};
    }
    const std::optional<compute::DeviceMemoryUse> heldBefore = backend_->deviceMemoryUse();
    std::unique_ptr<compute::Backend> other;
    try {
      other = target == compute::Device::Gpu ? compute::createGpuBackend(0)
                                             : compute::createCpuBackend();
    } catch (const compute::NoGpuError& e) {
      throw std::runtime_error(std::string("no usable GPU to move the run to: ") + e.what());
    }
    other->setGemmImplementation(backend_->gemmImplementation());
    if (memory::DeviceAllocator* allocator = other->deviceAllocator()) {
      applyAllocatorMode(*allocator);
    }
    // The loop's graph keeps a reference to weights_, so the new device's weights go into that
    // member (a local would dangle once this returns: the first device run hung in the CPU step
    // after the move, reading freed weights).
    model::ModelWeights placed =
        placeWeightsLogged(*other, folder_.weights(), logLine(), settings_.train.quantization);
    std::swap(weights_, placed);
    try {
      loop_->moveTo(*other, weights_);
    } catch (...) {
      std::swap(weights_, placed);  // the run stays where it was, on its own weights
      throw;
    }
    {
      const std::lock_guard backendLock(backendMutex_);
      std::swap(backend_, other);
    }
    const std::string from = other->capabilities().name;
    placed = {};  // the old device's weights, freed before its cache goes back
    std::string released;
    if (heldBefore) {
      other->releaseCachedMemory();
      const std::uint64_t before = heldBefore->reservedBytes;
      const std::uint64_t left = std::min(other->deviceMemoryUse()->reservedBytes, before);
      released = "; " + std::to_string((before - left) >> 20) + " MiB of device memory released";
    }
    reportDeviceToggles(sink_);  // what applies on the new device
    return "moved the run from " + from + " to " + backend_->capabilities().name + " at step " +
           std::to_string(loop_->completedSteps()) + released;
  }

  bool onGpu() const { return backend_->capabilities().device == compute::Device::Gpu; }

  // Why no GPU can take the run ("" when one can): asked once, when the job starts.
  static std::string gpuUnavailableReason() {
    const compute::GpuInventory inventory = compute::queryGpuInventory();
    if (!inventory.devices.empty()) {
      return {};
    }
    return "no usable GPU (" +
           (inventory.unavailableReason.empty() ? std::string("none found")
                                                : inventory.unavailableReason) +
           ")";
  }

  // The allocator-policy toggle on a device allocator (job/AutoBatch.h: setAllocatorPolicy).
  std::string applyAllocatorMode(memory::DeviceAllocator& allocator) {
    return setAllocatorPolicy(allocator, arenaMode_, folder_.config(), settings_.train,
                              loop_->microBatchSize(), loop_->completedSteps() + 1);
  }

  train::RunDirectory openOrCreateRun(const json& config) {
    const std::string out = requiredString(config, "out");
    if (optionalFlag(config, "resume") || optionalFlag(config, "resume_from_mirror")) {
      train::RunDirectory run =
          train::RunDirectory::open(common::pathFromUtf8(out), train::RunDirectory::Access::Write);
      settings_ = settingsFromJson(run.config().at("training"),
                                   common::pathText(run.dir() / train::kRunConfigFile));
      if (config.contains("device")) {
        // This session only: config.json keeps the device the run started with.
        settings_.device = requiredString(config, "device");
      }
      backend_ = openBackend(settings_.device, logLine());
      const std::string dataPath = run.config().at("data_path").get<std::string>();
      const std::string recorded = run.config().value("data_fingerprint", "");
      if (const std::string now = fileFingerprint(dataPath); now != recorded) {
        throw std::runtime_error(dataPath + ": the data file changed since the run started (" +
                                 now + ", recorded " + recorded +
                                 "); restore it or start a new run");
      }
      return run;
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
    settings_ = defaultSettings(demo);
    applyOptions(settings_, optionsOf(config));
    // Before the folder is made, so that a start that cannot get its device leaves none behind.
    backend_ = openBackend(settings_.device, logLine());
    // The protocol's paths are UTF-8 text: pathFromUtf8, not a narrow (ANSI on Windows) path.
    return train::RunDirectory::create(common::pathFromUtf8(out),
                                       newRunConfig(modelPath, dataPath, demo, settings_));
  }

  // The newest of the state mirror (supervisor restarts) and the newest checkpoint.
  std::optional<train::TrainerState> resumeState(const json& config) {
    if (!optionalFlag(config, "resume") && !optionalFlag(config, "resume_from_mirror")) {
      return std::nullopt;
    }
    std::optional<train::TrainerState> state;
    if (config.contains("checkpoint")) {
      // A checkpoint chosen by step (`train --resume RUN --checkpoint N`).
      if (!config["checkpoint"].is_number_integer())
        throw UsageError("start: \"checkpoint\" must be a step number");
      state = run_.loadCheckpoint(config["checkpoint"].get<std::int64_t>());
    } else if (!run_.checkpointSteps().empty()) {
      state = run_.loadCheckpoint(std::nullopt, [this](const std::string& note) {
        sink_(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Warning, note}});
      });
    }
    const fs::path mirrorPath = run_.dir() / kStateMirrorFile;
    if (optionalFlag(config, "resume_from_mirror") && fs::exists(mirrorPath)) {
      if (auto mirrored = engine::StateMirror::readLatest(mirrorPath)) {
        train::TrainerState fromMirror = train::decodeTrainerState(mirrored->payload);
        if (!state || fromMirror.step > state->step) {
          fromMirror.adapter.config = settings_.train.lora;
          state = std::move(fromMirror);
        }
      }
    }
    if (state)
      run_.truncateMetricsAfter(state->step);
    return state;
  }

  // Out of memory is handled in place, and the step is retried by the next call. The first time
  // in a step the allocator's cache is freed and the step runs again as it was: bit for bit the
  // run it would have been. When that is not enough, the micro-batch is halved (the effective
  // batch stays; its sums are then split differently, so later steps agree with an unshrunk run
  // to rounding, not bit for bit). At micro-batch 1 there is nothing left to shrink.
  std::optional<StepEvent> recoverFromOutOfMemory(const std::string& op, const std::string& what) {
    ++outOfMemoryRetries_;
    std::string action;
    if (outOfMemoryRetries_ == 1) {
      memory::DeviceAllocator* allocator = backend_->deviceAllocator();
      if (allocator != nullptr)
        allocator->emptyCache();
      action = std::string(allocator ? "freed the allocator's cached blocks" : "nothing cached") +
               "; the step is retried as it was";
    } else if (autoBatch_ && autoBatch_->stepDown(*loop_, logLine())) {
      // --batch-size auto: the planner's next smaller micro-batch (logged with its numbers).
      action = "micro-batch stepped down to " + std::to_string(loop_->microBatchSize()) +
               " with accumulation " + std::to_string(loop_->accumulation()) +
               " (batch-size auto, same effective batch); the step is retried";
    } else if (loop_->microBatchSize() > 1) {
      const std::int64_t smaller = loop_->microBatchSize() / 2;
      loop_->setMicroBatchSize(smaller, "oom");
      action = "micro-batch lowered to " + std::to_string(smaller) + " with accumulation " +
               std::to_string(loop_->accumulation()) +
               " (same effective batch); the step is retried";
    } else {
      throw std::runtime_error(
          "out of memory at micro-batch 1 after freeing the cache: " + what +
          " — lower max-seq-len or lora-r, or close what else uses the memory");
    }
    throw engine::RecoverableError(engine::ErrorEvent{"out_of_memory", op, 0, what, action, false});
  }

  // The held-out set: --eval-data's file, or --eval-split's seeded share of `examples` (taken
  // out of them before the loop sees them, the same share in every session of the run).
  void prepareEvaluation(std::vector<train::TokenizedExample>& examples,
                         const engine::EventSink& sink) {
    std::vector<train::TokenizedExample> held;
    std::string source;
    if (settings_.evalSplit > 0.0) {
      held = train::splitForEvaluation(examples, settings_.evalSplit, settings_.train.seed);
      source = std::to_string(held.size()) + " of the data's examples held out (eval-split " +
               std::to_string(settings_.evalSplit).substr(0, 5) + ", seed " +
               std::to_string(settings_.train.seed) + ")";
    } else if (!settings_.evalData.empty()) {
      const std::string& path = settings_.evalData;
      const std::string recorded = run_.config().value("eval_data_fingerprint", "");
      if (const std::string now = fileFingerprint(path); !recorded.empty() && now != recorded) {
        throw std::runtime_error(path + ": the eval data file changed since the run started (" +
                                 now + ", recorded " + recorded +
                                 "); restore it or start a new run");
      }
      train::TrainingData evalData = train::loadTrainingData(common::pathFromUtf8(path),
                                                             common::pathFromUtf8(run_.baseModel()),
                                                             settings_.train.maxSeqLen);
      train::checkTokenIdsFit(evalData, common::pathFromUtf8(run_.baseModel()),
                              folder_.config().vocabSize);
      if (const std::string losses = train::describeDataLosses(evalData); !losses.empty()) {
        sink(engine::TimedEvent{
            0, engine::LogEvent{engine::LogLevel::Warning, path + " (eval): " + losses}});
      }
      held = std::move(evalData.examples);
      source = path;
    } else {
      return;
    }
    evalSequences_ = train::evaluationSequences(held, settings_.train.maxSeqLen);
    sink(engine::TimedEvent{
        0,
        engine::LogEvent{
            engine::LogLevel::Info,
            "evaluation: " + std::to_string(evalSequences_.size()) + " sequences from " + source +
                ", " +
                (settings_.evalEvery > 0
                     ? "every " + std::to_string(settings_.evalEvery) + " steps and after the last"
                     : std::string("after the last step")) +
                (settings_.earlyStoppingPatience > 0
                     ? ", early stopping after " + std::to_string(settings_.earlyStoppingPatience) +
                           " evaluations without improvement"
                     : std::string())}});
  }

  bool evaluatesAfter(std::int64_t step) const {
    return !evalSequences_.empty() &&
           ((settings_.evalEvery > 0 && step % settings_.evalEvery == 0) || loop_->finished());
  }

  // The held-out loss after the step just completed. The step stands whatever happens here: an
  // evaluation cut short (pause, stop) runs again before the next step (runPendingEvaluation),
  // in this engine or the one that resumes the run; one out of memory is skipped and said so (a
  // resumed run tries it once more). Neither is retried as a step.
  std::optional<train::EvalMetrics> evaluate(const CancelFlag& cancel) {
    const std::int64_t step = loop_->completedSteps();
    try {
      return loop_->evaluate(evalSequences_, cancel.flag());
    } catch (const train::TrainingCancelled&) {
      logLine()("evaluation after step " + std::to_string(step) +
                " interrupted; it runs before the next step");
      pendingEvaluation_ = true;
    } catch (const memory::OutOfMemoryError& oom) {
      if (memory::DeviceAllocator* allocator = backend_->deviceAllocator())
        allocator->emptyCache();
      sink_(engine::TimedEvent{
          0, engine::LogEvent{engine::LogLevel::Warning,
                              "evaluation after step " + std::to_string(step) +
                                  " ran out of memory and was skipped: " + oom.what() +
                                  " (lower the micro-batch or max-seq-len)"}});
    }
    return std::nullopt;
  }

  // The evaluation of the last completed step that was cut short; its step's metrics line is
  // written without it. Returns false when it was cut short again.
  bool runPendingEvaluation(const CancelFlag& cancel) {
    pendingEvaluation_ = false;
    const std::optional<train::EvalMetrics> eval = evaluate(cancel);
    if (!eval) {
      return !pendingEvaluation_;  // out of memory: skipped, the run goes on
    }
    run_.recordEvaluation(*eval);
    if (std::optional<StepEvent> step = takeMirrored()) {
      sink_(engine::TimedEvent{0, *step});  // the step first, then its evaluation
    }
    announceEvaluation(*eval);
    return true;
  }

  // A resumed run whose last completed step was to be evaluated and has no evaluation in the
  // metrics (cut short by a stop, or skipped out of memory) evaluates it before its next step.
  void findPendingEvaluation(std::span<const train::StepMetrics> history) {
    const std::int64_t step = loop_->completedSteps();
    if (step == 0 || loop_->finished() || !evaluatesAfter(step)) {
      return;
    }
    bool evaluated = false;
    for (const train::StepMetrics& m : history) {
      if (m.step == step) {
        evaluated = m.eval.has_value();
      }
    }
    pendingEvaluation_ = !evaluated;
  }

  void announceEvaluation(const train::EvalMetrics& eval) {
    const bool stop = earlyStopping_.observe(eval);
    const train::EvalMetrics best = *earlyStopping_.best();
    sink_(engine::TimedEvent{0, engine::evalEvent(eval, best)});
    if (stop && !loop_->finished()) {
      stoppedEarly_ = true;
      logLine()(earlyStopText(best));
    }
  }

  std::string earlyStopText(const train::EvalMetrics& best) const {
    return "early stopping: the eval loss has not improved on " +
           std::to_string(best.loss).substr(0, 6) + " (step " + std::to_string(best.step) +
           ") for " + std::to_string(earlyStopping_.withoutImprovement()) +
           " evaluations; the run ends at step " + std::to_string(loop_->completedSteps()) +
           " of " + std::to_string(loop_->totalSteps());
  }

  // A resumed run continues early stopping where it was: its evaluations so far are in the
  // metrics (already cut back to the step it resumes from).
  void restoreEarlyStopping(std::span<const train::StepMetrics> history) {
    if (evalSequences_.empty())
      return;
    for (const train::StepMetrics& m : history) {
      if (m.eval && earlyStopping_.observe(*m.eval) && !loop_->finished()) {
        stoppedEarly_ = true;
      }
    }
  }

  // Note [asynchronous state mirror]: a step is announced only once its state is in the mirror,
  // so that a crash never loses an announced step (the recovery guarantee). At the step boundary
  // the engine thread only queues the state's copy (TrainLoop::snapshotState: on a GPU, the three
  // flat buffers copied on the device in stream order, then downloaded into pinned memory on a
  // side stream; on the CPU, a host copy), and a writer thread waits for the download, encodes
  // the state straight from it into a buffer it reuses (PendingTrainerState::waitEncoded) and
  // writes it (checksum, copy into the mapping, two msyncs: engine/StateMirror.h)
  // while the next step computes: no step waits for a state download. That step's end (or the
  // engine settling: a pause, a stop, a toggle, a checkpoint, an error) announces it, with its
  // incident event. An evaluation is announced at once (it may stop the run early), after the step
  // before. A crash while it is downloaded or written leaves the mirror at the step before
  // (it never overwrites the newest state), and the step is redone; a crash after it is written but
  // before it is announced is the case replayMirroredStep covers. A failed download (a device
  // error) is the write's error: the step is not announced.
  //
  // Waits for the write in flight and returns the step it holds, announcing its incident first;
  // nothing when no step is pending. Rethrows the write's error (StateMirrorError, or the
  // download's device error).
  std::optional<StepEvent> takeMirrored() {
    if (mirrorWrite_.valid()) {
      mirrorWrite_.get();
    }
    if (!mirrored_) {
      return std::nullopt;
    }
    const train::StepMetrics m = std::move(*mirrored_);
    mirrored_.reset();
    if (!m.nonFinite.empty()) {
      sink_(engine::TimedEvent{0, engine::IncidentEvent{m.nonFinite, "update skipped", m.step}});
    }
    return stepEvent(m, false);
  }
  // takeMirrored's step, through the sink (from calls that return other events).
  void announceMirrored() {
    if (std::optional<StepEvent> step = takeMirrored()) {
      sink_(engine::TimedEvent{0, *step});
    }
  }

  // A step's record as the engine announces it: the record, replayed or not, with the run's steps.
  StepEvent stepEvent(const train::StepMetrics& m, bool replayed) const {
    StepEvent announced = m;
    announced.replayed = replayed;
    announced.totalSteps = loop_->totalSteps();
    return announced;
  }

  // Time the call `work` takes into `slot` (milliseconds), and mark the stage's end as the run's
  // progress for the supervisor's hang watchdog (LaunchControl::noteActivity).
  template <typename Work>
  static void timed(double& slot, Work&& work) {
    const auto start = std::chrono::steady_clock::now();
    std::forward<Work>(work)();
    slot +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    runtime::launchControl().noteActivity();
  }

  // LORASCOPE_STEP_TIMING=1 (scripts/bench_engine_loop.py reads it): where each step cycle went,
  // as a debug log line: the step's own time and its parts, then what ran between the previous
  // step's completion and this step (the engine's share is the rest: publishing events, the memory
  // reading after a step, commands).
  void reportStepTiming(const train::StepMetrics& m) const {
    static const bool enabled = [] {
      const char* value = std::getenv("LORASCOPE_STEP_TIMING");
      return value != nullptr && *value != '\0' && std::string_view(value) != "0";
    }();
    if (!enabled) {
      return;
    }
    const double cycleMs = m.cycleSeconds * 1000.0;
    const double stepMs = m.seconds * 1000.0;
    const Between& b = between_;
    const double measured =
        b.beginMs + b.mirrorWaitMs + b.evaluationMs + b.metricsMs + b.snapshotMs + b.checkpointMs;
    char line[640];
    std::snprintf(line, sizeof line,
                  "step timing %lld: cycle %.2f ms = step %.2f ms (batches %.2f, passes %.2f, "
                  "clip %.2f, update %.2f) + between steps %.2f ms (mirror wait %.2f, "
                  "evaluation %.2f, metrics %.2f, snapshot %.2f, checkpoint %.2f, step begin "
                  "%.2f, engine %.2f); %lld real tokens, %.0f tokens/s, compute %.0f tokens/s",
                  static_cast<long long>(m.step), cycleMs, stepMs, m.stages.batchesMs,
                  m.stages.passesMs, m.stages.clipMs, m.stages.updateMs, cycleMs - stepMs,
                  b.mirrorWaitMs, b.evaluationMs, b.metricsMs, b.snapshotMs, b.checkpointMs,
                  b.beginMs, std::max(0.0, cycleMs - stepMs - measured),
                  static_cast<long long>(m.tokens), m.tokensPerS, m.computeTokensPerS);
    sink_(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Debug, line}});
  }

  // An engine killed after mirroring step N but before announcing it leaves step N done and
  // unannounced, and with the asynchronous mirror (Note [asynchronous state mirror]) the step
  // before it may be too: the mirror of N can be written before N-1's event leaves the engine. A
  // restarted engine announces again, from the run's metrics and marked replayed, every completed
  // step after the last one the supervisor passed on ("announced_through"; without it, the step it
  // resumes at). The supervisor drops a replayed step it has seen.
  void replayMirroredStep(const json& config, std::span<const train::StepMetrics> history,
                          const engine::EventSink& sink) const {
    const std::int64_t step = loop_->completedSteps();
    if (!optionalFlag(config, "resume_from_mirror") || step == 0) {
      return;
    }
    const std::int64_t after =
        std::min(optionalCount(config, "announced_through").value_or(step - 1), step);
    // A step redone after a kill appears more than once, with the same numbers: the last counts.
    std::map<std::int64_t, const train::StepMetrics*> completed;
    for (const train::StepMetrics& m : history) {
      if (m.step > after && m.step <= step) {
        completed.insert_or_assign(m.step, &m);
      }
    }
    for (const auto& [number, m] : completed) {
      sink(engine::TimedEvent{0, stepEvent(*m, true)});
    }
  }

  // One toggle's state at the current step, as a toggle_applied event.
  void confirmToggle(const engine::EventSink& sink, Toggle toggle, json value) const {
    engine::ToggleAppliedEvent event;
    event.toggle = toggle;
    event.value = std::move(value);
    event.step = loop_->completedSteps();
    event.notApplicable = notApplicable(toggle);
    sink(engine::TimedEvent{0, std::move(event)});
  }

  // What the run starts with, confirmed as toggle_applied events like the live changes, so the
  // controls show the state the engine really has (after a restart, the mirrored micro-batch).
  void reportStartToggles(const engine::EventSink& sink) const {
    auto applied = [&](Toggle toggle, json value) {
      confirmToggle(sink, toggle, std::move(value));
    };
    applied(Toggle::MicroBatch, loop_->microBatchSize());
    applied(Toggle::ActivationCheckpointing, settings_.train.activationCheckpointing);
    applied(Toggle::CpuFallback, !onGpu());
    reportDeviceToggles(sink);
  }

  // The toggles whose applicability depends on the device, confirmed again after a move.
  void reportDeviceToggles(const engine::EventSink& sink) const {
    auto applied = [&](Toggle toggle, json value) {
      confirmToggle(sink, toggle, std::move(value));
    };
    const runtime::LaunchPolicy launch = runtime::launchControl().policy();
    applied(Toggle::Serialize, launch.serialize);
    applied(Toggle::Blocking, launch.blocking);
    applied(Toggle::GemmBackend, settings::gemmName(backend_->gemmImplementation()));
    applied(Toggle::AllocatorPolicy, arenaMode_ ? "arena" : "caching");
  }

  static std::unique_ptr<telemetry::Sampler> openSampler() {
    telemetry::ProviderSet providers = telemetry::openProviders();
    std::vector<std::shared_ptr<telemetry::Provider>> all = providers.gpu;
    if (providers.host)
      all.push_back(providers.host);
    auto sampler = std::make_unique<telemetry::Sampler>(std::move(all));
    sampler->start();
    return sampler;
  }

  engine::EventSink sink_;
  TrainRunSettings settings_;
  // Where the run computes (opened with the settings, by openOrCreateRun; the CPU-fallback toggle
  // replaces it) and the model's weights on it, released first.
  std::unique_ptr<compute::Backend> backend_;
  mutable std::mutex backendMutex_;  // the swap of backend_ against the sampler's memory()
  train::RunDirectory run_;
  model::ModelFolder folder_;
  model::ModelWeights weights_;
  runtime::FaultLedger faultLedger_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  std::int64_t lastActivitySeenMs_ = 0;  // sampleInstruments' (the sampler thread's) last reading
  std::optional<AutoMicroBatch> autoBatch_;  // --batch-size auto: plans the step-downs
  std::string gpuUnavailable_ = gpuUnavailableReason();
  int outOfMemoryRetries_ = 0;  // in the step being retried
  bool arenaMode_ = false;      // the allocator-policy toggle, kept across device moves
  std::unique_ptr<train::TrainLoop> loop_;
  std::unique_ptr<engine::StateMirror> mirror_;
  // Note [asynchronous state mirror]: the write in flight, and the step it holds (completed, not
  // yet announced). Declared after mirror_, so that it is waited for before mirror_ goes.
  std::future<void> mirrorWrite_;
  std::vector<std::byte> mirrorPayload_;  // the writer's encoding buffer, reused every step
  std::optional<train::StepMetrics> mirrored_;
  // What ran between the last completed step and the next one's compute, in milliseconds
  // (reportStepTiming; timed).
  struct Between {
    double beginMs = 0.0;  // the next step's boundary: watchdog, fault rules, peak statistics
    double mirrorWaitMs = 0.0;
    double evaluationMs = 0.0;
    double metricsMs = 0.0;
    double snapshotMs = 0.0;  // the state's copy queued and its writer started
    double checkpointMs = 0.0;
  } between_;
  // The last completed step's evaluation was cut short: it runs before the next step.
  bool pendingEvaluation_ = false;
  std::vector<train::Sequence> evalSequences_;  // the held-out set; empty: no evaluation
  train::EarlyStopping earlyStopping_{settings_.earlyStoppingPatience};
  bool stoppedEarly_ = false;
};

}  // namespace

std::unique_ptr<engine::EngineJob> createTrainingJob(const json& config,
                                                     const engine::EventSink& sink) {
  return std::make_unique<TrainingJob>(config, sink);
}

}  // namespace lorascope::job
