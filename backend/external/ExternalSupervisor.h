// external/ExternalSupervisor.h — the supervisor for a trainer we did not write.
//
// It starts the user's command (LaunchPlan: the profile's environment, the rung's caution, the
// batch template), turns what the command prints into the engine's Events (its lines as log
// events; progress through the OutputParser as step events; GPU error lines, classified by
// runtime::classifyError, as error events) and passes on what the Python probe sends (memory,
// snapshot, step events in the protocol's own JSON lines). When the command dies of a GPU error
// it printed, of a signal, or hangs (no output line and no probe step for --hang-after), it
// records an incident with the classifier's explanation and advice, climbs the recovery ladder
// (runtime::nextRung) and restarts the command with the next rung's profile and the resume
// argument pointing at the newest checkpoint. A non-zero exit without a GPU error is the
// script's own failure (a Python exception): reported, not restarted.
//
// Like engine::Supervisor it is logic only, single-threaded, with an injected clock and launcher;
// CommandHost drives it with real processes, tests with fakes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/Engine.h"  // defines: EventSink
#include "external/LaunchPlan.h"
#include "external/OutputParser.h"
#include "runtime/QueueTracker.h"  // defines: NowMs

namespace lorascope::external {

// A started command, as the supervisor sees it.
class CommandRun {
 public:
  virtual ~CommandRun() = default;
  virtual void terminate() = 0;        // asks it to end (SIGTERM to its process group)
  virtual void kill() = 0;             // ends it at once, with everything it started
  virtual void requestSnapshot() = 0;  // asks the probe for an allocator snapshot
};

class CommandLauncher {
 public:
  virtual ~CommandLauncher() = default;
  // Starts attempt `attempt` (1, 2, ...); throws common::ChildProcessError when it cannot start.
  virtual std::unique_ptr<CommandRun> launch(int attempt, const LaunchSpec& spec) = 0;
};

struct CommandExit {
  bool signaled = false;
  int exitCode = 0;
  std::string signal;  // "SIGSEGV" when signaled
};

class ExternalSupervisor {
 public:
  ExternalSupervisor(CommandLauncher& launcher, SupervisedCommand command,
                     profiles::Profile profile, engine::EventSink publish,
                     runtime::NowMs nowMs = runtime::steadyClockMs());

  void start();
  // stop: the command is asked to end and is not restarted; request_snapshot: asks the probe;
  // anything else is answered with an error event (the trainer's own settings are its own).
  void send(const engine::Command& command);

  void outputLine(int attempt, bool errorStream, std::string_view line);
  void probeLine(int attempt, std::string_view line);
  void exited(int attempt, const CommandExit& exit);

  // When the command counts as hung unless it prints something first; nullopt without a watch.
  std::optional<std::int64_t> hangDeadlineMs() const { return hangDeadlineMs_; }
  void checkHang();
  std::int64_t elapsedMs() const { return nowMs_() - startedMs_; }

  // Also the process exit code of `lorascope-train supervise`: 0 once the command finished well,
  // 1 when it failed for good, 130 when the user stopped it; nullopt while it may still run.
  std::optional<int> outcome() const { return outcome_; }
  int attempt() const { return attempt_; }
  int restarts() const { return restarts_; }
  runtime::RecoveryRung rung() const { return rung_; }
  int batch() const { return batch_; }

 private:
  void launch(bool resume);
  void recover(const runtime::ErrorClass& error, const std::string& what);
  void giveUp(const std::string& what, const std::string& why);
  void publish(engine::Event event);
  void noteActivity();

  CommandLauncher& launcher_;
  SupervisedCommand command_;
  profiles::Profile profile_;
  engine::EventSink publish_;
  runtime::NowMs nowMs_;
  std::int64_t startedMs_ = 0;

  std::unique_ptr<CommandRun> run_;
  std::unique_ptr<OutputParser> parser_;
  int attempt_ = 0;
  int restarts_ = 0;
  runtime::RecoveryRung rung_ = runtime::RecoveryRung::VendorBlas;
  int batch_ = 0;
  std::int64_t lastStep_ = 0;
  // Steps: the trainer's own numbers (parsed from its output) win; the probe counts optimizer
  // steps from its process's start, offset by the resumed checkpoint's step, and is heard only
  // while the output gives no step.
  bool parsedSteps_ = false;                    // this attempt's output carried a step
  std::int64_t probeOffset_ = 0;                // the step the attempt resumed from
  std::int64_t announcedBefore_ = 0;            // the last step announced by earlier attempts
  std::optional<runtime::ErrorClass> failure_;  // the first GPU error line of this attempt
  std::string failureLine_;
  std::string stderrTail_;
  bool hung_ = false;
  bool stopRequested_ = false;
  std::optional<std::int64_t> hangDeadlineMs_;
  std::optional<int> outcome_;
};

}  // namespace lorascope::external
