// cli/cmd_train.cpp — `lorascope-train train`: a LoRA run into a run folder.
//   train --model DIR --data FILE --out RUN_DIR [options]   a new run
//   train --demo [--out RUN_DIR] [options]                  the built-in demo model and dataset
//   train --resume RUN_DIR [--checkpoint N] [--device D | --gpus LIST]
//                                                           continue a run from its checkpoint
// --device cpu|gpu|auto is recorded in config.json as asked; a resumed run may name another
// (the state moves with it), and every metrics line says where its step ran.
//
// The run is the engine's job (job/EngineJob), the one the GUI runs, with the same protections:
// the engine is a child process (`lorascope-train engine`, this program) under the Supervisor, so
// a crash, a sticky GPU error or a hang (no step for two minutes) costs the step in flight, not
// the run: the engine restarts on the next rung of the recovery ladder and resumes from the state
// mirror. Out of memory is handled in place (cache freed, then the micro-batch halved);
// LORASCOPE_FAULTS injects faults as in the GUI. Each incident, restart, out-of-memory recovery
// and toggle the ladder changed is printed as a line. Where no child process can be started (the
// program cannot find itself), the engine runs in this process, without crash or hang recovery.
//
// A progress bar on a terminal (step/total, loss, tokens/s, ETA), one line per step otherwise;
// with --json, stdout carries only the engine's events, one JSON line each (engine/Protocol.h:
// state, step, checkpoint, log, incident, ...; lines of this command become log events), and
// stdin takes the commands the window sends (a toggle, a snapshot request, checkpoint_now,
// pause, resume, stop, ...), one JSON line each: a script drives the run as the window does, e.g.
// on every GPU of a group (scripts/record_gpu_run.py).
// --gpus 0,1 (or all) trains on several GPUs: the supervisor starts one engine per GPU, rank 0
// writing the run (engine/Supervisor.h); the output is rank 0's.
// Ctrl-C / SIGTERM: the step in progress is abandoned (nothing completed is lost), the last
// completed step is checkpointed, exit 130 (128 + SIGINT, as shells report an interrupted
// program). The engine sits in a process group of its own, so the terminal's Ctrl-C reaches only
// this process, which tells the engine to stop.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "cli/Commands.h"
#include "common/ChildProcess.h"  // defines: currentExecutablePath
#include "common/OsError.h"       // defines: pathFromUtf8, pathText
#include "common/Platform.h"      // defines: InterruptCounter, isTerminal
#include "engine/InProcessHost.h"
#include "engine/Protocol.h"  // defines: decodeCommand, encodeEvent
#include "engine/SupervisorHost.h"
#include "external/LaunchPlan.h"    // defines: findProfile
#include "external/OutputParser.h"  // defines: ExternalError
#include "job/CliArgs.h"
#include "job/EngineJob.h"
#include "job/RunDevice.h"  // defines: checkDeviceOption
#include "job/RunOptions.h"
#include "job/TrainRunConfig.h"
#include "train/DemoDataset.h"
#include "train/DemoModel.h"
#include "train/RunDirectory.h"

namespace lorascope::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kInterruptedExitCode = 130;  // 128 + SIGINT

