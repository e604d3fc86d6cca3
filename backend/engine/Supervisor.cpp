// engine/Supervisor.cpp — incidents, the recovery ladder and resumption from the state mirror.
#include "engine/Supervisor.h"

#include "profiles/Builtins.h"
#include "profiles/ProfileStore.h"
#include "profiles/SwitchPlan.h"

namespace lorascope::engine {
namespace {

QMap<QString, QString> environmentOf(const profiles::Profile& profile) {
  QMap<QString, QString> env;
  for (const auto& [name, value] : profile.environment) {
    env.insert(QString::fromStdString(name), QString::fromStdString(value));
  }
  return env;
}

std::string describeExit(const EngineExit& exit) {
  return exit.crashed ? "the engine process was killed by a signal"
                      : "the engine process exited with code " + std::to_string(exit.exitCode);
}

}  // namespace

Supervisor::Supervisor(QString program, profiles::Profile profile, SupervisorPolicy policy,
                       QObject* parent)
    : EngineHost(parent),
      program_(std::move(program)),
      profile_(std::move(profile)),
      policy_(policy) {
  registerEngineMetaTypes();
  clock_.start();
  hangTimer_.setSingleShot(true);
  connect(&hangTimer_, &QTimer::timeout, this, [this] {
    if (!running_ || !host_)
      return;
    planned_ =
        PlannedRestart{runtime::classifyHang(),
                       "no optimizer step for " + std::to_string(policy_.hangTimeoutMs / 1000) +
                           " s (hang) after step " + std::to_string(lastStep_),
                       true};
    host_->kill();
  });
  startEngine();
}

Supervisor::~Supervisor() {
  // Runs the isolated host's shutdown (stdin closed: the engine checkpoints and exits) now,
  // while this object is still whole.
  delete host_;
}

bool Supervisor::isConnected() const {
  return host_ != nullptr && host_->isConnected();
}

void Supervisor::publish(Event event) {
  emit this->eventReceived(
      TimedEvent{toSupervisorTime(clock_.elapsed() - engineStartedMs_), std::move(event)});
}

std::int64_t Supervisor::toSupervisorTime(std::int64_t engineTimeMs) {
  lastEventMs_ = std::max(lastEventMs_, engineStartedMs_ + engineTimeMs);
  return lastEventMs_;
}

void Supervisor::startEngine() {
  engineStartedMs_ = clock_.elapsed();
  host_ = new IsolatedHost(program_, environmentOf(profile_), this);
  connect(host_, &EngineHost::eventReceived, this, &Supervisor::onEvent);
  connect(host_, &EngineHost::connectedChanged, this, &EngineHost::connectedChanged);
  connect(host_, &IsolatedHost::exited, this, &Supervisor::onExit);
  host_->start();
}

// The host that just reported its exit is deleted once its signal has returned.
void Supervisor::retireEngine() {
  if (host_ != nullptr) {
    host_->disconnect(this);
    host_->deleteLater();
    host_ = nullptr;
  }
}

// A new engine picks the run up from the state mirror, on the current rung.
void Supervisor::resumeRun() {
  startEngine();
  nlohmann::json config = *runConfig_;
  config["resume_from_mirror"] = true;
  host_->send(StartCommand{config});
  sendRungToggles();
}

void Supervisor::send(const Command& command) {
  if (const auto* start = std::get_if<StartCommand>(&command)) {
    runConfig_ = start->runConfig;
    restarts_ = 0;
    lastStep_ = 0;  // a new run: its steps are new, replayed or not
    lastStickyError_.reset();
  } else if (const auto* sw = std::get_if<SwitchProfileCommand>(&command)) {
    switchProfile(sw->name);
    return;
  }
  if (host_)
    host_->send(command);
  if (std::holds_alternative<StartCommand>(command)) {
    sendRungToggles();  // a new run starts on the current rung's toggles and the profile's
  }
}

void Supervisor::onEvent(const TimedEvent& timed) {
  if (const auto* state = std::get_if<StateEvent>(&timed.event)) {
    if (state->state == RunState::Running || state->state == RunState::Paused ||
        state->state == RunState::Starting) {
      running_ = true;
    } else if (state->state == RunState::Finished ||
               (state->state == RunState::Failed && !lastStickyError_)) {
      running_ = false;  // a sticky failure is followed by the engine's exit and a recovery
    }
    if (state->state == RunState::Running) {
      hangTimer_.start(policy_.hangTimeoutMs);
    } else {
      hangTimer_.stop();
    }
  } else if (const auto* step = std::get_if<StepEvent>(&timed.event)) {
    if (step->replayed && step->step <= lastStep_) {
      return;  // announced before the engine died: already passed on
    }
    lastStep_ = step->step;
    lastMicroBatch_ = step->microBatch;
    hangTimer_.start(policy_.hangTimeoutMs);
  } else if (const auto* error = std::get_if<ErrorEvent>(&timed.event); error && error->sticky) {
    lastStickyError_ = *error;  // the engine exits after a sticky error; onExit recovers
  }
  emit eventReceived(TimedEvent{toSupervisorTime(timed.timeMs), timed.event});
}

void Supervisor::onExit(const EngineExit& exit) {
  hangTimer_.stop();
  retireEngine();
  if (planned_) {
    const PlannedRestart planned = *planned_;
    planned_.reset();
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
  if (!running_ && !exit.crashed && exit.exitCode == 0) {
    startEngine();  // a clean exit with no run in progress: keep an engine ready
    return;
  }
  const runtime::ErrorClass error =
      lastStickyError_ ? runtime::classifyError(lastStickyError_->category,
                                                lastStickyError_->message, lastStickyError_->op)
                       : runtime::classifyError("", exit.stderrTail.toStdString());
  recover(error, describeExit(exit) + " after step " + std::to_string(lastStep_));
}

void Supervisor::recover(const runtime::ErrorClass& error, const std::string& what) {
  lastStickyError_.reset();
  if (!runConfig_ || !running_) {
    publish(IncidentEvent{what, "no run was in progress; the engine was restarted", lastStep_});
    startEngine();
    return;
  }
  if (restarts_ >= policy_.maxRestarts) {
    running_ = false;
    publish(IncidentEvent{what,
                          "gave up after " + std::to_string(restarts_) +
                              " restarts; the last completed step is saved",
                          lastStep_});
    publish(StateEvent{RunState::Failed, lastStep_, "too many engine failures"});
    return;
  }
  ++restarts_;
  if (policy_.climbLadder) {
    if (auto next = runtime::nextRung(rung_, error)) {
      rung_ = *next;
    }
  }
  publish(IncidentEvent{what + " (" + runtime::categoryName(error.category) + ")",
                        std::string("restarted the engine on rung ") + runtime::rungName(rung_) +
                            " and resumed from the last completed step " +
                            std::to_string(lastStep_) +
                            (error.advice.empty() ? "" : "; " + error.advice),
                        lastStep_});
  resumeRun();
}

void Supervisor::sendRungToggles() {
  using runtime::RecoveryRung;
  const auto& t = profile_.toggles;
  auto set = [this](Toggle toggle, nlohmann::json value) {
    host_->send(SetToggleCommand{toggle, std::move(value)});
  };
  if (t.serialize)
    set(Toggle::Serialize, *t.serialize);
  if (t.blocking)
    set(Toggle::Blocking, *t.blocking);
  if (t.microBatch)
    set(Toggle::MicroBatch, *t.microBatch);
  if (t.cpuFallback)
    set(Toggle::CpuFallback, *t.cpuFallback);
  if (t.gemm)
    set(Toggle::GemmBackend, profiles::toString(*t.gemm));
  if (t.activationCheckpointing)
    set(Toggle::ActivationCheckpointing, *t.activationCheckpointing);
  // Rungs only ever add caution on top of the profile.
  if (rung_ >= RecoveryRung::BuiltinGemm)
    set(Toggle::GemmBackend, "builtin");
  if (rung_ >= RecoveryRung::Serialize) {
    set(Toggle::Serialize, true);
    set(Toggle::Blocking, true);
  }
  if (rung_ >= RecoveryRung::SmallerMicroBatch && lastMicroBatch_ > 1) {
    set(Toggle::MicroBatch, lastMicroBatch_ / 2);
  }
  if (rung_ >= RecoveryRung::Cpu)
    set(Toggle::CpuFallback, true);
}

void Supervisor::switchProfile(const std::string& name) {
  for (const profiles::ParsedProfile& p :
       profiles::ProfileStore(profiles::ProfileStore::defaultUserDir()).load().profiles) {
    if (p.profile.name != name)
      continue;
    const profiles::SwitchPlan plan = profiles::planSwitch(profile_, p.profile);
    profile_ = p.profile;
    if (!plan.restartEngine) {
      if (running_)
        sendRungToggles();
      publish(LogEvent{LogLevel::Info, "profile '" + name + "' applied at the next step"});
      return;
    }
    std::string changes;
    for (const std::string& change : plan.environmentChanges) {
      changes += (changes.empty() ? "" : ", ") + change;
    }
    publish(IncidentEvent{
        "profile '" + name + "' changes the GPU runtime's environment (" + changes + ")",
        running_ ? "stopping at the last completed step " + std::to_string(lastStep_) +
                       ", restarting the engine and resuming"
                 : "restarting the engine",
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
