// job/EngineJob.cpp — a TrainLoop behind the engine's EngineJob interface, made of the run job's
// stages: opening (job/RunOpening.h), placement (job/DevicePlacement.h), the commit of a step
// (job/StepCommit.h), the evaluation schedule (job/EvaluationSchedule.h) and the instruments
// (job/RunInstruments.h). This file holds the step cycle that orders them, out-of-memory recovery
// and the toggles.
#include "job/EngineJob.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/OsError.h"   // defines: pathText
#include "common/Platform.h"  // defines: environmentVariable
#include "compute/Errors.h"
#include "job/AutoBatch.h"
#include "job/DevicePlacement.h"
#include "job/EvaluationSchedule.h"
#include "job/RunInstruments.h"
#include "job/RunOpening.h"
#include "job/RunToggles.h"
#include "job/StepCommit.h"
#include "memory/DeviceAllocator.h"
#include "runtime/LaunchControl.h"

namespace lorascope::job {
namespace {

namespace fs = std::filesystem;
using engine::CancelFlag;
using engine::StepEvent;
using engine::Toggle;
using nlohmann::json;

// The fault ledger of a rank: rank 0's is the run's (kFaultLedgerFile); another rank keeps its
// own beside it, written only when LORASCOPE_FAULTS is set (an empty config leaves no file).
std::string faultLedgerFile(int rank) {
  return rank == 0 ? std::string(kFaultLedgerFile)
                   : "faults.rank" + std::to_string(rank) + ".ledger";
}

// LORASCOPE_FAULTS for this rank: every rank's, or only that of LORASCOPE_FAULTS_RANK when it is
// set (a fault injected in one rank of a group).
runtime::FaultConfig faultsOfRank(int rank) {
  const std::optional<std::string> only = common::environmentVariable("LORASCOPE_FAULTS_RANK");
  if (only && !only->empty() && *only != std::to_string(rank)) {
    return {};
  }
  return runtime::faultConfigFromEnvironment();
}

// A collective that failed or hung, as the sticky error that ends this rank's engine: a time-out
// is a hang naming the collective (group/GroupRecovery.h); the supervisor restarts the group.
engine::ErrorEvent collectiveErrorEvent(const group::CollectiveError& failed) {
  return engine::ErrorEvent{failed.timedOut() ? "hang" : "collective",
                            group::collectiveOpName(failed.op()),
                            0,
                            failed.what(),
                            "the group restarts from its newest state",
                            true};
}

class TrainingJob : public engine::EngineJob {
 public:
  TrainingJob(const json& config, const engine::EventSink& sink, const RankOpener& opener)
      : sink_(sink),
        request_(StartRequest::of(config)),
        opened_(openRun(config, logLine(), opener)),
        settings_(opened_.settings),
        run_(opened_.run),
        folder_(model::ModelFolder::open(run_.baseModel())),
        faultLedger_(run_.dir() / faultLedgerFile(opened_.rank)),
        placement_(std::move(opened_.backend), folder_, settings_, logLine()),
        instruments_(placement_) {
    // LORASCOPE_FAULTS: each rule fires once per run, however often the engine restarts.
    runtime::FaultInjector& faults = runtime::launchControl().faults();
    faults.configure(faultLedger_.begin(faultsOfRank(opened_.rank)));
    faults.setObserver([this](const runtime::FiredFault& fault) { faultLedger_.record(fault); });
    train::TrainingData data = loadRunData(opened_, folder_.config(), sink);
    evaluation_.emplace(settings_, run_, folder_.config().vocabSize, data.examples, sink);
    std::optional<train::TrainerState> resume = resumeState(request_, opened_, sink);
    placement_.placeWeights();
    loop_ = std::make_unique<train::TrainLoop>(placement_.backend(), folder_.config(),
                                               placement_.weights(), data.examples, settings_.train,
                                               std::move(resume));
    if (opened_.group) {
      loop_->joinGroup(*opened_.group);
    }
    if (request_.group) {
      instruments_.readCard(request_.group->device);  // its own card's readings
    }
    if (settings_.autoMicroBatch && opened_.group) {
      // No rank keeps the plan to step down: a group's out of memory restarts it.
      AutoMicroBatch(settings_, placement_.backend(), folder_.config(), data.examples,
                     opened_.group->size())
          .applyInGroup(*loop_, *opened_.group, placement_.backend(), logLine());
    } else if (settings_.autoMicroBatch) {
      autoBatch_.emplace(settings_, placement_.backend(), folder_.config(), data.examples, 1);
      autoBatch_->apply(*loop_, logLine());
    }
    if (writes()) {
      commit_.emplace(run_, loop_->state(), request_.resume && !request_.resumeFromMirror, sink);
    }
    toggles_.emplace(*loop_, placement_, settings_, sink);
    // The stability options the run starts with, as their toggles would set them.
    applyLaunchOptions(settings_, placement_.backend());
    if (settings_.allocatorPolicy == "arena") {
      logLine()("allocator-policy arena: " +
                applyToggle(Toggle::AllocatorPolicy, settings_.allocatorPolicy));
    }
    if (settings_.graph) {
      loop_->setStepMode(train::StepMode::Graph);
    }
    logLine()("run " + common::pathText(run_.dir()) + ": " + std::to_string(data.examples.size()) +
              " examples (" + std::to_string(data.skippedRecords) + " skipped), " +
              std::to_string(loop_->totalSteps()) + " steps from step " +
              std::to_string(loop_->state().step) + ", " +
              std::to_string(loop_->state().adapter.parameterCount()) +
              " LoRA parameters, micro-batch " + std::to_string(loop_->microBatchSize()) + " x " +
              std::to_string(loop_->accumulation()) + ", chat template " + data.chatTemplate +
              ", on " + placement_.backend().capabilities().name + groupText());
    toggles_->reportStart();
    if (!writes()) {
      return;  // Note [rank 0 writes]: rank 0 replays, evaluates and keeps early stopping
    }
    // The run's metrics so far (cut back to the step it resumes from), read once.
    const std::vector<train::StepMetrics> history =
        runs::readStepRecords(run_.dir() / runs::kMetricsFile);
    const std::int64_t completed = loop_->completedSteps();
    if (request_.resumeFromMirror && completed > 0) {
      commit_->replay(history, completed, request_.announcedThrough.value_or(completed - 1),
                      loop_->totalSteps());
    }
    evaluation_->resume(history, RunProgress::of(*loop_));
  }