// A line of this command (not of the engine): text, or with --json a log event.
void say(bool asJson, const std::string& text) {
  if (asJson) {
    std::cout << engine::encodeEvent({0, engine::LogEvent{engine::LogLevel::Info, text}})
              << std::endl;
  } else {
    std::cout << text << "\n";
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
  Progress() : terminal_(common::isTerminal(common::StandardStream::Output)) {}

  // Training (re)starts after `completedStep`: the time left is measured from here.
  void begin(std::int64_t completedStep) {
    if (!start_) {
      start_ = std::chrono::steady_clock::now();
      firstStep_ = completedStep;
    }
  }

  void step(const engine::StepEvent& m) {
    begin(m.step - 1);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *start_).count();
    const double perStep =
        elapsed / static_cast<double>(std::max<std::int64_t>(1, m.step - firstStep_));
    const std::int64_t total = std::max(m.totalSteps, m.step);
    const double eta = perStep * static_cast<double>(total - m.step);
    char epoch[32] = "";
    if (m.epoch) {
      std::snprintf(epoch, sizeof epoch, "  epoch %.3g", *m.epoch);
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "step %lld/%lld%s  loss %.4f  lr %.2e  grad %.3f  %.0f tok/s  ETA %s",
                  static_cast<long long>(m.step), static_cast<long long>(total), epoch, m.loss,
                  m.learningRate, m.gradNorm, m.tokensPerS, formatSeconds(eta).c_str());
    if (!terminal_) {
      std::cout << line << std::endl;
      return;
    }
    constexpr int kBarWidth = 24;
    const int filled = static_cast<int>(kBarWidth * m.step / std::max<std::int64_t>(total, 1));
    std::cout << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
              << std::string(static_cast<std::size_t>(kBarWidth - filled), '.') << "] " << line
              << "\x1b[K" << std::flush;
    barShown_ = true;
  }
  // Ends the bar's line before another line is printed (on a terminal).
  void breakLine() {
    if (barShown_) {
      std::cout << "\n";
      barShown_ = false;
    }
  }

 private:
  bool terminal_;
  bool barShown_ = false;
  std::optional<std::chrono::steady_clock::time_point> start_;
  std::int64_t firstStep_ = 0;
};

json readConfigFile(const std::string& path) {
  std::ifstream in(common::pathFromUtf8(path), std::ios::binary);  // UTF-8 text, not the code page
  if (!in) {
    throw job::UsageError("--config " + path + job::whyUnreadable(path));
  }
  const json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw job::UsageError("--config " + path + ": not a JSON object of option names and values");
  }
  return doc;
}

// Options in force: the --config file first, then the command line (each checked against the
// option table, so that a bad value names the option and where it came from).
std::map<std::string, std::string> collectOptions(const job::CliArgs& parsed) {
  std::map<std::string, std::string> options;
  if (const auto file = parsed.value("config")) {
    const json doc = readConfigFile(*file);
    for (const auto& [key, value] : doc.items()) {
      const job::RunOption* option = job::findRunOption(key);
      if (option == nullptr) {
        std::string dashed = key;
        std::replace(dashed.begin(), dashed.end(), '_', '-');
        throw job::UsageError(
            "--config " + *file + ": unknown option \"" + key + "\"" +
            (job::findRunOption(dashed) != nullptr
                 ? "; the keys are train's option names: \"" + dashed + "\""
                 : std::string("; the keys are train's option names without the dashes "
                               "(lorascope-train train --help lists them)")));
      }
      try {
        options[key] = job::optionText(job::checkOptionValue(option->spec, value));
      } catch (const job::UsageError& e) {
        throw job::UsageError("--config " + *file + ": " + e.what());
      }
    }
  }
  for (const auto& [name, value] : parsed.given()) {
    if (job::findRunOption(name) != nullptr) {
      options[name] = value;
    }
  }
  return options;
}

// The engine's start command for a new run; options are checked here, so that a usage error is
// one (exit 2) before any engine starts.
json newRunStart(const job::CliArgs& parsed) {
  const bool demo = parsed.has("demo");
  // The options first: a bad value is reported before anything is written.
  const std::map<std::string, std::string> options = collectOptions(parsed);
  job::TrainRunSettings settings = job::defaultSettings(demo);
  job::applyOptions(settings, options);
  json start = json::object();
  if (demo) {
    const fs::path cache = train::defaultCacheDir();
    say(parsed.has("json"), "demo: model " + common::pathText(train::ensureDemoModel(cache)) +
                                "\n      data  " +
                                common::pathText(train::ensureDemoDataset(cache)));
    start["demo"] = true;
    start["out"] = parsed.value("out").value_or("lorascope-demo-run");
  } else {
    for (const char* option : {"model", "data", "out"}) {
      if (!parsed.value(option)) {
        throw job::UsageError(std::string("missing required option --") + option +
                              ": a new run needs --model DIR --data FILE --out RUN_DIR (or "
                              "--demo for the built-in demo, --resume RUN_DIR to continue one)");
      }
      start[option] = *parsed.value(option);
    }
  }
  start["options"] = options;
  return start;
}

