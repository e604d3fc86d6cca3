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
// script's own failure (a Python exception): reported, not restarted — unless torchrun reported
// one of its workers killed by a signal: then the whole group is restarted.
//
// Like engine::Supervisor it is logic only, single-threaded, with an injected clock and launcher;
// CommandHost drives it with real processes, tests with fakes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/Engine.h"  // defines: EventSink
#include "external/LaunchPlan.h"
#include "external/OutputParser.h"
#include "runtime/QueueTracker.h"  // defines: NowMs

namespace lorascope::external {

// Steps, one source of truth each: the Python probe's record (the optimizer's step, the loss the
// step's backward() calls were given, the learning rate, the batch the data loader gave) is
// authoritative once it has announced a step in an attempt; the output parser then only fills
// what the probe lacks (a loss, the total). Without the probe the parser announces each step once.
// A step already announced (by an earlier attempt resumed from an older checkpoint, or by another
// rank of a multi-process job) is not announced again; lines of a rank other than 0 ("[rank1]:")
// give no progress, but their GPU errors classify. What nothing reports stays unknown: the batch
// is 0 without the probe or --batch-arg.
//
// Ending the command: a stop asks its process group to end (SIGTERM) and kills it (SIGKILL) once
// the grace period (SupervisedCommand::graceSeconds) has passed; CommandHost ends the rest of the
// group the same way when the command exits by itself.

// The detail of the state event of a command that exited 0.
inline constexpr const char* kFinishedWellDetail = "the command exited with code 0";

// The command as a shell line the user can paste.
std::string commandLine(const std::string& program, const std::vector<std::string>& arguments);

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

  // The next moment checkDeadlines() has something to do: the command counts as hung unless it
  // prints something first, or a stopped command's grace period ends; nullopt without either.
  std::optional<std::int64_t> nextDeadlineMs() const;
  void checkDeadlines();
  // The host's memory now (the host's telemetry, about once a second): a SIGKILL's advice then
  // names the out-of-memory killer when it was nearly full, or rules it out.
  void noteHostMemory(const runtime::HostMemory& reading) { hostMemory_ = reading; }
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
  runtime::ErrorClass killedOr(const std::string& signal) const;
  void publish(engine::Event event);
  void noteActivity();
  void progress(const Progress& p);
  void announce(engine::StepEvent step);
  void releaseHeldProbeStep();
  void checkHang();

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
  std::int64_t lastStep_ = 0;     // the last step announced (by any attempt)
  bool probeSteps_ = false;       // this attempt's probe has announced a step: it numbers them
  std::int64_t probeOffset_ = 0;  // the step the attempt resumed from (probe and counted steps)
  std::optional<bool> relativeSteps_;  // this attempt numbers its output's steps from its start
  // A probe step without a loss, waiting for the output's loss of that step.
  std::optional<engine::StepEvent> heldProbeStep_;
  std::optional<std::int64_t> killDeadlineMs_;               // a stop's grace period ends
  std::optional<std::pair<double, std::int64_t>> bestEval_;  // the lowest eval loss, its step
  std::optional<runtime::ErrorClass> failure_;  // the first GPU error line of this attempt
  std::string failureLine_;
  std::string stderrTail_;
  std::string rankSignal_;    // torchrun reported a worker killed by this signal ("SIGKILL")
  bool inRootCause_ = false;  // torchrun's report has reached its root cause
  bool rankSignalIsRootCause_ = false;
  bool hung_ = false;
  bool stopRequested_ = false;
  std::optional<std::int64_t> hangDeadlineMs_;
  std::optional<int> outcome_;
  std::optional<runtime::HostMemory> hostMemory_;  // the last reading, if any
};

}  // namespace lorascope::external
