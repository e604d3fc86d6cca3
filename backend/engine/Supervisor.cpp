// engine/Supervisor.cpp — incidents, the recovery ladder and resumption from the state mirror.
#include "engine/Supervisor.h"

#include <utility>

#include "profiles/Builtins.h"
#include "profiles/ProfileStore.h"
#include "profiles/SwitchPlan.h"
#include "telemetry/HostProvider.h"

namespace lorascope::engine {
namespace {

// The host's RAM, for telling the out-of-memory killer from other kills (0: unknown).
std::uint64_t hostTotalBytes() {
  static const std::uint64_t total = [] {
    telemetry::HostProvider host;
    telemetry::Snapshot reading;
    if (!host.init() || !host.refresh(reading) || !reading.host) {
      return std::uint64_t{0};
    }
    return reading.host->ramTotalBytes.value_or(0);
  }();
  return total;
}

}  // namespace

std::string Supervisor::describeExit(const EngineExit& exit) {
  if (exit.failedToStart)
    return "the engine process could not be started";
  return exit.crashed ? "the engine process was killed by a signal" +
                            (exit.signal.empty() ? std::string() : " (" + exit.signal + ")")
                      : "the engine process exited with code " + std::to_string(exit.exitCode);
}

Supervisor::Supervisor(EngineLauncher& launcher, profiles::Profile profile, SupervisorPolicy policy,
                       EventSink publish, std::function<void(bool)> connectedChanged,
                       runtime::NowMs nowMs)
    : launcher_(launcher),
      profile_(std::move(profile)),
      policy_(policy),
      publish_(std::move(publish)),
      connectedChanged_(std::move(connectedChanged)),
      nowMs_(std::move(nowMs)),
      startedMs_(nowMs_()) {}

Supervisor::~Supervisor() {
  host_.reset();  // the engine ends before the run's lock is let go
  retireRanks();
}

void Supervisor::start() {
  if (!host_)
    startEngine();
}

std::unique_ptr<SupervisableHost> Supervisor::releaseEngine() {
  hangDeadlineMs_.reset();
  engineId_ = ++launches_;  // whatever it still reports is no longer ours
  return std::move(host_);
}

void Supervisor::publish(Event event) {
  publish_(TimedEvent{toSupervisorTime(elapsedMs() - engineStartedMs_), std::move(event)});
}

std::int64_t Supervisor::toSupervisorTime(std::int64_t engineTimeMs) {
  lastEventMs_ = std::max(lastEventMs_, engineStartedMs_ + engineTimeMs);
  return lastEventMs_;
}

void Supervisor::startEngine() {
  engineStartedMs_ = elapsedMs();
  preparing_ = false;
  unansweredStarts_.clear();
  engineId_ = ++launches_;
  host_ = launcher_.launch(engineId_, profile_.environment, profile_.engine);
}

void Supervisor::retireEngine() {
  hangDeadlineMs_.reset();
  unansweredStarts_.clear();  // a start the engine died before answering was not taken
  host_.reset();
}

void Supervisor::holdRunLock(nlohmann::json& config) {
  const bool here = profile_.engine.launcher.empty();  // the engine is this process's child
  if (runLock_ && (!here || !runLock_->covers(config)))
    runLock_.reset();
  if (!runLock_ && here)
    runLock_ = launcher_.holdRunFolder(config);
  config.erase("run_lock_holder");  // only ever this supervisor's word
  if (runLock_)
    config["run_lock_holder"] = runLock_->holder();
}

void Supervisor::adoptRun(nlohmann::json config) {
  runConfig_ = std::move(config);
  running_ = true;  // an engine that dies while it starts the run is recovered too
  restarts_ = 0;
  lastStep_ = 0;  // a new run: its steps are new, replayed or not
  lastStickyError_.reset();
  if (halvesReached(runtime::RecoveryRung::VendorBlas)) {
    // On the rung that halves the micro-batch a new run gets half its own batch-size, not the
    // last run's; given none (its default, auto, a resume) it keeps its own until an out of
    // memory on the rung halves it.
    const auto given = runConfig_->find("batch-size");
    rungMicroBatch_ =
        given != runConfig_->end() && given->is_number_integer() && given->get<std::int64_t>() > 1
            ? static_cast<int>(given->get<std::int64_t>() / 2)
            : 0;
  }
}

void Supervisor::startAnswered(bool taken) {
  if (unansweredStarts_.empty())
    return;
  std::optional<nlohmann::json> pending = std::move(unansweredStarts_.front());
  unansweredStarts_.pop_front();
  if (taken && pending) {
    adoptRun(std::move(*pending));
    sendRungToggles();  // held back from the run in progress, which it would have changed
  }
}

// A new engine picks the run up from the state mirror, on the current rung.
void Supervisor::resumeRun() {
  nlohmann::json config = *runConfig_;
  holdRunLock(config);
  startEngine();
  config["resume_from_mirror"] = true;
  config["announced_through"] = lastStep_;  // the engine replays the completed steps after it
  if (!groupDevices_.empty())
    formGroup(config);
  host_->send(StartCommand{config});
  unansweredStarts_.emplace_back();  // the run's own
  sendRungToggles();
}

void Supervisor::send(const Command& command) {
  Command forwarded = command;              // a start tells the engine who holds the run's lock
  std::optional<nlohmann::json> undecided;  // a start the engine's answer decides
  bool groupStart = false;                  // a start of a run on several GPUs
  if (inGroup() && running_) {
    if (const std::string why = refusedInGroup(command); !why.empty()) {
      const std::string type(commandType(command));
      if (const auto* set = std::get_if<SetToggleCommand>(&command)) {
        publish(ToggleRefusedEvent{set->toggle, set->value, why, lastStep_});
      } else {
        publish(ErrorEvent{"command", type, 0, "'" + type + "' refused: " + why,
                           "stop the run and resume it", false});
      }
      return;
    }
  }
  if (auto* start = std::get_if<StartCommand>(&forwarded); start && engineGoingAway()) {
    // The engine is stopping to be replaced (a profile switch, a sticky error): sent to it the
    // start would be lost; the next engine takes it once it says hello.
    startAwaitingHello_ = *start;
    return;
  }
  if (auto* start = std::get_if<StartCommand>(&forwarded)) {
    if (!running_) {
      groupDevices_.clear();
      if (const std::optional<std::string> gpus = gpusOfStart(start->runConfig)) {
        if (!hello_) {
          startAwaitingHello_ = *start;  // sent again once the engine says what it has
          if (!host_ && !planned_)
            startEngine();
          return;
        }
        std::string problem;
        std::vector<int> devices = groupDevicesFor(*gpus, problem);
        if (!problem.empty()) {
          refuseStart(problem);
          return;
        }
        groupDevices_ = std::move(devices);
        groupStart = true;
      }
      holdRunLock(start->runConfig);
      adoptRun(start->runConfig);
    } else if (gpusOfStart(start->runConfig)) {
      // A group is formed only for a start taken at once: one the engine answered later would
      // reach rank 0 alone.
      publish(ErrorEvent{"command", "start", 0,
                         "'start' refused: a run is already in progress; stop it first", "",
                         false});
      return;
    } else {
      // The engine refuses a start while a run is in progress (unansweredStarts_): the run keeps
      // its config, its restarts and its folder's lock, which a start of another folder is not
      // told of.
      if (runLock_ && runLock_->covers(start->runConfig)) {
        holdRunLock(start->runConfig);
      } else {
        start->runConfig.erase("run_lock_holder");
      }
      undecided = start->runConfig;
    }
  } else if (const auto* sw = std::get_if<SwitchProfileCommand>(&command)) {
    switchProfile(sw->name);
    return;
  } else if (std::holds_alternative<UndoRungCommand>(command)) {
    undoRung();
    return;
  }
  if (!host_ && !planned_) {
    startEngine();  // the last one could not start or was released: try again
  }
  if (const auto* generation = std::get_if<GenerateCommand>(&command)) {
    if (!host_) {
      publish(GenerationEndEvent{generation->id, GenerationOutcome::Failed,
                                 "the engine is restarting; generate again in a moment"});
      return;
    }
    generating_ = generation->id;
  }
  if (host_ && groupStart)
    formGroup(std::get<StartCommand>(forwarded).runConfig);
  if (host_)
    host_->send(forwarded);
  if (std::holds_alternative<SetToggleCommand>(command) ||
      std::holds_alternative<RequestSnapshotCommand>(command))
    sendToRanks(command);  // every rank computes alike; every card's memory map is asked for
  if (host_ && std::holds_alternative<StartCommand>(command)) {
    // A new run starts on the current rung's toggles and the profile's; a start the engine may
    // refuse gets them when it is taken: sent now they would reach the run in progress (the
    // smaller micro-batch rung would halve its micro-batch again).
    if (!undecided)
      sendRungToggles();
    unansweredStarts_.push_back(std::move(undecided));
  }
}

bool Supervisor::engineGoingAway() const {
  return host_ && (planned_ || lastStickyError_);
}

void Supervisor::engineConnected(int engineId, bool connected) {
  if (engineId == engineId_ && connectedChanged_)
    connectedChanged_(connected);
}

void Supervisor::engineEvent(int engineId, const TimedEvent& timed) {
  if (engineId != engineId_) {
    if (Rank* rank = rankOf(engineId))
      rankEvent(*rank, timed);
    return;
  }
  const std::int64_t now = elapsedMs();
  if (std::holds_alternative<ProgressEvent>(timed.event)) {
    if (hangDeadlineMs_) {
      hangDeadlineMs_ = now + policy_.hangTimeoutMs;  // the run moves: slow is not hung
    }
    return;  // the watchdog's alone
  }
  if (planned_ && !planned_->error && std::holds_alternative<StateEvent>(timed.event)) {
    return;  // stopping for a profile switch: the run goes on in the next engine
  }
  if (const auto* memory = std::get_if<MemoryEvent>(&timed.event);
      memory && memory->hostAvailableBytes) {
    hostMemory_ = runtime::HostMemory{*memory->hostAvailableBytes, hostTotalBytes()};
  }
  if (inGroup() && isOfCard(timed.event)) {
    publishOfCard(groupDevices_.front(), timed);  // rank 0's, tagged with its card
    return;
  }
  if (const auto* state = std::get_if<StateEvent>(&timed.event)) {
    if (state->state == RunState::Starting)
      startAnswered(true);
    preparing_ = state->state == RunState::Starting;
    if (state->state == RunState::Running || state->state == RunState::Paused ||
        state->state == RunState::Starting) {
      running_ = true;
    } else if (state->state == RunState::Finished ||
               (state->state == RunState::Failed && !lastStickyError_)) {
      running_ = false;  // a sticky failure is followed by the engine's exit and a recovery
      retireRanks();     // rank 0's run is over: the others may wait in a collective on it
      runLock_.reset();  // before the end is told: whoever hears it may take the folder
    }
    if (state->state == RunState::Running) {
      hangDeadlineMs_ = now + policy_.hangTimeoutMs;
    } else {
      hangDeadlineMs_.reset();
    }
  } else if (const auto* step = std::get_if<StepEvent>(&timed.event)) {
    if (step->replayed && step->step <= lastStep_) {
      return;  // announced before the engine died: already passed on
    }
    lastStep_ = step->step;
    lastMicroBatch_ = step->microBatch;
    hangDeadlineMs_ = now + policy_.hangTimeoutMs;
  } else if (const auto* refusal = std::get_if<ErrorEvent>(&timed.event);
             refusal && refusal->category == "command" && refusal->op == "start") {
    startAnswered(false);
  } else if (const auto* error = std::get_if<ErrorEvent>(&timed.event); error && error->sticky) {
    lastStickyError_ = *error;  // the engine exits after a sticky error; onExit recovers
    generationDied_ = generating_.has_value();
  } else if (const auto* end = std::get_if<GenerationEndEvent>(&timed.event);
             end && end->id == generating_) {
    generating_.reset();
  }
  publish_(TimedEvent{toSupervisorTime(timed.timeMs), timed.event});
  if (const auto* hello = std::get_if<HelloEvent>(&timed.event)) {
    hello_ = *hello;
    if (startAwaitingHello_) {
      const StartCommand start = std::move(*startAwaitingHello_);
      startAwaitingHello_.reset();
      send(start);
    }
  }
}

void Supervisor::checkHang() {
  if (!hangDeadlineMs_ || elapsedMs() < *hangDeadlineMs_)
    return;
  hangDeadlineMs_.reset();
  if (!running_ || !host_)
    return;
  planned_ = PlannedRestart{runtime::classifyHang(),
                            "no progress (no op ran or completed, no step) for " +
                                std::to_string(policy_.hangTimeoutMs / 1000) +
                                " s (hang) after step " + std::to_string(lastStep_),
                            true};
  host_->kill();
}

void Supervisor::engineExited(int engineId, const EngineExit& exit) {
  if (engineId != engineId_) {
    if (Rank* rank = rankOf(engineId))
      rankExited(*rank, exit);
    return;
  }
  onExit(exit);
}

bool Supervisor::endOpenGeneration(const EngineExit& exit) {
  if (!generating_)
    return false;
  // A hang's report came before the exit (the engine cannot end a generation it is stuck in).
  publish(GenerationEndEvent{
      *generating_, GenerationOutcome::Failed,
      describeExit(exit) + " while generating" +
          (lastStickyError_ ? ": " + lastStickyError_->message : std::string())});
  generating_.reset();
  return true;
}

void Supervisor::onExit(const EngineExit& exit) {
  retireEngine();
  generationDied_ = endOpenGeneration(exit) || generationDied_;
  if (planned_) {
    const PlannedRestart planned = *planned_;
    planned_.reset();
    if (planned.error && inGroup() && running_) {
      if (!planned.groupFault)
        groupFaults_.push_back(group::RankFault{0, *planned.error, std::nullopt, false});
      recoverGroup(planned.what);
      return;
    }
    retireRanks();  // a profile switch restarts every rank
    if (planned.error) {
      recover(*planned.error, planned.what);
    } else if (planned.resume && runConfig_) {
      running_ = true;
      resumeRun();  // a profile switch: same rung, new environment
    } else {
      startEngine();
    }
    return;
  }
  if (exit.failedToStart) {
    // Starting it again would fail the same way: the next command tries once more.
    lastStickyError_.reset();
    if (running_) {
      running_ = false;
      retireRanks();
      runLock_.reset();
      publish(StateEvent{RunState::Failed, lastStep_, describeExit(exit)});
    }
    if (startAwaitingHello_) {  // no engine will say hello: say so rather than hold it
      startAwaitingHello_.reset();
      publish(
          ErrorEvent{"command", "start", 0,
                     "'start' not taken: the engine could not start (" + describeExit(exit) + ")",
                     "start again to try once more", false});
    }
    return;
  }
  if (!running_ && !exit.crashed && exit.exitCode == 0) {
    startEngine();  // a clean exit with no run in progress: keep an engine ready
    return;
  }
  std::optional<runtime::ErrorClass> killed;
  if (exit.crashed && !lastStickyError_) {
    killed = runtime::classifyKill(exit.signal, hostMemory_);
    // A crash while the run was being prepared (no step had run: the data, the chat template)
    // that the runtime's messages do not name a GPU error: not one for the recovery ladder.
    if (!killed && preparing_ &&
        runtime::classifyError("", exit.stderrTail).category == runtime::ErrorCategory::Unknown) {
      killed = runtime::classifyHostCrash(exit.signal);
    }
  }
  const runtime::ErrorClass error =
      killed             ? *killed
      : lastStickyError_ ? runtime::classifyError(lastStickyError_->category,
                                                  lastStickyError_->message, lastStickyError_->op)
                         : runtime::classifyError("", exit.stderrTail);
  if (inGroup() && running_) {
    groupFaults_.push_back(lastStickyError_ ? faultOfError(0, *lastStickyError_)
                                            : group::RankFault{0, error, std::nullopt, false});
    recoverGroup(describeExit(exit) + " (rank 0) after step " + std::to_string(lastStep_));
    return;
  }
  recover(error, describeExit(exit) + (generationDied_ && !running_
                                           ? std::string(" while generating")
                                           : " after step " + std::to_string(lastStep_)));
}

void Supervisor::recover(const runtime::ErrorClass& error, const std::string& what,
                         std::optional<runtime::RecoveryRung> groupRung) {
  lastStickyError_.reset();
  const bool generation = std::exchange(generationDied_, false);
  if (!runConfig_ || !running_) {
    publish(IncidentEvent{what + " (" + runtime::categoryName(error.category) + ")",
                          generation ? "the engine was restarted; generate again"
                                     : "no run was in progress; the engine was restarted",
                          lastStep_});
    startEngine();
    return;
  }
  if (restarts_ >= policy_.maxRestarts) {
    running_ = false;
    runLock_.reset();
    publish(IncidentEvent{what,
                          "gave up after " + std::to_string(restarts_) +
                              " restarts; the last completed step is saved",
                          lastStep_});
    publish(StateEvent{RunState::Failed, lastStep_, "too many engine failures"});
    if (startAwaitingHello_)
      startEngine();  // a start sent meanwhile: the next engine takes it when it says hello
    return;
  }
  ++restarts_;
  const runtime::RecoveryRung before = rung_;
  if (policy_.climbLadder) {
    if (groupRung) {
      rung_ = *groupRung;
    } else if (auto next = runtime::nextRung(rung_, error)) {
      rung_ = *next;
    }
  }
  const bool steppedDown = rung_ != before;
  if (halvesReached(before) || (error.category == runtime::ErrorCategory::OutOfMemory &&
                                halvesReached(runtime::RecoveryRung::VendorBlas))) {
    rungMicroBatch_ = lastMicroBatch_ > 1 ? lastMicroBatch_ / 2 : lastMicroBatch_;
  }
  publish(IncidentEvent{what + " (" + runtime::categoryName(error.category) + ")",
                        std::string("restarted the engine on ") +
                            (steppedDown ? "rung " : "the same rung ") + runtime::rungName(rung_) +
                            " and resumed the run from its newest saved state, after step " +
                            std::to_string(lastStep_) +
                            " (a step completed since is replayed, not lost)" +
                            (steppedDown ? " (Controls → Recovery ladder: Undo)" : "") +
                            (error.advice.empty() ? "" : "; " + error.advice),
                        lastStep_});
  if (steppedDown) {
    rungSteps_.push_back({before, lastMicroBatch_});
    publish(LadderEvent{runtime::rungName(rung_), runtime::rungName(before), what, lastStep_,
                        static_cast<std::int64_t>(rungSteps_.size())});
  }
  resumeRun();
}

// Back to the rung before the last step down: the toggles that rung set go back to the profile's
// values (or the defaults), the micro-batch to what the run had before the step.
void Supervisor::undoRung() {
  if (rungSteps_.empty()) {
    publish(LogEvent{LogLevel::Warning, "the recovery ladder has no step to undo (rung " +
                                            std::string(runtime::rungName(rung_)) + ")"});
    return;
  }
  const RungStep step = rungSteps_.back();
  rungSteps_.pop_back();
  const runtime::RecoveryRung from = rung_;
  rung_ = step.previous;
  if (!halvesReached(runtime::RecoveryRung::VendorBlas))
    rungMicroBatch_ = 0;
  if (host_ != nullptr) {
    // The settings of the rungs left, top rung first (the registry's Setting::ladder).
    for (auto r = static_cast<int>(from); r > static_cast<int>(rung_); --r) {
      for (const settings::Setting* s : settings::registry().setByRung(runtime::RecoveryRung(r))) {
        if (s->ladder->halves) {
          if (step.microBatch > 0)
            sendToAllRanks(SetToggleCommand{*s->toggle, step.microBatch});
        } else {
          sendToAllRanks(SetToggleCommand{
              *s->toggle,
              profiles::toggleValue(profile_.toggles, *s->toggle).value_or(s->ladder->offValue)});
        }
      }
    }
  }
  publish(LadderEvent{runtime::rungName(rung_), runtime::rungName(from), "undone by the user",
                      lastStep_, static_cast<std::int64_t>(rungSteps_.size())});
}

// Whether a rung above `from`, up to the current one, halves the micro-batch (the registry's
// Setting::ladder).
bool Supervisor::halvesReached(runtime::RecoveryRung from) const {
  for (auto r = static_cast<int>(from) + 1; r <= static_cast<int>(rung_); ++r) {
    for (const settings::Setting* s : settings::registry().setByRung(runtime::RecoveryRung(r))) {
      if (s->ladder->halves)
        return true;
    }
  }
  return false;
}

void Supervisor::sendRungToggles(bool profileSwitch) {
  auto set = [this](const Toggle& toggle, nlohmann::json value) {
    sendToAllRanks(SetToggleCommand{toggle, std::move(value)});  // every rank computes alike
  };
  for (const auto& [toggle, value] : profile_.toggles) {
    if (profileSwitch || profiles::setAtStart(toggle, value)) {
      set(toggle, value);
    }
  }
  // Rungs only ever add caution on top of the profile: the settings of each rung up to this one,
  // lowest first (the registry's Setting::ladder).
  for (auto r = static_cast<int>(runtime::RecoveryRung::VendorBlas) + 1;
       r <= static_cast<int>(rung_); ++r) {
    for (const settings::Setting* s : settings::registry().setByRung(runtime::RecoveryRung(r))) {
      if (!s->ladder->halves) {
        set(*s->toggle, s->ladder->value);
      } else if (rungMicroBatch_ > 0) {
        set(*s->toggle, rungMicroBatch_);
      }
    }
  }
}

void Supervisor::switchProfile(const std::string& name) {
  for (const profiles::ParsedProfile& p :
       profiles::ProfileStore(profiles::ProfileStore::defaultUserDir()).load().profiles) {
    if (p.profile.name != name)
      continue;
    const profiles::SwitchPlan plan = profiles::planSwitch(profile_, p.profile);
    profile_ = p.profile;
    if (!plan.restartEngine) {
      if (running_ && host_)
        sendRungToggles(true);
      publish(ProfileSwitchEvent{name, "applied at the next step", lastStep_});
      return;
    }
    std::string changes;
    for (const std::string& change : plan.environmentChanges) {
      changes += (changes.empty() ? "" : ", ") + change;
    }
    publish(ProfileSwitchEvent{
        name,
        "changes the GPU runtime's environment (" + changes + "): " +
            (running_ ? "stopping at the last completed step " + std::to_string(lastStep_) +
                            ", restarting the engine and resuming"
                      : "restarting the engine"),
        lastStep_});
    planned_ = PlannedRestart{std::nullopt, "profile switch", running_};
    if (host_ != nullptr && host_->isConnected()) {
      host_->send(StopCommand{});
      host_->closeInput();
    } else {
      onExit(EngineExit{});
    }
    return;
  }
  publish(ErrorEvent{"command", "switch_profile", 0, "no profile named '" + name + "'",
                     "see the profile bar for the available profiles", false});
}

}  // namespace lorascope::engine