json resumedRunStart(const job::CliArgs& parsed) {
  json start = {{"out", parsed.required("resume")}, {"resume", true}};
  if (const auto device = parsed.value("device")) {
    job::checkDeviceOption(*device);
    start["device"] = *device;
  }
  if (const auto gpus = parsed.value("gpus")) {
    // The GPUs of this session (a group that lost one continues on the others); the supervisor
    // checks them against the machine.
    job::TrainRunSettings checked;
    job::applyOptions(checked, std::map<std::string, std::string>{{"gpus", *gpus}});
    if (start.contains("device")) {
      throw job::UsageError("--resume with --gpus " + *gpus + " and --device " +
                            start["device"].get<std::string>() + ": give one of them");
    }
    start["gpus"] = checked.gpus;
  }
  if (const auto text = parsed.value("checkpoint")) {
    std::size_t used = 0;
    std::int64_t step = -1;
    try {
      step = std::stoll(*text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text->size() || step < 0) {
      throw job::UsageError("--checkpoint must be a step number, got '" + *text + "'");
    }
    start["checkpoint"] = step;
  }
  return start;
}

// What the engine reports, queued by its host's thread for this one.
class EventQueue {
 public:
  engine::HostListener listener() {
    return {[this](const engine::TimedEvent& e) {
              {
                const std::lock_guard lock(mutex_);
                events_.push_back(e);
              }
              ready_.notify_one();
            },
            {}};
  }
  // The next event, or nothing after `timeout`.
  std::optional<engine::TimedEvent> next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [this] { return !events_.empty(); }))
      return std::nullopt;
    engine::TimedEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<engine::TimedEvent> events_;
};

// With --json: the commands a script sends on stdin, read on a thread of their own and handed
// to the main loop, which alone talks to the host. The reader is detached (a read of stdin
// cannot be given up), so it holds its queue by a shared pointer; it ends at end of input.
class StdinCommands {
 public:
  struct Entry {
    std::optional<engine::Command> command;
    std::string problem;  // the line was no command this run takes
  };

  StdinCommands() : queue_(std::make_shared<Queue>()) {
    std::thread([queue = queue_] {
      std::string line;
      while (std::getline(std::cin, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
          continue;
        }
        Entry entry;
        try {
          engine::Command command = engine::decodeCommand(line);
          if (std::holds_alternative<engine::StartCommand>(command) ||
              std::holds_alternative<engine::GenerateCommand>(command) ||
              std::holds_alternative<engine::CancelGenerationCommand>(command)) {
            entry.problem = "stdin: this run has started and does not generate; ignored: " +
                            line.substr(0, 200);
          } else {
            entry.command = std::move(command);
          }
        } catch (const std::exception& e) {
          entry.problem = std::string("stdin: not an engine command (") + e.what() +
                          "); ignored: " + line.substr(0, 200);
        }
        const std::lock_guard lock(queue->mutex);
        queue->entries.push_back(std::move(entry));
      }
    }).detach();
  }

  std::deque<Entry> take() {
    const std::lock_guard lock(queue_->mutex);
    return std::exchange(queue_->entries, {});
  }

 private:
  struct Queue {
    std::mutex mutex;
    std::deque<Entry> entries;
  };
  std::shared_ptr<Queue> queue_;
};

// Prints what the run does and tells when it is over.
// With --json it prints nothing to stdout (the events themselves go there).
class RunReport {
 public:
  RunReport(bool resumed, bool asJson) : resumed_(resumed), json_(asJson) {}

