// external/ExternalSupervisor.cpp — lines, probe events, exits → events, incidents, restarts.
#include "external/ExternalSupervisor.h"

#include <cmath>
#include <utility>

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

}  // namespace

std::string commandLine(const std::string& program, const std::vector<std::string>& arguments) {
  std::string out = shellWord(program);
  for (const std::string& a : arguments)
    out += " " + shellWord(a);
  return out;
}

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
      batch_(command_.batch),
      lastStep_(command_.resumedAfterStep) {}

void ExternalSupervisor::publish(engine::Event event) {
  publish_(engine::TimedEvent{elapsedMs(), std::move(event)});
}

void ExternalSupervisor::start() {
  if (attempt_ == 0)
    launch(command_.resumeFirst);
}

void ExternalSupervisor::launch(bool resume) {
  ++attempt_;
  failure_.reset();
  failureLine_.clear();
  stderrTail_.clear();
  hung_ = false;
  probeSteps_ = false;
  heldProbeStep_.reset();
  rankSignal_.clear();
  inRootCause_ = false;
  rankSignalIsRootCause_ = false;
  relativeSteps_.reset();
  parser_ = makeOutputParser(command_.parser);  // a new process prints from its own start
  const LaunchSpec spec = planLaunch(command_, profile_, rung_, batch_, resume);
  probeOffset_ = spec.checkpoint ? checkpointStep(*spec.checkpoint) : 0;
  publish(engine::LogEvent{engine::LogLevel::Info,
                           "attempt " + std::to_string(attempt_) + " with profile '" +
                               spec.profileName +
                               "': " + commandLine(spec.program, spec.arguments)});
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
    if (run_ && !killDeadlineMs_) {
      run_->terminate();
      killDeadlineMs_ = elapsedMs() + std::int64_t{command_.graceSeconds} * 1000;
    }
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
  // torchrun's report of a worker killed by a signal: "traceback : Signal 9 (SIGKILL) received
  // by PID 4242". The launcher exits with code 1; the job died of the signal. Its report lists
  // the workers it ended itself (SIGTERM) under "Failures:" before the one that died first under
  // "Root Cause (first observed failure):"; the root cause's signal is the one named.
  if (line.find("Root Cause (first observed failure)") != std::string_view::npos) {
    inRootCause_ = true;
  }
  if (const std::size_t at = line.find("Signal ");
      at != std::string_view::npos && line.find("received by PID", at) != std::string_view::npos &&
      (rankSignal_.empty() || (inRootCause_ && !rankSignalIsRootCause_))) {
    rankSignalIsRootCause_ = inRootCause_;
    const std::string_view rest = line.substr(at + 7);
    const std::size_t open = rest.find('(');
    const std::size_t close = rest.find(')');
    rankSignal_ = open != std::string_view::npos && close != std::string_view::npos && open < close
                      ? std::string(rest.substr(open + 1, close - open - 1))
                      : std::string(rest.substr(0, rest.find(' ')));
  }
  // Progress comes from rank 0 only (or from output without rank prefixes).
  std::string_view text = line;
  if (const auto ranked = splitRankPrefix(line)) {
    if (ranked->first != 0)
      return;
    text = ranked->second;
  }
  if (const std::optional<Progress> p = parser_->parse(text))
    progress(*p);
}

void ExternalSupervisor::progress(const Progress& parsed) {
  Progress p = parsed;
  // A resumed process whose first step is not past its checkpoint's numbers its steps from its
  // own start (counted Trainer dicts, kohya's bar): offset them by the checkpoint's step, as the
  // probe's are.
  if (p.step && p.loss && probeOffset_ > 0) {
    if (!relativeSteps_)
      relativeSteps_ = *p.step <= probeOffset_;
    if (*relativeSteps_)
      *p.step += probeOffset_;
  }
  if (p.evalLoss && lastStep_ > 0) {
    engine::EvalEvent eval;
    eval.step = lastStep_;
    eval.loss = *p.evalLoss;
    if (!bestEval_ || eval.loss < bestEval_->first)
      bestEval_ = std::pair{eval.loss, lastStep_};
    eval.bestLoss = bestEval_->first;
    eval.bestStep = bestEval_->second;
    publish(eval);
  }
  if (!p.loss || !p.step)
    return;
  if (probeSteps_) {
    // The probe numbers the steps; the output fills the loss of one the probe could not read.
    if (heldProbeStep_ && heldProbeStep_->step == *p.step) {
      heldProbeStep_->loss = *p.loss;
      releaseHeldProbeStep();
    }
    return;
  }
  engine::StepEvent step;
  step.step = *p.step;
  step.loss = *p.loss;
  step.learningRate = p.learningRate.value_or(0);
  step.gradNorm = p.gradNorm.value_or(std::nan(""));
  step.epoch = p.epoch;
  step.microBatch = command_.batchArgument.empty() ? 0 : batch_;
  step.accumulation = 0;  // unknown
  step.totalSteps = p.totalSteps.value_or(parser_->totalSteps().value_or(0));
  announce(step);
}

