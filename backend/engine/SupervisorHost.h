// engine/SupervisorHost.h — the Supervisor at work: isolated engines (`lorascope-train engine`
// child processes, IsolatedHost) supervised on a thread of its own. Commands and the engines'
// reports queue up for that thread, which also wakes for the hang watchdog; events reach the
// listener from it, one at a time. What the GUI (through its Qt adapter) and `lorascope-train
// train` both run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "engine/Supervisor.h"

namespace lorascope::engine {

class SupervisorHost : public EngineHost {
 public:
  // `program`: lorascope-train. The profile gives the engine's environment and first toggles,
  // and where the engine runs (its `engine` location: native, or a launcher such as wsl.exe;
  // a profile switch that changes it restarts the engine there).
  SupervisorHost(std::string program, profiles::Profile profile, SupervisorPolicy policy,
                 HostListener listener);
  // Shuts the engine down as IsolatedHost does (stdin closed: it checkpoints and exits).
  ~SupervisorHost() override;

  void send(const Command& command) override;
  bool isConnected() const override { return connected_.load(); }

  runtime::RecoveryRung rung() const { return rung_.load(); }
  int restarts() const { return restarts_.load(); }
  // The running engine's process id, 0 when none runs (tests kill it with real signals).
  std::int64_t engineProcessId() const { return processId_.load(); }
  void setClimbLadder(bool climb);

 private:
  class ProcessLauncher;
  using Report = std::variant<TimedEvent, bool>;  // an event, or connected / disconnected

  void post(std::function<void()> task);
  void loop();

  std::string program_;
  HostListener listener_;
  std::unique_ptr<ProcessLauncher> launcher_;
  std::unique_ptr<Supervisor> supervisor_;  // touched by the loop's thread only
  std::vector<Report> outbox_;              // what the supervisor published in the current task

  std::mutex queueMutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;

  std::atomic<bool> connected_{false};
  std::atomic<runtime::RecoveryRung> rung_{runtime::RecoveryRung::VendorBlas};
  std::atomic<int> restarts_{0};
  std::atomic<std::int64_t> processId_{0};
  std::thread thread_;
};

}  // namespace lorascope::engine