  // Handles one event; true once the run is over (finished, stopped or failed for good).
  bool handle(const engine::Event& event) {
    using namespace engine;
    if (const auto* state = std::get_if<StateEvent>(&event)) {
      return onState(*state);
    }
    if (const auto* step = std::get_if<StepEvent>(&event)) {
      if (!json_) {
        progress_.step(*step);
      }
      lastStep_ = step->step;
    } else if (const auto* log = std::get_if<LogEvent>(&event)) {
      if (log->level == LogLevel::Info) {
        line(log->text);
      } else if (log->level != LogLevel::Debug) {
        progress_.breakLine();
        std::cerr << (log->level == LogLevel::Error ? "error: " : "warning: ") << log->text << "\n";
      }
    } else if (const auto* error = std::get_if<ErrorEvent>(&event)) {
      onError(*error);
    } else if (const auto* incident = std::get_if<IncidentEvent>(&event)) {
      ++incidents_;
      pendingRecovery_ = false;
      line("incident at step " + std::to_string(incident->step) + ": " + incident->what + "; " +
           incident->action);
    } else if (const auto* ladder = std::get_if<LadderEvent>(&event)) {
      line("recovery ladder " + ladder->from + " -> " + ladder->rung + " at step " +
           std::to_string(ladder->step));
    } else if (const auto* sw = std::get_if<ProfileSwitchEvent>(&event)) {
      line("profile '" + sw->name + "': " + sw->detail);
    } else if (const auto* toggle = std::get_if<ToggleAppliedEvent>(&event)) {
      onToggle(*toggle);
    } else if (const auto* checkpoint = std::get_if<CheckpointEvent>(&event)) {
      checkpoint_ = *checkpoint;
    } else if (const auto* eval = std::get_if<EvalEvent>(&event)) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "eval after step %lld: loss %.4f over %lld tokens (best %.4f at step %lld), "
                    "%.1f s",
                    static_cast<long long>(eval->step), eval->loss,
                    static_cast<long long>(eval->predictedTokens), eval->bestLoss,
                    static_cast<long long>(eval->bestStep), eval->seconds);
      line(text);
    }
    return false;
  }

  // The run's outcome once handle() said it is over: engine::kAllStepsDone, kStoppedByUser, or
  // why it failed.
  const std::string& outcome() const { return outcome_; }
  const std::optional<engine::CheckpointEvent>& checkpoint() const { return checkpoint_; }
  std::int64_t lastStep() const { return lastStep_; }
  void breakLine() { progress_.breakLine(); }

  // One line on what the protections did, when they did anything.
  std::optional<std::string> protectionSummary(int restarts) const {
    if (incidents_ == 0 && outOfMemory_ == 0 && restarts == 0)
      return std::nullopt;
    return "protections: " + std::to_string(incidents_) + " incident(s), " +
           std::to_string(restarts) + " engine restart(s), " + std::to_string(outOfMemory_) +
           " out-of-memory error(s) handled in place";
  }

 private:
  void line(const std::string& text) {
    if (json_) {
      return;
    }
    progress_.breakLine();
    std::cout << text << std::endl;
  }

  bool onState(const engine::StateEvent& state) {
    using engine::RunState;
    if (state.state == RunState::Running) {
      if (!started_ && resumed_) {
        line("resuming from step " + std::to_string(state.step));
      }
      started_ = true;
      progress_.begin(state.step);
      lastStep_ = std::max(lastStep_, state.step);
    } else if (state.state == RunState::Finished) {
      outcome_ = state.detail;
      lastStep_ = std::max(lastStep_, state.step);
      return true;
    } else if (state.state == RunState::Failed && !pendingRecovery_) {
      outcome_ = failure_.empty() ? state.detail : failure_;
      return true;
    }
    return false;
  }

  void onError(const engine::ErrorEvent& error) {
    if (error.sticky) {
      pendingRecovery_ = true;  // the engine exits; the supervisor says what it does next
      line("engine error at step " + std::to_string(lastStep_ + 1) + " (" + error.category +
           (error.op.empty() ? "" : " in " + error.op) + "): " + error.message);
    } else if (error.category == "out_of_memory") {
      ++outOfMemory_;
      line("out of memory at step " + std::to_string(lastStep_ + 1) +
           (error.op.empty() ? "" : " (" + error.op + ")") + ": " + error.advice);
    } else {
      // A start or a step that failed: the Failed state follows and the message ends the
      // command. Anything else (a refused command, a garbled line) is only said.
      failure_ = error.message;
      if (error.category != "input" && error.category != "training") {
        progress_.breakLine();
        std::cerr << "warning: " << error.message
                  << (error.advice.empty() ? "" : " (" + error.advice + ")") << "\n";
      }
    }
  }

  // The engine confirms the settings it starts with; later changes (the recovery ladder's, the
  // engine moving the run) are printed.
  void onToggle(const engine::ToggleAppliedEvent& toggle) {
    const std::string name = engine::toString(toggle.toggle);
    const auto known = toggles_.find(name);
    if (known != toggles_.end() && known->second != toggle.value) {
      line("toggle " + name + ": " + known->second.dump() + " -> " + toggle.value.dump() +
           " from step " + std::to_string(toggle.step + 1) +
           (toggle.detail.empty() ? "" : " (" + toggle.detail + ")"));
    }
    toggles_[name] = toggle.value;
  }

  bool resumed_;
  bool json_;
  Progress progress_;
  bool started_ = false;
  bool pendingRecovery_ = false;  // a sticky error: the engine's "failed" is not the end
  std::int64_t lastStep_ = 0;
  int incidents_ = 0;
  int outOfMemory_ = 0;
  std::map<std::string, json> toggles_;
  std::optional<engine::CheckpointEvent> checkpoint_;
  std::string failure_;
  std::string outcome_;
};

