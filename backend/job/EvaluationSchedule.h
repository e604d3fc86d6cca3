// job/EvaluationSchedule.h — the run job's evaluation stage: the held-out set, when the run
// evaluates (every eval-every steps and after the last), an evaluation cut short that runs again
// before the next step, and early stopping on the results.
//
// - The step stands whatever happens to its evaluation: one cut short (pause, stop) is pending and
//   runs before the next step, in this engine or the one that resumes the run; one out of memory
//   is skipped and said so (a resumed run tries it once more). Neither is retried as a step.
// - A resumed run continues early stopping where it was, from the evaluations in its metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/Engine.h"  // defines: CancelFlag, EventSink
#include "job/TrainRunConfig.h"
#include "train/Evaluation.h"
#include "train/RunDirectory.h"
#include "train/TrainLoop.h"

namespace lorascope::job {

// Where the run stands: steps completed, of how many, and whether the loop has finished them.
struct RunProgress {
  std::int64_t completed = 0;
  std::int64_t total = 0;
  bool finished = false;
  static RunProgress of(const train::TrainLoop& loop);
};

class EvaluationSchedule {
 public:
  // The run's held-out set: --eval-data's file (its fingerprint checked against the run's
  // config.json) or --eval-split's seeded share, taken out of `examples` before the loop sees them;
  // neither: evaluation is off. Says what it holds through `sink`. Throws naming the file when the
  // eval data changed since the run started or does not fit the model.
  EvaluationSchedule(const TrainRunSettings& settings, const train::RunDirectory& run,
                     std::int64_t vocabSize, std::vector<train::TokenizedExample>& examples,
                     const engine::EventSink& sink);
  // A schedule over a held-out set already made (tests; an empty set: evaluation is off).
  EvaluationSchedule(const TrainRunSettings& settings, std::vector<train::Sequence> sequences,
                     const engine::EventSink& sink);

  bool enabled() const { return !sequences_.empty(); }
  // Whether the run evaluates after completing `step` (`last`: it is the run's last step).
  bool evaluatesAfter(std::int64_t step, bool last) const;

  // A resumed run: early stopping continues over the evaluations in `history` (the metrics, cut
  // back to the step it resumes from), and the last completed step's evaluation is pending when it
  // was due and is not there (cut short by a stop, or skipped out of memory).
  void resume(std::span<const train::StepMetrics> history, const RunProgress& progress);

  // The held-out loss after the step `loop` just completed; none when it was cut short (then
  // pending) or ran out of memory (skipped, said so; `emptyCache` frees the allocator's cache).
  std::optional<train::EvalMetrics> evaluate(train::TrainLoop& loop,
                                             const engine::CancelFlag& cancel,
                                             const std::function<void()>& emptyCache);
  bool pending() const { return pending_; }
  // The pending evaluation, run now: its result (none when cut short again, or skipped); pending()
  // is false afterwards unless it was cut short again.
  std::optional<train::EvalMetrics> runPending(train::TrainLoop& loop,
                                               const engine::CancelFlag& cancel,
                                               const std::function<void()>& emptyCache);

  // Announces an evaluation with the best of the run so far, and observes early stopping: the run
  // stops early (stoppedEarly) when it has run out of patience before its last step.
  void announce(const train::EvalMetrics& eval, const RunProgress& progress);
  bool stoppedEarly() const { return stoppedEarly_; }

 private:
  void describe(const std::string& source) const;

  TrainRunSettings settings_;
  engine::EventSink sink_;
  std::vector<train::Sequence> sequences_;  // the held-out set; empty: no evaluation
  bool pending_ = false;                    // the last completed step's evaluation was cut short
  train::EarlyStopping earlyStopping_;
  bool stoppedEarly_ = false;
};

}  // namespace lorascope::job