  ~TrainingJob() override { runtime::launchControl().faults().setObserver(nullptr); }

  std::optional<StepEvent> runStep(const CancelFlag& cancel) override {
    applyAgreedToggles();
    if (writes() && evaluation_->pending() && (!runPendingEvaluation(cancel) || finished())) {
      return take();  // cut short again (it runs when the run goes on), or stopped early
    }
    train::StepMetrics m;
    try {
      // The step boundary: watchdog progress, then step fault rules (LORASCOPE_FAULTS). Faults
      // injected here or inside an op behave like the real errors.
      // The watchdog checks from here to the end of the step (StepScope), not between steps.
      struct StepScope {
        ~StepScope() { runtime::launchControl().endStep(); }
      } stepScope;
      StepTiming::timed(timing_.beginMs, [&] {
        runtime::launchControl().beginStep(loop_->completedSteps() + 1);
        if (memory::DeviceAllocator* allocator = placement_.backend().deviceAllocator()) {
          allocator->resetPeakStats();  // the readings' "largest request", "at the peak": per step
        }
      });
      loop_->setReceivedCount(static_cast<std::int64_t>(receivedToggles_));
      m = loop_->step(cancel.flag());
      agreedToggles_ = std::max(agreedToggles_, static_cast<std::size_t>(loop_->agreedCount()));
      stepped_ = true;
    } catch (const train::TrainingCancelled&) {
      return take();  // the step before, as the engine pauses or stops
    } catch (const group::CollectiveError& failed) {
      throw engine::StickyDeviceError(collectiveErrorEvent(failed));
    } catch (const runtime::InjectedFault& fault) {
      if (fault.kind() == runtime::FaultKind::OutOfMemory) {
        return recoverFromOutOfMemory(fault.op(), fault.what());
      }
      throw engine::StickyDeviceError(
          engine::ErrorEvent{runtime::faultKindName(fault.kind()), fault.op(), 0, fault.what(),
                             "the engine restarts on the next rung of the recovery ladder", true});
    } catch (const memory::OutOfMemoryError& oom) {
      return recoverFromOutOfMemory("allocate", oom.what());
    } catch (const train::NonFiniteTraining&) {
      // The last finite state becomes the newest checkpoint, so that a resume starts there.
      if (writes()) {
        run_.saveCheckpoint(loop_->state(), settings_.keepCheckpoints);
      }
      throw;
    }
    outOfMemoryRetries_ = 0;
    timing_.report(m, sink_);
    timing_ = {};
    if (!writes()) {
      return std::nullopt;  // Note [rank 0 writes]: rank 0 announces the group's steps
    }
    // Note [asynchronous state mirror] (job/StepCommit.h): the steps before, written while this
    // one ran (none while the writer is still on them: it is not waited for).
    std::optional<StepEvent> previous;
    StepTiming::timed(timing_.mirrorWaitMs, [&] { previous = takeWritten(); });
    if (evaluation_->evaluatesAfter(m.step, loop_->finished())) {
      StepTiming::timed(timing_.evaluationMs, [&] { m.eval = evaluate(cancel); });
    }
    // Before the mirror: replay() reads the step's metrics.
    StepTiming::timed(timing_.metricsMs, [&] { commit_->record(m); });
    const std::int64_t step = m.step;
    const std::optional<train::EvalMetrics> eval = m.eval;
    StepTiming::timed(timing_.snapshotMs, [&] { commit_->mirror(*loop_, std::move(m)); });
    if (settings_.checkpointEvery > 0 && step % settings_.checkpointEvery == 0 && !finished()) {
      StepTiming::timed(timing_.checkpointMs,
                        [&] { run_.saveCheckpoint(loop_->state(), settings_.keepCheckpoints); });
    }
    if (eval) {  // announced now, after the step before: it may stop the run early
      announce(previous);
      evaluation_->announce(*eval, RunProgress::of(*loop_));
    }
    if (finished()) {  // nothing runs after the last step: it is announced once written
      announce(previous);
      return take();
    }
    return previous;
  }