// The host the run goes to: the supervised child, or (no child possible) this process.
struct RunHost {
  std::unique_ptr<engine::EngineHost> host;
  engine::SupervisorHost* supervisor = nullptr;
};

// The profile named by --profile (or the resumed run's config.json), from the built-ins and the
// user's profiles; an unknown name is a usage error naming the command that lists them.
profiles::Profile runProfile(const json& start) {
  std::string name;
  if (start.value("resume", false)) {
    try {
      const train::RunDirectory run =
          train::RunDirectory::open(common::pathFromUtf8(start.at("out").get<std::string>()));
      name = run.config().value("training", json::object()).value("profile", std::string());
    } catch (const std::exception&) {
      // Not a run: the engine says so when it is asked to resume it.
    }
  } else if (start.contains("options") && start["options"].contains("profile")) {
    name = start["options"]["profile"].get<std::string>();
  }
  if (name.empty() || name == "none") {
    // No profile: the run's options decide the device and the micro-batch; the environment is
    // this process's own. Only the recovery ladder adds caution.
    profiles::Profile none;
    none.name = "command line";
    return none;
  }
  // A built-in or saved profile's name, or a profile JSON file: as `supervise --profile` takes it.
  try {
    return external::findProfile(name);
  } catch (const external::ExternalError& e) {
    throw job::UsageError(std::string("--") + e.what());  // names the profiles there are
  }
}

RunHost openHost(EventQueue& events, bool asJson, profiles::Profile profile) {
  RunHost run;
  const std::string self = common::currentExecutablePath();
  if (self.empty()) {
    say(asJson,
        "note: cannot locate this program to start the engine as a child; it runs in this "
        "process (out of memory is handled, crashes and hangs are not recovered)");
    run.host = std::make_unique<engine::InProcessHost>(job::createTrainingJob, engineHello(),
                                                       events.listener());
    return run;
  }
  auto supervisor = std::make_unique<engine::SupervisorHost>(
      self, std::move(profile), engine::SupervisorPolicy{}, events.listener());
  run.supervisor = supervisor.get();
  run.host = std::move(supervisor);
  return run;
}

}  // namespace

