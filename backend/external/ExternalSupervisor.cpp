// external/ExternalSupervisor.cpp — lines, probe events, exits → events, incidents, restarts.
#include "external/ExternalSupervisor.h"

#include "common/ChildProcess.h"  // defines: ChildProcessError
#include "common/OsError.h"       // defines: pathText

namespace lorascope::external {
namespace {

constexpr std::size_t kStderrTailBytes = 4096;

// A word as a POSIX shell reads it back: as it is when it holds nothing the shell treats
// specially, else in single quotes, a quote inside written '\''.
std::string shellWord(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_@%+=:,./-") == std::string::npos;
  if (plain)
    return word;
  std::string out = "'";
  for (const char c : word)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command as a shell line the user can paste.
std::string commandLine(const LaunchSpec& spec) {
  std::string out = shellWord(spec.program);
  for (const std::string& a : spec.arguments)
    out += " " + shellWord(a);
  return out;
}

}  // namespace

ExternalSupervisor::ExternalSupervisor(CommandLauncher& launcher, SupervisedCommand command,
                                       profiles::Profile profile, engine::EventSink publish,
                                       runtime::NowMs nowMs)
    : launcher_(launcher),
      command_(std::move(command)),
      profile_(std::move(profile)),
      publish_(std::move(publish)),
      nowMs_(std::move(nowMs)),
      startedMs_(nowMs_()),
      parser_(makeOutputParser(command_.parser)),
      batch_(command_.batch) {}

void ExternalSupervisor::publish(engine::Event event) {
  publish_(engine::TimedEvent{elapsedMs(), std::move(event)});
}

void ExternalSupervisor::start() {
  if (attempt_ == 0)
    launch(false);
}

void ExternalSupervisor::launch(bool resume) {
  ++attempt_;
  failure_.reset();
  failureLine_.clear();
  stderrTail_.clear();
  hung_ = false;
  parsedSteps_ = false;
  parser_ = makeOutputParser(command_.parser);  // a new process prints from its own start
  const LaunchSpec spec = planLaunch(command_, profile_, rung_, batch_, resume);
  probeOffset_ = spec.checkpoint ? checkpointStep(*spec.checkpoint) : 0;
  announcedBefore_ = lastStep_;
  publish(engine::LogEvent{engine::LogLevel::Info, "attempt " + std::to_string(attempt_) +
                                                       " with profile '" + spec.profileName +
                                                       "': " + commandLine(spec)});
  publish(engine::LogEvent{engine::LogLevel::Info,
                           "environment set: " + describeEnvironment(spec.environment)});
  try {
    run_ = launcher_.launch(attempt_, spec);
  } catch (const common::ChildProcessError& e) {
    run_.reset();
    publish(engine::ErrorEvent{"input", "start", 0, e.what(),
                               "check the command's path and that it is executable", false});
    outcome_ = 1;
    publish(engine::StateEvent{engine::RunState::Failed, lastStep_, e.what()});
    return;
  }
  publish(engine::StateEvent{engine::RunState::Running, lastStep_,
                             "attempt " + std::to_string(attempt_)});
  noteActivity();
}

void ExternalSupervisor::noteActivity() {
  if (command_.hangAfterSeconds > 0 && run_)
    hangDeadlineMs_ = elapsedMs() + std::int64_t{command_.hangAfterSeconds} * 1000;
}

void ExternalSupervisor::send(const engine::Command& command) {
  if (std::holds_alternative<engine::StopCommand>(command)) {
    stopRequested_ = true;
    hangDeadlineMs_.reset();
    if (run_)
      run_->terminate();
    return;
  }
  if (std::holds_alternative<engine::RequestSnapshotCommand>(command)) {
    if (run_)
      run_->requestSnapshot();
    return;
  }
  publish(engine::ErrorEvent{
      "command", std::string(engine::commandType(command)), 0,
      "a supervised command takes stop and request_snapshot only",
      "the trainer's own settings are its own; a profile applies at the next restart", false});
}

void ExternalSupervisor::outputLine(int attempt, bool errorStream, std::string_view line) {
  if (attempt != attempt_)
    return;
  noteActivity();
  if (errorStream) {
    stderrTail_.append(line).append("\n");
    if (stderrTail_.size() > kStderrTailBytes)
      stderrTail_.erase(0, stderrTail_.size() - kStderrTailBytes);
  }
  publish(engine::LogEvent{errorStream ? engine::LogLevel::Warning : engine::LogLevel::Info,
                           std::string(line)});
  if (!failure_) {
    const runtime::ErrorClass c = runtime::classifyError("", line);
    if (!c.signature.empty()) {
      failure_ = c;
      failureLine_ = std::string(line);
      publish(engine::ErrorEvent{runtime::categoryName(c.category), "", 0, failureLine_, c.advice,
                                 c.sticky});
    }
  }
  // A counted step starts at 1 again in a resumed process: offset it by the checkpoint's step,
  // as the probe's are.
  std::optional<Progress> p = parser_->parse(line);
  if (p && p->counted && p->step)
    *p->step += probeOffset_;
  // A bar without a loss moves no chart; it counts as activity only. So does a step already
  // announced: a bar redrawn within its step, or a step done again after a resume from an older
  // checkpoint (as the engine's supervisor passes a replayed step on only once).
  if (p && p->loss && !(p->step && parsedSteps_ && *p->step == lastStep_) &&
      !(p->step && *p->step <= announcedBefore_)) {
    engine::StepEvent step;
    step.step = p->step.value_or(lastStep_ + 1);
    step.loss = *p->loss;
    step.learningRate = p->learningRate.value_or(0);
    step.microBatch = batch_ > 0 ? batch_ : 1;
    step.totalSteps = p->totalSteps.value_or(0);
    parsedSteps_ = true;
    lastStep_ = step.step;
    publish(step);
  }
}

void ExternalSupervisor::probeLine(int attempt, std::string_view line) {
  if (attempt != attempt_)
    return;
  engine::TimedEvent timed;
  try {
    timed = engine::decodeEvent(line);
  } catch (const engine::ProtocolError& e) {
    publish(engine::protocolErrorEvent(e, line));
    return;
  }
  if (auto* step = std::get_if<engine::StepEvent>(&timed.event)) {
    noteActivity();
    step->step += probeOffset_;
    if (parsedSteps_ || step->step <= lastStep_)
      return;  // the output numbers the steps, or this one was announced already
    if (batch_ > 0)
      step->microBatch = batch_;
    lastStep_ = step->step;
  }
  publish(std::move(timed.event));
}

void ExternalSupervisor::checkHang() {
  if (!hangDeadlineMs_ || elapsedMs() < *hangDeadlineMs_ || !run_)
    return;
  hangDeadlineMs_.reset();
  hung_ = true;
  run_->kill();
}

void ExternalSupervisor::exited(int attempt, const CommandExit& exit) {
  if (attempt != attempt_)
    return;
  run_.reset();
  hangDeadlineMs_.reset();
  const std::string how = exit.signaled ? "was killed by " + exit.signal
                                        : "exited with code " + std::to_string(exit.exitCode);
  if (stopRequested_) {
    outcome_ = 130;
    publish(engine::StateEvent{engine::RunState::Finished, lastStep_,
                               "stopped on request; the command " + how});
    return;
  }
  if (hung_) {
    recover(runtime::classifyHang(),
            "the command printed nothing and its probe reported no step "
            "for " +
                std::to_string(command_.hangAfterSeconds) + " s (hang) after step " +
                std::to_string(lastStep_));
    return;
  }
  if (!exit.signaled && exit.exitCode == 0) {
    // Finished well, whatever it printed on the way (a trainer may catch an out-of-memory).
    outcome_ = 0;
    publish(engine::StateEvent{engine::RunState::Finished, lastStep_, "the command " + how});
    return;
  }
  if (failure_) {
    recover(*failure_, "the command " + how + " after printing '" + failureLine_ + "'");
    return;
  }
  if (exit.signaled) {
    recover(runtime::classifyError("", stderrTail_),
            "the command " + how + " after step " + std::to_string(lastStep_));
    return;
  }
  giveUp("the command " + how + " without a GPU error",
         "not restarted: a restart does not fix the script's own error (see its last lines)");
}

void ExternalSupervisor::giveUp(const std::string& what, const std::string& why) {
  outcome_ = 1;
  publish(engine::IncidentEvent{what, why, lastStep_});
  publish(engine::StateEvent{engine::RunState::Failed, lastStep_, what});
}

void ExternalSupervisor::recover(const runtime::ErrorClass& error, const std::string& what) {
  const std::string labelled = what + " (" + runtime::categoryName(error.category) + ")";
  if (restarts_ >= command_.maxRestarts) {
    giveUp(labelled, "gave up after " + std::to_string(restarts_) + " restarts");
    return;
  }
  std::optional<runtime::RecoveryRung> next = runtime::nextRung(rung_, error);
  const bool canShrink = !command_.batchArgument.empty() && batch_ > 1;
  if (next == runtime::RecoveryRung::SmallerMicroBatch && !canShrink) {
    if (error.category == runtime::ErrorCategory::OutOfMemory) {
      giveUp(labelled, command_.batchArgument.empty()
                           ? "not restarted: out of memory needs a smaller batch, and no "
                             "--batch-arg says how to pass one; " +
                                 error.advice
                           : "not restarted: the batch is already 1; " + error.advice);
      return;
    }
    next = runtime::RecoveryRung::Cpu;
  }
  if (!next || *next == runtime::RecoveryRung::Cpu) {
    giveUp(labelled,
           "the recovery ladder is exhausted (LoRAscope cannot move an external trainer to the "
           "CPU); " +
               error.advice);
    return;
  }
  rung_ = *next;
  ++restarts_;
  if (rung_ == runtime::RecoveryRung::SmallerMicroBatch)
    batch_ = std::max(1, batch_ / 2);
  const LaunchSpec preview = planLaunch(command_, profile_, rung_, batch_, true);
  std::string action = "restarted with profile '" + preview.profileName + "' (rung " +
                       runtime::rungName(rung_) + ")";
  if (rung_ == runtime::RecoveryRung::SmallerMicroBatch)
    action += ", batch " + std::to_string(batch_);
  if (!command_.resumeArgument.empty()) {
    action += preview.checkpoint
                  ? ", resuming from " + common::pathText(*preview.checkpoint)
                  : ", from the beginning: no checkpoint matches '" + command_.checkpointGlob + "'";
  }
  if (!error.advice.empty())
    action += "; " + error.advice;
  publish(engine::IncidentEvent{labelled, action, lastStep_});
  launch(true);
}

}  // namespace lorascope::external
