// engine/IsolatedHost.h — the engine as a child process (`lorascope-train engine`) speaking JSON
// lines on stdin/stdout, started with a profile's environment (common/ChildProcess). A GPU fault
// that kills the child leaves this process running: the host reports how it died and the
// supervisor decides what next. Two threads of its own read the child's stdout (events) and
// stderr (diagnostics); the listener is called from them, one call at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/ChildProcess.h"
#include "engine/EngineHost.h"
#include "engine/EnginePaths.h"
#include "profiles/Profile.h"

namespace lorascope::engine {

// How the child ended, for the supervisor's incident and its choice of recovery rung.
struct EngineExit {
  bool crashed = false;        // killed by a signal, or never started
  int exitCode = 0;            // when it exited
  std::string signal;          // when killed: "SIGKILL", "SIGSEGV", ...
  bool failedToStart = false;  // the program could not be started at all
  std::string stderrTail;      // the last lines it wrote to stderr (runtime messages, aborts)
};

class IsolatedHost : public SupervisableHost {
 public:
  using ExitListener = std::function<void(const EngineExit&)>;

  // `program` is the lorascope-train executable; `environment` is added to this process's own.
  // `exited` is called once per start(), after the child's last event. `location` may name a
  // launcher instead (the engine inside WSL2): it is started in place of `program engine`, with
  // the paths of commands and events translated (engine/EnginePaths.h) and, for WSL, the
  // environment's names listed in WSLENV so that they cross into the distribution.
  IsolatedHost(std::string program, std::map<std::string, std::string> environment,
               HostListener listener, ExitListener exited = {},
               profiles::EngineLocation location = {});
  ~IsolatedHost() override;  // asks the child to stop, then kills it if it does not exit

  // Starts the child (once). One that cannot start is reported as an error event and an exit.
  void start();
  void send(const Command& command) override;
  bool isConnected() const override { return connected_.load(); }
  // The child's process id while it runs, else 0.
  std::int64_t processId() const override;
  // Kills the child at once (what the watchdog does to a hung engine).
  void kill() override;
  // Closes the child's stdin: the engine stops a run with a checkpoint and exits.
  void closeInput() override;

 private:
  void readEvents();
  void readStderr();
  void emitEvent(const TimedEvent& event);
  void finish(const EngineExit& exit);

  std::string program_;
  std::map<std::string, std::string> environment_;
  HostListener listener_;
  ExitListener exitedListener_;
  profiles::EngineLocation location_;
  EnginePathTranslator paths_;
  std::unique_ptr<common::ChildProcess> child_;
  std::atomic<bool> connected_{false};
  std::mutex emitMutex_;  // one listener call at a time

  std::mutex stateMutex_;  // stderrTail_, exited_
  std::condition_variable exitedChanged_;
  bool exited_ = false;
  std::string stderrTail_;

  std::thread stdoutThread_;
  std::thread stderrThread_;
};

}  // namespace lorascope::engine