  std::optional<StepEvent> settle() override {
    loop_->restartCycle();  // stepping stopped (paused, stopping, commands): not the run's time
    timing_ = {};
    try {
      return take();
    } catch (const std::exception& e) {  // the step's state could not be mirrored: unannounced
      sink_(engine::TimedEvent{
          0, engine::LogEvent{engine::LogLevel::Error,
                              std::string("state mirror: ") + e.what() +
                                  "; the step is not announced and a restart redoes it"}});
      return std::nullopt;
    }
  }

  bool finished() const override { return loop_->finished() || evaluation_->stoppedEarly(); }
  std::int64_t completedSteps() const override { return loop_->completedSteps(); }

  std::string applyToggle(Toggle toggle, const json& value) override {
    if (opened_.group && toggle == Toggle::CpuFallback && value == true) {
      throw std::runtime_error(
          "a run on a group of GPUs does not move to the CPU during the run: every rank sums its "
          "gradients over its GPU's collective. The recovery ladder's CPU rung restarts the run as "
          "one engine on the CPU; or stop and resume with --device cpu");
    }
    if (commit_) {
      commit_->announce(loop_->totalSteps());  // the confirmation's step is the last announced
    }
    loop_->restartCycle();  // a device move, a rebuilt graph: the user's change, not the run's
    return toggles_->apply(toggle, value);
  }
  std::string notApplicable(Toggle toggle) const override {
    return toggles_->notApplicable(toggle);
  }
  // Note [toggles at one boundary]: a rank of a group keeps the toggles that arrive once it has
  // stepped. The supervisor sends each to every rank at once, but one rank may read it a step
  // before another; each step's sum over the group (TrainLoop::setReceivedCount) finds how many
  // toggles every rank has received, and the held ones among those are applied before the next
  // step on every rank alike. Those that arrive before the first step (the ladder's toggles, sent
  // with the start) apply at once, as on one engine, and are counted too: a toggle one rank
  // applied at once and another held keeps the ranks' later toggles in step.
  bool holdsToggle(Toggle toggle, const json& value) override {
    if (!opened_.group || opened_.group->size() < 2) {
      return false;
    }
    const std::size_t received = receivedToggles_++;
    if (!stepped_ || (toggle == Toggle::CpuFallback && value == true)) {
      return false;  // applied now, or refused by applyToggle
    }
    heldToggles_.push_back(HeldToggle{received, toggle, value});
    return true;
  }

