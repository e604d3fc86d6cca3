// cli/cmd_train.cpp — `lorascope-train train`: a LoRA run into a run folder.
//   train --model DIR --data FILE --out RUN_DIR [options]   a new run
//   train --demo [--out RUN_DIR] [options]                  the built-in demo model and dataset
//   train --resume RUN_DIR [--checkpoint N] [--device D]    continue a run from its checkpoint
// --device cpu|gpu|auto is recorded in config.json as asked; a resumed run may name another
// (the state moves with it), and every metrics line says where its step ran.
// A progress bar on a terminal (step/total, loss, tokens/s, ETA), one line per step otherwise.
// Ctrl-C / SIGTERM: the step in progress finishes, a checkpoint is written, exit 0; a second
// Ctrl-C abandons the step and checkpoints the last completed one.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/Commands.h"
#include "compute/Backend.h"
#include "job/AutoBatch.h"
#include "job/CliArgs.h"
#include "job/RunDevice.h"
#include "job/TrainRunConfig.h"
#include "memory/AllocatorStats.h"  // defines: OutOfMemoryError
#include "model/ModelFolder.h"
#include "train/DemoDataset.h"
#include "train/DemoModel.h"
#include "train/RunDirectory.h"
#include "train/TrainingData.h"

namespace lorascope::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::atomic<int> gSignals{0};           // SIGINT/SIGTERM received
std::atomic<bool> gAbandonStep{false};  // set by the second one

extern "C" void onStopSignal(int) {
  if (gSignals.fetch_add(1) >= 1) {
    gAbandonStep.store(true);
  }
}

std::string formatSeconds(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, (s / 60) % 60);
  } else {
    std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  }
  return text;
}

class Progress {
 public:
  Progress(std::int64_t total, std::int64_t firstStep)
      : total_(total),
        firstStep_(firstStep),
        terminal_(::isatty(STDOUT_FILENO) == 1),
        start_(std::chrono::steady_clock::now()) {}

  void step(const train::StepMetrics& m) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double perStep = elapsed / static_cast<double>(m.step - firstStep_);
    const double eta = perStep * static_cast<double>(total_ - m.step);
    char line[256];
    std::snprintf(line, sizeof line,
                  "step %lld/%lld  loss %.4f  lr %.2e  grad %.3f  %.0f tok/s  ETA %s",
                  static_cast<long long>(m.step), static_cast<long long>(total_), m.loss,
                  m.learningRate, m.gradNorm, m.tokensPerS, formatSeconds(eta).c_str());
    if (!terminal_) {
      std::cout << line << std::endl;
      return;
    }
    constexpr int kBarWidth = 24;
    const int filled = static_cast<int>(kBarWidth * m.step / std::max<std::int64_t>(total_, 1));
    std::cout << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
              << std::string(static_cast<std::size_t>(kBarWidth - filled), '.') << "] " << line
              << "\x1b[K" << std::flush;
  }
  void finish() {
    if (terminal_) {
      std::cout << "\n";
    }
  }

 private:
  std::int64_t total_;
  std::int64_t firstStep_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
};

json readConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw job::UsageError("--config " + path + ": cannot be read");
  }
  const json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw job::UsageError("--config " + path + ": not a JSON object of option names and values");
  }
  return doc;
}