// Once per step number: a step done again after a resume from an older checkpoint, or printed by
// several ranks, was announced already.
void ExternalSupervisor::announce(engine::StepEvent step) {
  if (step.step <= lastStep_)
    return;
  lastStep_ = step.step;
  publish(step);
}

void ExternalSupervisor::releaseHeldProbeStep() {
  if (heldProbeStep_)
    announce(*std::exchange(heldProbeStep_, std::nullopt));
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
    probeSteps_ = true;
    releaseHeldProbeStep();  // its loss did not come
    step->step += probeOffset_;
    if (step->totalSteps == 0)
      step->totalSteps = parser_->totalSteps().value_or(0);
    if (step->microBatch == 0 && !command_.batchArgument.empty())
      step->microBatch = batch_;  // no data loader seen: the batch --batch-arg passed
    if (std::isnan(step->loss)) {
      heldProbeStep_ = *step;
      return;
    }
    announce(*step);
    return;
  }
  publish(std::move(timed.event));
}

std::optional<std::int64_t> ExternalSupervisor::nextDeadlineMs() const {
  if (hangDeadlineMs_ && killDeadlineMs_)
    return std::min(*hangDeadlineMs_, *killDeadlineMs_);
  return hangDeadlineMs_ ? hangDeadlineMs_ : killDeadlineMs_;
}

void ExternalSupervisor::checkDeadlines() {
  if (killDeadlineMs_ && elapsedMs() >= *killDeadlineMs_) {
    killDeadlineMs_.reset();
    if (run_) {
      publish(engine::LogEvent{engine::LogLevel::Warning,
                               "the command did not end within " +
                                   std::to_string(command_.graceSeconds) +
                                   " s of SIGTERM: killed (SIGKILL to its process group)"});
      run_->kill();
    }
  }
  checkHang();
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
  if (const std::optional<Progress> last = parser_->finish())
    progress(*last);
  releaseHeldProbeStep();
  run_.reset();
  hangDeadlineMs_.reset();
  killDeadlineMs_.reset();
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
    publish(engine::StateEvent{engine::RunState::Finished, lastStep_, kFinishedWellDetail});
    return;
  }
  if (failure_) {
    recover(*failure_, "the command " + how + " after printing '" + failureLine_ + "'");
    return;
  }
  if (exit.signaled) {
    recover(killedOr(exit.signal),
            "the command " + how + " after step " + std::to_string(lastStep_));
    return;
  }
  if (!rankSignal_.empty()) {  // one process of a multi-process job: the whole group again
    recover(killedOr(rankSignal_), "a process of the command was killed by " + rankSignal_ +
                                       " and the command " + how + " after step " +
                                       std::to_string(lastStep_));
    return;
  }
  giveUp("the command " + how + " without a GPU error",
         "not restarted: a restart does not fix the script's own error (see its last lines)");
}

// A signal other processes send (SIGKILL, SIGTERM: the kernel's out-of-memory killer, a user) is
// no GPU error and restarts on the same rung, its advice read against the last host memory
// reading; any other is classified by the command's last lines.
runtime::ErrorClass ExternalSupervisor::killedOr(const std::string& signal) const {
  if (auto killed = runtime::classifyKill(signal, hostMemory_, runtime::KilledProcess::Command)) {
    return *killed;
  }
  return runtime::classifyError("", stderrTail_);
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
  // The batch halves when the ladder reaches smaller micro-batch and for each out of memory on it;
  // another restart on it (a kill from outside) keeps the batch it has.
  const bool halve = next == runtime::RecoveryRung::SmallerMicroBatch &&
                     (rung_ != runtime::RecoveryRung::SmallerMicroBatch ||
                      error.category == runtime::ErrorCategory::OutOfMemory);
  const bool canShrink = !command_.batchArgument.empty() && batch_ > 1;
  if (halve && !canShrink) {
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
  if (halve)
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