  engine::CheckpointEvent checkpoint() override {
    if (!writes()) {
      return engine::CheckpointEvent{"", loop_->state().step};  // rank 0 writes the checkpoints
    }
    commit_->announce(loop_->totalSteps());
    const fs::path dir = run_.saveCheckpoint(loop_->state(), settings_.keepCheckpoints);
    if (finished())
      run_.saveFinalAdapter(loop_->state().adapter);
    return engine::CheckpointEvent{common::pathText(dir), loop_->state().step};
  }

  std::optional<engine::SnapshotEvent> snapshot() override { return instruments_.snapshot(); }
  engine::InstrumentEvents sampleInstruments() override { return instruments_.sample(); }
  void pollInstruments() override { instruments_.poll(); }
  std::optional<engine::MemoryEvent> memory() override { return instruments_.memory(); }

 private:
  // Note [toggles at one boundary]: the held toggles that every rank had received by the last
  // step's sum, applied and confirmed (or refused) as the engine does those it does not hold.
  void applyAgreedToggles() {
    while (!heldToggles_.empty() && heldToggles_.front().received < agreedToggles_) {
      const HeldToggle held = std::move(heldToggles_.front());
      heldToggles_.pop_front();
      sink_(engine::TimedEvent{0, applyAndConfirm(held.toggle, held.value)});
    }
  }

  // Note [rank 0 writes] (group/RankPlan.h): one engine alone, or rank 0 of a group.
  bool writes() const { return opened_.writes(); }

  std::string groupText() const {
    if (!opened_.group) {
      return "";
    }
    return ", rank " + std::to_string(opened_.rank) + " of " +
           std::to_string(opened_.group->size()) + " (" + opened_.group->name() + ")";
  }

  DeviceLog logLine() const {
    return [sink = sink_](const std::string& line) {
      sink(engine::TimedEvent{0, engine::LogEvent{engine::LogLevel::Info, line}});
    };
  }

  // Every held step (StepCommit::take: waits for the writer) or those already in the mirror
  // (takeWritten: never waits): all but the last announced here, the last returned.
  std::optional<StepEvent> take() {
    return commit_ ? handOut(commit_->take(loop_->totalSteps())) : std::nullopt;
  }
  std::optional<StepEvent> takeWritten() {
    return commit_ ? handOut(commit_->takeWritten(loop_->totalSteps())) : std::nullopt;
  }
  std::optional<StepEvent> handOut(std::vector<StepEvent> steps) {
    std::optional<StepEvent> last;
    for (StepEvent& step : steps) {
      announce(last);
      commit_->announceIncident(step);
      if (!step.graphFallback.empty()) {
        toggles_->leaveGraphMode(step);  // announced before the step that ran eagerly instead
      }
      last = std::move(step);
    }
    return last;
  }
  void announce(std::optional<StepEvent>& step) {
    if (step) {
      sink_(engine::TimedEvent{0, *step});
      step.reset();
    }
  }