// Options in force: the --config file first, then the command line.
std::map<std::string, std::string> collectOptions(const job::CliArgs& parsed) {
  std::map<std::string, std::string> options;
  if (const auto file = parsed.value("config")) {
    for (const auto& [key, value] : readConfigFile(*file).items()) {
      options[key] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
  for (const std::string& name : job::trainValueOptions()) {
    if (const auto v = parsed.value(name)) {
      options[name] = *v;
    }
  }
  return options;
}

void printLine(const std::string& line) {
  std::cout << line << "\n";
}

struct RunSetup {
  std::unique_ptr<compute::Backend> backend;  // opened before the run folder is touched
  train::RunDirectory run;
  job::TrainRunSettings settings;
  std::optional<train::TrainerState> resume;
};

RunSetup newRun(const job::CliArgs& parsed) {
  const bool demo = parsed.has("demo");
  std::string modelPath, dataPath;
  if (demo) {
    const fs::path cache = train::defaultCacheDir();
    modelPath = train::ensureDemoModel(cache).string();
    dataPath = train::ensureDemoDataset(cache).string();
    std::cout << "demo: model " << modelPath << "\n      data  " << dataPath << "\n";
  } else {
    modelPath = parsed.required("model");
    dataPath = parsed.required("data");
  }
  const std::string out =
      demo ? parsed.value("out").value_or("lorascope-demo-run") : parsed.required("out");
  job::TrainRunSettings settings = job::defaultSettings(demo);
  job::applyOptions(settings, collectOptions(parsed));
  std::unique_ptr<compute::Backend> backend = job::openBackend(settings.device, printLine);
  const json config = job::newRunConfig(modelPath, dataPath, demo, settings);
  return {std::move(backend), train::RunDirectory::create(out, config), settings, std::nullopt};
}

RunSetup resumedRun(const job::CliArgs& parsed) {
  train::RunDirectory run = train::RunDirectory::open(parsed.required("resume"));
  const std::string configFile = (run.dir() / train::kRunConfigFile).string();
  job::TrainRunSettings settings = job::settingsFromJson(run.config().at("training"), configFile);
  if (const auto device = parsed.value("device")) {
    settings.device = *device;  // this session only: config.json keeps what the run started with
  }
  std::unique_ptr<compute::Backend> backend = job::openBackend(settings.device, printLine);
  const std::string dataPath = run.config().at("data_path").get<std::string>();
  const std::string recorded = run.config().value("data_fingerprint", "");
  if (job::fileFingerprint(dataPath) != recorded) {
    throw std::runtime_error(dataPath + ": the data file changed since the run started (" +
                             job::fileFingerprint(dataPath) + ", recorded " + recorded +
                             "); restore it or start a new run");
  }
  std::optional<std::int64_t> step;
  if (const auto text = parsed.value("checkpoint")) {
    step = std::stoll(*text);
  }
  train::TrainerState state = run.loadCheckpoint(step);
  run.truncateMetricsAfter(state.step);
  std::cout << "resuming " << run.dir().string() << " from step " << state.step << "\n";
  return {std::move(backend), std::move(run), settings, std::move(state)};
}

}  // namespace

int runTrain(const Args& args) {
  std::set<std::string> options = job::trainValueOptions();
  options.insert({"model", "data", "out", "resume", "checkpoint", "config"});
  const job::CliArgs parsed(args, {"demo"}, options);
  if (!parsed.positional().empty()) {
    throw job::UsageError("unexpected argument '" + parsed.positional()[0] + "'");
  }
  RunSetup setup = parsed.value("resume") ? resumedRun(parsed) : newRun(parsed);
  const train::RunDirectory& run = setup.run;
  const std::string modelPath = run.baseModel();
  const std::string dataPath = run.config().at("data_path").get<std::string>();

  const model::ModelFolder folder = model::ModelFolder::open(modelPath);
  const train::TrainingData data =
      train::loadTrainingData(dataPath, modelPath, setup.settings.train.maxSeqLen);
  for (const std::string& problem : data.firstProblems) {
    std::cerr << "warning: " << problem << "\n";
  }
  std::cout << "data: " << data.examples.size() << " examples (" << data.skippedRecords
            << " skipped), chat template " << data.chatTemplate << "\n";
  compute::Backend& backend = *setup.backend;
  std::cout << "device: " << backend.capabilities().name << "\n";
  const model::ModelWeights weights = job::placeWeightsLogged(backend, folder.weights(), printLine);
  train::TrainLoop loop(backend, folder.config(), weights, data.examples, setup.settings.train,
                        std::move(setup.resume));
  std::optional<job::AutoMicroBatch> autoBatch;
  if (setup.settings.autoMicroBatch) {
    autoBatch.emplace(setup.settings, backend, folder.config(), data.examples);
    autoBatch->apply(loop, printLine);
  }
  std::cout << "run: " << run.dir().string() << "  (" << loop.state().adapter.parameterCount()
            << " LoRA parameters, " << loop.totalSteps() << " steps, micro-batch "
            << loop.microBatchSize() << " x " << loop.accumulation() << ")\n";

  gSignals = 0;
  gAbandonStep = false;
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  Progress progress(loop.totalSteps(), loop.state().step);
  const std::int64_t every = setup.settings.checkpointEvery;
  bool interrupted = false;
  while (!loop.finished()) {
    try {
      const train::StepMetrics m = loop.step(&gAbandonStep);
      run.appendMetrics(m);
      progress.step(m);
    } catch (const train::TrainingCancelled&) {
      interrupted = true;
      break;
    } catch (const memory::OutOfMemoryError&) {
      // The step left no trace (TrainLoop::step changes its state only when it completes): with
      // an automatic micro-batch, step down and run it again; otherwise the message stands.
      if (!autoBatch || !autoBatch->stepDown(loop, printLine)) {
        throw;
      }
      continue;
    }
    if (gSignals.load() > 0) {
      interrupted = true;
      break;
    }
    if (every > 0 && loop.state().step % every == 0 && !loop.finished()) {
      run.saveCheckpoint(loop.state(), setup.settings.keepCheckpoints);
    }
  }
  progress.finish();
  const fs::path checkpoint = run.saveCheckpoint(loop.state(), setup.settings.keepCheckpoints);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (interrupted) {
    std::cout << "stopped at step " << loop.state().step << "; checkpoint " << checkpoint.string()
              << "\ncontinue with: lorascope-train train --resume " << run.dir().string() << "\n";
    return 0;
  }
  run.saveFinalAdapter(loop.state().adapter);
  std::cout << "done: " << loop.state().step << " steps; adapter " << run.finalAdapterDir().string()
            << "\nexport or merge with: lorascope-train export " << run.dir().string()
            << " [--merge OUT_DIR]\n";
  return 0;
}

}  // namespace lorascope::cli
