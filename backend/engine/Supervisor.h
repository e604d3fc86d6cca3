// engine/Supervisor.h — crashes cost seconds, not runs.
//
// The supervisor owns the isolated engine. When the engine process dies (a signal, an abort, a
// non-zero exit), reports a sticky GPU error, or stops making progress (no step and no progress
// event for `hangTimeoutMs` while running), it records an incident, climbs the recovery ladder
// (vendor BLAS → built-in GEMM → serialize → smaller micro-batch → CPU, runtime::nextRung),
// restarts the engine and resumes from the state mirror, which holds the last completed
// optimizer step: no completed step is lost. Restarts are bounded; the user can stop the ladder
// or undo its last step (UndoRungCommand). An engine killed by a signal from outside (the OOM
// killer, a user's kill) is restarted on the same rung, with the likely sender named.
// The run's folder stays locked from its start to its end, across the restarts: the supervisor
// holds its run.lock for the engines it starts (EngineLauncher::holdRunFolder, RunFolderLock.h),
// so no other trainer takes the folder while one engine is dead and the next not yet running.
// A start sent while a run is in progress becomes the run only if the engine takes it (the run
// had just ended); one the engine refuses changes nothing of the run that goes on, which a crash
// then resumes.
// Switching to a profile whose environment differs restarts the engine the same way; a switch is
// a ProfileSwitchEvent, not an incident. A generation (GenerateCommand: the Try it page's engine)
// is not resumed: when its engine dies, the supervisor ends it (a failed generation_end naming
// how the engine died), records the incident and starts a new engine for the next one.
//
// This class is the logic only, plain C++ and single-threaded: every call comes from one thread,
// time comes from an injected clock, engines come from an EngineLauncher, and what the engines
// report is handed in by the caller (engineEvent, engineExited). SupervisorHost runs it on a
// thread of its own with real child processes; tests drive it directly with a manual clock.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/Engine.h"  // defines: EventSink
#include "engine/EngineHost.h"
#include "engine/IsolatedHost.h"  // defines: EngineExit
#include "engine/RunFolderLock.h"
#include "profiles/Profile.h"
#include "runtime/ErrorClassifier.h"
#include "runtime/QueueTracker.h"  // defines: NowMs

namespace lorascope::engine {

struct SupervisorPolicy {
  int maxRestarts = 8;  // per run; then the run fails with every incident listed
  // No step and no progress event for this long while running = hang. A progress event (the
  // engine's sampler: an op ran or completed since its last reading) re-arms it like a step: a
  // step made slow by a loaded machine is not a hang; one stuck in an op or a wait is.
  int hangTimeoutMs = 120'000;
  bool climbLadder = true;  // false: restart on the same rung (the user stopped the ladder)
};

// Starts engines for the supervisor. Engine `engineId` reports its events, connection changes
// and (once) its exit back to the supervisor through the caller that drives it. `location` is
// the current profile's: native, or a launcher (the engine inside WSL2).
class EngineLauncher {
 public:
  virtual ~EngineLauncher() = default;
  virtual std::unique_ptr<SupervisableHost> launch(
      int engineId, const std::map<std::string, std::string>& environment,
      const profiles::EngineLocation& location) = 0;
  // The lock of the run `start` names, to be held by the supervisor for the run's engines, which
  // are this process's children (they check that their parent holds it); nullptr where engines
  // take it themselves (the default: stand-in engines) or it is not taken (RunFolderLock::take).
  // Asked only for engines that run here, not through a launcher: an engine inside WSL2 is no
  // child of this process and takes the lock itself.
  virtual std::unique_ptr<RunFolderLock> holdRunFolder(const nlohmann::json& /*start*/) {
    return nullptr;
  }
};

class Supervisor {
 public:
  // `publish` receives every event the supervisor passes on or makes, on this supervisor's clock;
  // `connectedChanged` (optional) the engine's coming and going.
  Supervisor(EngineLauncher& launcher, profiles::Profile profile, SupervisorPolicy policy,
             EventSink publish, std::function<void(bool)> connectedChanged = {},
             runtime::NowMs nowMs = runtime::steadyClockMs());
  ~Supervisor();

  // Starts the first engine.
  void start();
  void send(const Command& command);

  // What engine `engineId` reported; reports of an engine already replaced are ignored.
  void engineEvent(int engineId, const TimedEvent& event);
  void engineConnected(int engineId, bool connected);
  void engineExited(int engineId, const EngineExit& exit);

  // When the running engine counts as hung unless a step arrives first; nothing while no run is
  // in progress. checkHang() acts on it once the clock has reached it.
  std::optional<std::int64_t> hangDeadlineMs() const { return hangDeadlineMs_; }
  void checkHang();
  // Milliseconds on the supervisor's clock (since it was made): the time of its deadlines.
  std::int64_t elapsedMs() const { return nowMs_() - startedMs_; }

