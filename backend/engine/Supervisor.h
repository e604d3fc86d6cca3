// engine/Supervisor.h — crashes cost seconds, not runs.
//
// The supervisor owns the isolated engine. When the engine process dies (a signal, an abort, a
// non-zero exit), reports a sticky GPU error, or stops making progress (no step for
// `hangTimeoutMs` while running), it records an incident, climbs the recovery ladder
// (vendor BLAS → built-in GEMM → serialize → smaller micro-batch → CPU, runtime::nextRung),
// restarts the engine and resumes from the state mirror, which holds the last completed
// optimizer step: no completed step is lost. Restarts are bounded; the user can stop the ladder.
// Switching to a profile whose environment differs restarts the engine the same way.
#pragma once

#include <QElapsedTimer>
#include <QMap>
#include <QTimer>
#include <optional>

#include "engine/EngineHost.h"
#include "engine/IsolatedHost.h"
#include "profiles/Profile.h"
#include "runtime/ErrorClassifier.h"

namespace lorascope::engine {

struct SupervisorPolicy {
  int maxRestarts = 8;          // per run; then the run fails with every incident listed
  int hangTimeoutMs = 120'000;  // no step event for this long while running = hang
  bool climbLadder = true;      // false: restart on the same rung (the user stopped the ladder)
};

class Supervisor : public EngineHost {
  Q_OBJECT

 public:
  // `program`: lorascope-train. The profile gives the engine's environment and first toggles.
  Supervisor(QString program, profiles::Profile profile, SupervisorPolicy policy,
             QObject* parent = nullptr);
  ~Supervisor() override;

  void send(const Command& command) override;
  bool isConnected() const override;

  runtime::RecoveryRung rung() const { return rung_; }
  int restarts() const { return restarts_; }
  // The running engine's process id, 0 when none runs (tests kill it with real signals).
  qint64 engineProcessId() const { return host_ ? host_->processId() : 0; }
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
  void resumeRun();
  void onEvent(const TimedEvent& event);
  void onExit(const EngineExit& exit);
  void recover(const runtime::ErrorClass& error, const std::string& what);
  void switchProfile(const std::string& name);
  void sendRungToggles();
  void publish(Event event);
  // The engine's clock restarts with every engine; events leave on this supervisor's clock, which
  // never runs backwards, so the GUI's time axis does not jump back after a restart.
  std::int64_t toSupervisorTime(std::int64_t engineTimeMs);

  QString program_;
  profiles::Profile profile_;
  SupervisorPolicy policy_;
  IsolatedHost* host_ = nullptr;  // child of this; retired hosts are deleted later
  QTimer hangTimer_;
  QElapsedTimer clock_;
  std::int64_t engineStartedMs_ = 0;  // clock_ when the current engine was started
  std::int64_t lastEventMs_ = 0;      // the latest time an event left with

  std::optional<nlohmann::json> runConfig_;  // the start command's config, for restarts
  bool running_ = false;  // a run is in progress: started, not finished, not failed for good
  std::optional<PlannedRestart> planned_;  // the exit in progress is one we asked for
  std::int64_t lastStep_ = 0;
  int lastMicroBatch_ = 0;
  std::optional<ErrorEvent> lastStickyError_;
  runtime::RecoveryRung rung_ = runtime::RecoveryRung::VendorBlas;
  int restarts_ = 0;
};

}  // namespace lorascope::engine
