// external/CommandHost.h — the ExternalSupervisor at work with real processes: the user's command
// as a child (common/ChildProcess: its own process group, the profile's environment), its stdout
// and stderr read line by line ('\n' or '\r'; in linear time, a line longer than 1 MiB cut there
// and marked) into the supervisor and kept on disk (<run dir>/command.log), the Python probe's
// file tailed (<run dir>/probe-<attempt>.jsonl, named to the child in LORASCOPE_PROBE_FILE, read
// up to each output line before that line, so that the probe's record of a step comes before the
// output's; snapshot requests through LORASCOPE_PROBE_REQUEST), the run folder written
// (external/SupervisedRun.h: config.json, events.jsonl, metrics.jsonl), and
// telemetry for the child's process tree: the driver's used and total VRAM joined to the probe's
// allocator readings in one memory event per second, and "who holds VRAM" (telemetry/HeldOutside,
// the child's whole process tree counted as the run) as a log line when something outside the run
// holds memory.
//
// When the command exits, what it left running in its process group is asked to end (SIGTERM)
// and killed after the grace period; output pipes still held after that (by a process that left
// the group) are no longer read.
//
// An engine::EngineHost like the engine's hosts, so the CLI and the GUI take its events the same
// way: one thread of its own serves the supervisor (tasks in order, hang deadlines, probe and
// telemetry ticks) and calls the listener, one event at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/FileLock.h"
#include "engine/EngineHost.h"
#include "external/ExternalSupervisor.h"

namespace lorascope::telemetry {
class Sampler;
class Provider;
}  // namespace lorascope::telemetry

namespace lorascope::external {

inline constexpr const char* kProbeFileVariable = "LORASCOPE_PROBE_FILE";
inline constexpr const char* kProbeRequestVariable = "LORASCOPE_PROBE_REQUEST";

struct CommandHostOptions {
  // Created; config.json (kept when it is there: a resumed run), events.jsonl, metrics.jsonl,
  // command.log and the probe's files go here.
  std::filesystem::path runDirectory;
  bool telemetry = true;  // read the GPU providers (off in tests)
};

// The longest output line passed on whole; the rest of a longer one is dropped and the line
// marked with kCutLineMark.
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;  // 1 MiB
inline constexpr const char* kCutLineMark = " [line cut at 1 MiB]";

class CommandHost : public engine::EngineHost {
 public:
  // Starts the command at once. Throws ExternalError when the run directory or its files cannot
  // be made, when it is a folder that is neither new, empty nor a supervised command's run (what
  // it holds is named), or when another process writes that run now (its run.lock, whose holder
  // is named).
  CommandHost(SupervisedCommand command, profiles::Profile profile, CommandHostOptions options,
              engine::HostListener listener);
  // A command still running is killed with everything it started.
  ~CommandHost() override;

  void send(const engine::Command& command) override;
  bool isConnected() const override { return running_.load(); }

  // Blocks until the supervisor is done (finished, failed for good, stopped) or the timeout
  // passes; its outcome (0, 1, 130) or nullopt.
  std::optional<int> waitForOutcome(std::chrono::milliseconds timeout);

 private:
  class Launcher;
  class Run;

  void post(std::function<void()> task);
  void loop();
  void pollProbe(int attempt);
  void telemetryTick();
  void publishFromSupervisor(const engine::TimedEvent& event);
  void writeLog(const std::string& text);
  void record(const engine::TimedEvent& event);  // events.jsonl, metrics.jsonl

  CommandHostOptions options_;
  engine::HostListener listener_;
  std::unique_ptr<common::FileLock> lock_;  // the run folder's run.lock: one writer per run
  std::unique_ptr<Launcher> launcher_;
  std::unique_ptr<ExternalSupervisor> supervisor_;  // the loop's thread only
  std::vector<engine::TimedEvent> outbox_;

  // The loop's thread only:
  Run* current_ = nullptr;  // the attempt running now (owned by the supervisor)
  int currentAttempt_ = 0;
  std::ifstream probeIn_;
  std::string probePending_;
  std::size_t probeScanned_ = 0;  // bytes of probePending_ known to hold no '\n'
  std::ofstream events_;
  std::ofstream metrics_;
  std::int64_t lastStepMs_ = 0;
  bool sawGpu_ = false;  // a GPU reading: the steps ran on a GPU
  std::optional<engine::MemoryEvent> probeMemory_;
  std::optional<engine::MemoryEvent> driverMemory_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  std::vector<std::string> gpuProviders_;
  std::shared_ptr<telemetry::Provider> hostProvider_;  // host memory, for the advice of a kill
  std::int64_t lastTelemetryMs_ = -1'000'000;
  std::int64_t lastHeldOutsideMs_ = -1'000'000;
  bool reportedRunning_ = false;  // what the listener was last told (connectedChanged)

  int graceSeconds_ = 10;

  std::mutex logMutex_;
  std::ofstream log_;

  std::mutex queueMutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::optional<int> outcome_;  // under queueMutex_
  std::condition_variable outcomeChanged_;

  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace lorascope::external