  // Hands over the running engine (to shut it down); the supervisor then has none.
  std::unique_ptr<SupervisableHost> releaseEngine();

  runtime::RecoveryRung rung() const { return rung_; }
  int restarts() const { return restarts_; }
  bool isConnected() const { return host_ != nullptr && host_->isConnected(); }
  // The running engine's process id, 0 when none runs.
  std::int64_t engineProcessId() const { return host_ ? host_->processId() : 0; }
  void setClimbLadder(bool climb) { policy_.climbLadder = climb; }

 private:
  // Why the running engine is being stopped or killed on purpose; acted on once it has exited,
  // so two engines never share the state mirror.
  struct PlannedRestart {
    std::optional<runtime::ErrorClass> error;  // hang: recover from it; none: profile switch
    std::string what;
    bool resume = false;  // a run was in progress when the restart was planned
  };

  void startEngine();
  void retireEngine();
  // The run folder's lock for the engine about to be given `config` (a start, or a resume after
  // a restart): kept when held already, taken when not; `config` says who holds it.
  void holdRunLock(nlohmann::json& config);
  // Makes `config` the supervised run's: what a restart resumes, its restarts and steps anew.
  void adoptRun(nlohmann::json config);
  // The running engine's answer to the oldest start it has not answered: taken or refused.
  void startAnswered(bool taken);
  void resumeRun();
  void onExit(const EngineExit& exit);
  void recover(const runtime::ErrorClass& error, const std::string& what);
  // Ends the generation the dead engine left open, if any, naming the sticky error it reported
  // before it exited (a hang); true when there was one.
  bool endOpenGeneration(const EngineExit& exit);
  void switchProfile(const std::string& name);
  // The profile's toggles and the rung's. A profile's cpu_fallback off is sent only when the user
  // switches to that profile: at a start or a restart it would move a run the user chose to train
  // on the CPU (the run's device option decides there).
  void sendRungToggles(bool profileSwitch = false);
  void undoRung();
  void moveRung(runtime::RecoveryRung to, const std::string& why);
  void publish(Event event);
  // The engine's clock restarts with every engine; events leave on this supervisor's clock, which
  // never runs backwards, so the GUI's time axis does not jump back after a restart.
  std::int64_t toSupervisorTime(std::int64_t engineTimeMs);

  EngineLauncher& launcher_;
  profiles::Profile profile_;
  SupervisorPolicy policy_;
  EventSink publish_;
  std::function<void(bool)> connectedChanged_;
  runtime::NowMs nowMs_;
  std::int64_t startedMs_ = 0;

  std::unique_ptr<SupervisableHost> host_;
  int engineId_ = 0;                  // the running engine's number (launch count)
  std::int64_t engineStartedMs_ = 0;  // when the current engine was started, since startedMs_
  std::int64_t lastEventMs_ = 0;      // the latest time an event left with
  std::optional<std::int64_t> hangDeadlineMs_;

  std::optional<nlohmann::json> runConfig_;  // the start command's config, for restarts
  // The starts sent to the running engine and not answered yet, oldest first; the engine answers
  // each in turn, with a `starting` state when it takes it or a refusal (an error of category
  // "command" about "start") when a run is in progress. A start sent while a run is in progress
  // keeps its config here and becomes the run only when the engine takes it (the run had ended,
  // its end not heard yet): a refused one changes nothing of the run that goes on. A start sent
  // with no run in progress was adopted as it was sent (nullopt here).
  std::deque<std::optional<nlohmann::json>> unansweredStarts_;
  std::unique_ptr<RunFolderLock> runLock_;  // held from the run's start to its end
  bool running_ = false;  // a run is in progress: started, not finished, not failed for good
  std::optional<PlannedRestart> planned_;  // the exit in progress is one we asked for
  std::int64_t lastStep_ = 0;
  int lastMicroBatch_ = 0;
  std::optional<ErrorEvent> lastStickyError_;
  std::optional<std::int64_t> generating_;  // the generation sent and not ended yet
  bool generationDied_ = false;             // the exit being recovered from ended one
  // The engine's last state was Starting: it prepares the run (model, data, chat template) and
  // has run no GPU step; a crash then is a HostCrash (runtime/ErrorClassifier.h).
  bool preparing_ = false;
  runtime::RecoveryRung rung_ = runtime::RecoveryRung::VendorBlas;
  // Each step down the ladder took, newest last, for undo: the rung before and the micro-batch
  // the run had then.
  struct RungStep {
    runtime::RecoveryRung previous;
    int microBatch = 0;
  };
  std::vector<RungStep> rungSteps_;
  std::optional<runtime::HostMemory> hostMemory_;  // at the engine's last memory reading
  int restarts_ = 0;
};

}  // namespace lorascope::engine