int runTrain(const Args& args) {
  const job::CliArgs parsed(args, job::trainCommand());
  // Words that name another run than the one --resume or --demo runs are refused, not dropped.
  for (const char* other : {"config", "model", "data", "out", "demo"}) {
    if (parsed.value("resume") && parsed.value(other)) {
      throw job::UsageError(std::string("--resume RUN_DIR continues that run with its own "
                                        "config.json; --") +
                            other +
                            " has no place beside it (only --device, --gpus and "
                            "--checkpoint do)");
    }
  }
  for (const char* other : {"model", "data"}) {
    if (parsed.has("demo") && parsed.value(other)) {
      throw job::UsageError(std::string("--demo trains the built-in model on its own dataset; "
                                        "--") +
                            other + " names another: leave out --demo or --" + other);
    }
  }
  if (parsed.value("resume")) {
    for (const auto& [name, value] : parsed.given()) {
      if (job::findRunOption(name) != nullptr && name != "device" && name != "gpus") {
        const std::string run = *parsed.value("resume");
        throw job::UsageError(
            "--resume continues with the run's own settings (config.json); --" + name +
            " cannot change them (only --device and --gpus can). To train on with other "
            "settings, start a new run on the model with this run's adapter merged in: "
            "lorascope-train export " +
            run + " --merge MERGED_DIR, then lorascope-train train --model MERGED_DIR ...");
      }
    }
  }
  if (!parsed.positional().empty()) {
    throw job::UsageError("unexpected argument '" + parsed.positional()[0] + "'");
  }
  const bool resumed = parsed.value("resume").has_value();
  const json start = resumed ? resumedRunStart(parsed) : newRunStart(parsed);
  const std::string out = start.at("out").get<std::string>();

  const bool asJson = parsed.has("json");
  EventQueue events;
  RunHost run = openHost(events, asJson, runProfile(start));
  std::optional<common::InterruptCounter> interrupts(std::in_place);  // Ctrl-C, SIGTERM
  run.host->send(engine::StartCommand{start});

  RunReport report(resumed, asJson);
  std::optional<StdinCommands> commands;
  if (asJson) {
    commands.emplace();
  }
  int signalsHandled = 0;
  for (bool over = false; !over;) {
    if (commands) {
      for (StdinCommands::Entry& entry : commands->take()) {
        if (entry.command) {
          run.host->send(std::move(*entry.command));
        } else {
          std::cerr << "warning: " << entry.problem << std::endl;
        }
      }
    }
    if (const int signals = interrupts->count(); signals > signalsHandled) {
      // Each one asks again: a stop that reached an engine as it died is not lost.
      report.breakLine();
      (asJson ? std::cerr : std::cout) << (signalsHandled == 0 ? "stopping" : "still stopping")
                                       << ": checkpointing the last completed step" << std::endl;
      run.host->send(engine::StopCommand{});
      signalsHandled = signals;
    }
    if (const auto event = events.next(std::chrono::milliseconds(100))) {
      if (asJson) {
        std::cout << engine::encodeEvent(*event) << std::endl;
      }
      over = report.handle(event->event);
    }
  }
  const int restarts = run.supervisor ? run.supervisor->restarts() : 0;
  run.host.reset();  // the engine exits (its input ends)
  interrupts.reset();

  report.breakLine();
  if (const auto summary = report.protectionSummary(restarts); summary && !asJson) {
    std::cout << *summary << "\n";
  }
  if (report.outcome() != engine::kAllStepsDone && report.outcome() != engine::kStoppedByUser) {
    throw std::runtime_error(report.outcome());
  }
  const train::RunDirectory runDir = train::RunDirectory::open(common::pathFromUtf8(out));
  if (report.outcome() == engine::kStoppedByUser) {
    if (!asJson) {
      std::cout << "stopped at step " << report.lastStep() << "; checkpoint "
                << (report.checkpoint() ? report.checkpoint()->path : std::string("(none)"))
                << "\ncontinue with: lorascope-train train --resume "
                << common::pathText(runDir.dir()) << "\n";
    }
    return kInterruptedExitCode;
  }
  if (asJson) {
    return 0;
  }
  std::cout << "done: " << report.lastStep() << " steps; adapter "
            << common::pathText(runDir.finalAdapterDir())
            << "\nexport or merge with: lorascope-train export " << common::pathText(runDir.dir())
            << " [--merge OUT_DIR]\n";
  return 0;
}

}  // namespace lorascope::cli
