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
// A group of GPUs (a start whose run names several with --gpus: the start's options, its own
// "gpus" on a resume, or the resumed run's config.json) is formed here, once the engine's hello
// has said which GPUs and which collective library this machine has (a start waits for it): the
// list is checked against them (a repeat, a GPU the machine lacks, no NCCL/RCCL: the start is
// refused with the reason), then the running engine becomes rank 0 and one more engine is started
// per other GPU, each told its rank, the group's size, its GPU and a fresh rendezvous file (the
// start's "group", job/EngineJob.h), and each told that this supervisor holds the run's lock.
// Rank 0's events are the run's; the other ranks' memory and queue readings and allocator snapshots
// are passed on tagged with their card (rank 0's too), their warnings and errors named by rank, the
// rest dropped (Note [rank 0 writes] in group/RankPlan.h). One rank's exit, crash, sticky error or
// hang ends every other rank and restarts them all from the newest state through
// group::planGroupRecovery: the ladder applies to every rank, the CPU rung makes the run one engine
// on the CPU, and a GPU that disappears stops the run with the choice to continue on the others
// (its failed state says how). A rank whose engine cannot start the run fails it, with its reason.
// Toggles and snapshot requests reach every rank (each card's memory map comes back tagged with
// it); stop, checkpoints and generation go to rank 0, and the other ranks are ended once rank 0's
// run is over. Pausing a group and changing its micro-batch
// during the run are refused (the ranks must change at the same step; a restart does that).
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
#include "group/GroupRecovery.h"  // defines: RankFault
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
  // The GPUs of the running group, rank r on groupDevices()[r]; empty for one engine.
  const std::vector<int>& groupDevices() const { return groupDevices_; }
  // Ends the group's other ranks (after rank 0 was released: they may wait in a collective on it).
  void releaseRanks() { retireRanks(); }
  void setClimbLadder(bool climb) { policy_.climbLadder = climb; }

 private:
  // Why the running engine is being stopped or killed on purpose; acted on once it has exited,
  // so two engines never share the state mirror.
  struct PlannedRestart {
    std::optional<runtime::ErrorClass> error;  // hang: recover from it; none: profile switch
    std::string what;
    bool resume = false;      // a run was in progress when the restart was planned
    bool groupFault = false;  // another rank failed: groupFaults_ holds why
  };
  // A rank of the group other than rank 0 (which is host_).
  struct Rank {
    int engineId = 0;
    int rank = 0;
    std::unique_ptr<SupervisableHost> host;
    bool sticky = false;        // it reported a sticky error (its fault is in groupFaults_)
    bool startRefused = false;  // its engine could not start the run (its error said why)
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
  // `groupRung`: the rung a group's plan chose (group::planGroupRecovery), else the ladder's next.
  void recover(const runtime::ErrorClass& error, const std::string& what,
               std::optional<runtime::RecoveryRung> groupRung = std::nullopt);
  // ---- the group (Supervisor.h's paragraph on groups; SupervisorGroup.cpp)
  bool inGroup() const { return groupDevices_.size() > 1; }
  // The engine is stopping to be replaced: a profile switch's restart, or a sticky error's exit.
  bool engineGoingAway() const;
  // The GPUs a start asks for, when it asks ("0,1", "all").
  static std::optional<std::string> gpusOfStart(const nlohmann::json& config);
  // The GPUs of `gpus` on this machine (the engine's hello); a problem names the value and why.
  std::vector<int> groupDevicesFor(const std::string& gpus, std::string& problem) const;
  // A start refused before any engine ran it.
  void refuseStart(const std::string& problem);
  // Makes `config` rank 0's start of the group on groupDevices_ and starts the other ranks.
  void formGroup(nlohmann::json& config);
  // Ends and drops the other ranks; removes the rendezvous file.
  void retireRanks();
  void sendToRanks(const Command& command);  // the ranks besides rank 0
  void sendToAllRanks(const Command& command);
  // A memory or queue reading or an allocator snapshot: what a group's rank passes on tagged with
  // its GPU; publishOfCard passes it on tagged with the group's GPU `card`.
  static bool isOfCard(const Event& event);
  void publishOfCard(int card, const TimedEvent& timed);
  // A rank's sticky error as its fault (a collective's error names the collective).
  static group::RankFault faultOfError(int rank, const ErrorEvent& error);
  static std::string describeExit(const EngineExit& exit);
  Rank* rankOf(int engineId);
  void rankEvent(Rank& rank, const TimedEvent& event);
  void rankExited(Rank& rank, const EngineExit& exit);
  // A rank failed: every rank ends, and the group restarts through group::planGroupRecovery.
  void rankFailed(const std::string& what);
  // A rank's run failed for good (its start was refused): every rank ends, the run fails.
  void failGroupRun(const std::string& why);
  void recoverGroup(const std::string& what);
  // A command a group cannot take (pause; a micro-batch change, also by undoing the ladder's
  // smaller micro-batch): why, else "".
  std::string refusedInGroup(const Command& command) const;
  // Ends the generation the dead engine left open, if any, naming the sticky error it reported
  // before it exited (a hang); true when there was one.
  bool endOpenGeneration(const EngineExit& exit);
  void switchProfile(const std::string& name);
  // The profile's toggles and the rung's. A profile's cpu_fallback off is sent only when the user
  // switches to that profile: at a start or a restart it would move a run the user chose to train
  // on the CPU (the run's device option decides there).
  void sendRungToggles(bool profileSwitch = false);
  bool halvesReached(runtime::RecoveryRung from) const;
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
  // The micro-batch the rung that halves it chose: half the run's when the ladder reached that
  // rung or an out-of-memory happened on it, half a new run's batch-size; 0 below it (or for a
  // new run that gave none). Restarts and profile switches send this, not half the micro-batch of
  // the moment (which would halve it again every time).
  int rungMicroBatch_ = 0;
  std::optional<ErrorEvent> lastStickyError_;
  std::optional<std::int64_t> generating_;  // the generation sent and not ended yet
  bool generationDied_ = false;             // the exit being recovered from ended one
  // The engine's last state was Starting: it prepares the run (model, data, chat template) and
  // has run no GPU step; a crash then is a HostCrash (runtime/ErrorClassifier.h).
  bool preparing_ = false;
  runtime::RecoveryRung rung_ = runtime::RecoveryRung::VendorBlas;
  // The engines' hello (the GPUs and the collective library) and a start waiting for the next
  // one (a group's start before any hello; a start sent while the engine is being replaced). The
  // group: the run's GPUs (rank r on groupDevices_[r]; empty: one engine), the ranks besides rank
  // 0, the group's rendezvous file and the faults of the group being ended, in the order seen.
  std::optional<HelloEvent> hello_;
  std::optional<StartCommand> startAwaitingHello_;
  std::vector<int> groupDevices_;
  std::vector<Rank> ranks_;
  std::string rendezvous_;
  int groupsFormed_ = 0;
  std::vector<group::RankFault> groupFaults_;
  int launches_ = 0;  // engines launched, rank 0 and the others: each one's id
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