  std::optional<train::EvalMetrics> evaluate(const CancelFlag& cancel) {
    return evaluation_->evaluate(*loop_, cancel, [this] { placement_.emptyCache(); });
  }

  // The evaluation of the last completed step that was cut short; its step's metrics line is
  // written without it. Returns false when it was cut short again.
  bool runPendingEvaluation(const CancelFlag& cancel) {
    const std::optional<train::EvalMetrics> eval =
        evaluation_->runPending(*loop_, cancel, [this] { placement_.emptyCache(); });
    if (!eval) {
      return !evaluation_->pending();  // out of memory: skipped, the run goes on
    }
    run_.recordEvaluation(*eval);
    std::optional<StepEvent> step = take();
    announce(step);  // the step first, then its evaluation
    evaluation_->announce(*eval, RunProgress::of(*loop_));
    return true;
  }

  // Out of memory is handled in place (DevicePlacement.h: recoverFromOutOfMemory), and the step
  // is retried by the next call.
  std::optional<StepEvent> recoverFromOutOfMemory(const std::string& op, const std::string& what) {
    if (opened_.group) {
      // A rank that lowered its micro-batch alone would compute another share of the step than
      // its peers: the group restarts on the ladder's rung for out of memory, every rank alike.
      throw engine::StickyDeviceError(engine::ErrorEvent{
          "out_of_memory", op, 0, what,
          "the group restarts from its newest state on the recovery ladder's next rung", true});
    }
    const std::string action =
        job::recoverFromOutOfMemory(++outOfMemoryRetries_, placement_, *loop_,
                                    autoBatch_ ? &*autoBatch_ : nullptr, logLine(), what);
    throw engine::RecoverableError(engine::ErrorEvent{"out_of_memory", op, 0, what, action, false});
  }

  engine::EventSink sink_;
  StartRequest request_;
  OpenedRun opened_;            // the opening stage's result; its backend moves to placement_
  TrainRunSettings& settings_;  // the run's settings, as its toggles change them
  train::RunDirectory& run_;
  model::ModelFolder folder_;
  runtime::FaultLedger faultLedger_;
  DevicePlacement placement_;
  RunInstruments instruments_;
  std::optional<EvaluationSchedule> evaluation_;
  std::unique_ptr<train::TrainLoop> loop_;
  std::optional<AutoMicroBatch> autoBatch_;  // --batch-size auto alone: plans the step-downs
  std::optional<StepCommit> commit_;         // waits for its write in flight as it goes
  std::optional<RunToggles> toggles_;
  StepTiming timing_;
  int outOfMemoryRetries_ = 0;  // in the step being retried
  // Note [toggles at one boundary]: the toggles held, in the order they arrived, each with how
  // many toggles had arrived before it; how many toggles have arrived (held or not); how many
  // every rank had received at the last step's sum; whether this engine has stepped.
  struct HeldToggle {
    std::size_t received = 0;
    Toggle toggle = Toggle::Serialize;
    json value;
  };
  std::deque<HeldToggle> heldToggles_;
  std::size_t receivedToggles_ = 0;
  std::size_t agreedToggles_ = 0;
  bool stepped_ = false;
};

}  // namespace

std::unique_ptr<engine::EngineJob> createTrainingJob(const json& config,
                                                     const engine::EventSink& sink) {
  return std::make_unique<TrainingJob>(config, sink, defaultRankOpener());
}

std::unique_ptr<engine::EngineJob> createRankJob(const json& config, const engine::EventSink& sink,
                                                 const RankOpener& opener) {
  return std::make_unique<TrainingJob>(config, sink, opener);
}

}  // namespace lorascope::job
