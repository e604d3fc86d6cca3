// job/EvaluationSchedule.cpp — the held-out set, when it is evaluated, and early stopping.
#include "job/EvaluationSchedule.h"

#include "common/OsError.h"          // defines: pathFromUtf8
#include "memory/DeviceAllocator.h"  // defines: OutOfMemoryError
#include "train/TrainingData.h"

namespace lorascope::job {

namespace {

void log(const engine::EventSink& sink, engine::LogLevel level, const std::string& line) {
  sink(engine::TimedEvent{0, engine::LogEvent{level, line}});
}

// The held-out examples of the run: --eval-split's share of `examples`, or --eval-data's file.
std::vector<train::TokenizedExample> heldOut(const TrainRunSettings& settings,
                                             const train::RunDirectory& run, std::int64_t vocabSize,
                                             std::vector<train::TokenizedExample>& examples,
                                             const engine::EventSink& sink, std::string& source) {
  if (settings.evalSplit > 0.0) {
    std::vector<train::TokenizedExample> held =
        train::splitForEvaluation(examples, settings.evalSplit, settings.train.seed);
    source = std::to_string(held.size()) + " of the data's examples held out (eval-split " +
             std::to_string(settings.evalSplit).substr(0, 5) + ", seed " +
             std::to_string(settings.train.seed) + ")";
    return held;
  }
  if (settings.evalData.empty())
    return {};
  const std::string& path = settings.evalData;
  const std::string recorded = run.config().value("eval_data_fingerprint", "");
  if (const std::string now = fileFingerprint(path); !recorded.empty() && now != recorded) {
    throw std::runtime_error(path + ": the eval data file changed since the run started (" + now +
                             ", recorded " + recorded + "); restore it or start a new run");
  }
  train::TrainingData evalData = train::loadTrainingData(
      common::pathFromUtf8(path), common::pathFromUtf8(run.baseModel()), settings.train.maxSeqLen);
  train::checkTokenIdsFit(evalData, common::pathFromUtf8(run.baseModel()), vocabSize);
  if (const std::string losses = train::describeDataLosses(evalData); !losses.empty())
    log(sink, engine::LogLevel::Warning, path + " (eval): " + losses);
  source = path;
  return std::move(evalData.examples);
}

}  // namespace

EvaluationSchedule::EvaluationSchedule(const TrainRunSettings& settings,
                                       const train::RunDirectory& run, std::int64_t vocabSize,
                                       std::vector<train::TokenizedExample>& examples,
                                       const engine::EventSink& sink)
    : settings_(settings), sink_(sink), earlyStopping_(settings.earlyStoppingPatience) {
  std::string source;
  const std::vector<train::TokenizedExample> held =
      heldOut(settings, run, vocabSize, examples, sink, source);
  if (held.empty() && source.empty())
    return;
  sequences_ = train::evaluationSequences(held, settings.train.maxSeqLen);
  describe(source);
}

EvaluationSchedule::EvaluationSchedule(const TrainRunSettings& settings,
                                       std::vector<train::Sequence> sequences,
                                       const engine::EventSink& sink)
    : settings_(settings),
      sink_(sink),
      sequences_(std::move(sequences)),
      earlyStopping_(settings.earlyStoppingPatience) {}

void EvaluationSchedule::describe(const std::string& source) const {
  log(sink_, engine::LogLevel::Info,
      "evaluation: " + std::to_string(sequences_.size()) + " sequences from " + source + ", " +
          (settings_.evalEvery > 0
               ? "every " + std::to_string(settings_.evalEvery) + " steps and after the last"
               : std::string("after the last step")) +
          (settings_.earlyStoppingPatience > 0
               ? ", early stopping after " + std::to_string(settings_.earlyStoppingPatience) +
                     " evaluations without improvement"
               : std::string()));
}

bool EvaluationSchedule::evaluatesAfter(std::int64_t step, bool last) const {
  return enabled() && ((settings_.evalEvery > 0 && step % settings_.evalEvery == 0) || last);
}

RunProgress RunProgress::of(const train::TrainLoop& loop) {
  return RunProgress{loop.completedSteps(), loop.totalSteps(), loop.finished()};
}

void EvaluationSchedule::resume(std::span<const train::StepMetrics> history,
                                const RunProgress& progress) {
  if (!enabled())
    return;
  for (const train::StepMetrics& m : history) {
    if (m.eval && earlyStopping_.observe(*m.eval) && !progress.finished)
      stoppedEarly_ = true;
  }
  const std::int64_t step = progress.completed;
  if (step == 0 || progress.finished || !evaluatesAfter(step, false))
    return;
  bool evaluated = false;
  for (const train::StepMetrics& m : history) {
    if (m.step == step)
      evaluated = m.eval.has_value();
  }
  pending_ = !evaluated;
}

std::optional<train::EvalMetrics> EvaluationSchedule::evaluate(
    train::TrainLoop& loop, const engine::CancelFlag& cancel,
    const std::function<void()>& emptyCache) {
  const std::int64_t step = loop.completedSteps();
  try {
    return loop.evaluate(sequences_, cancel.flag());
  } catch (const train::TrainingCancelled&) {
    log(sink_, engine::LogLevel::Info,
        "evaluation after step " + std::to_string(step) +
            " interrupted; it runs before the next step");
    pending_ = true;
  } catch (const memory::OutOfMemoryError& oom) {
    emptyCache();
    log(sink_, engine::LogLevel::Warning,
        "evaluation after step " + std::to_string(step) + " ran out of memory and was skipped: " +
            oom.what() + " (lower the micro-batch or max-seq-len)");
  }
  return std::nullopt;
}

std::optional<train::EvalMetrics> EvaluationSchedule::runPending(
    train::TrainLoop& loop, const engine::CancelFlag& cancel,
    const std::function<void()>& emptyCache) {
  pending_ = false;
  return evaluate(loop, cancel, emptyCache);
}

void EvaluationSchedule::announce(const train::EvalMetrics& eval, const RunProgress& progress) {
  const bool stop = earlyStopping_.observe(eval);
  const train::EvalMetrics best = *earlyStopping_.best();
  sink_(engine::TimedEvent{0, engine::evalEvent(eval, best)});
  if (stop && !progress.finished) {
    stoppedEarly_ = true;
    log(sink_, engine::LogLevel::Info,
        "early stopping: the eval loss has not improved on " +
            std::to_string(best.loss).substr(0, 6) + " (step " + std::to_string(best.step) +
            ") for " + std::to_string(earlyStopping_.withoutImprovement()) +
            " evaluations; the run ends at step " + std::to_string(progress.completed) + " of " +
            std::to_string(progress.total));
  }
}

}  // namespace lorascope::job
