// train/Evaluation.h — the validation loss of a run: a held-out set (a file of its own, or a
// fixed, seeded share of the training data), its loss under the current adapter, and early
// stopping on it.
//
// - The split draws from its own Philox stream (seed, kEvalSplitStream): the same data and seed
//   give the same held-out examples in every session, so a resumed run evaluates on exactly the
//   set the first session held out and trains on exactly the rest.
// - Evaluation is a forward pass without dropout between two optimizer steps (TrainGraph::
//   forwardLoss): it reads the adapter and changes nothing the next step reads (no RNG position,
//   no gradient, no moment), so a run with evaluation trains bit for bit as one without.
// - The loss is Σ token losses / tokens predicted over the whole set (the training loss's rule),
//   not a mean of per-batch means.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runs/StepRecord.h"  // defines: EvalRecord
#include "train/Batching.h"   // defines: TokenizedExample, Sequence

namespace lorascope::train {

// The held-out loss after optimizer step `step` (the step record's evaluation).
using EvalMetrics = runs::EvalRecord;

// Moves a seeded share of `examples` (⌈fraction × n⌉, at least 1, and at least one example is
// left to train on) out of `examples` into the returned held-out set; both keep dataset order.
// Throws std::invalid_argument when fraction is outside (0, 1) or fewer than 2 examples exist.
std::vector<TokenizedExample> splitForEvaluation(std::vector<TokenizedExample>& examples,
                                                 double fraction, std::uint64_t seed);

// Held-out examples as the evaluation reads them: one example per sequence (no packing), cut to
// maxSeqLen; examples with nothing to predict within it are dropped. Throws std::invalid_argument
// when none is left.
std::vector<Sequence> evaluationSequences(const std::vector<TokenizedExample>& examples,
                                          std::int64_t maxSeqLen);

// Early stopping (transformers' EarlyStoppingCallback rule): an evaluation improves when its loss
// is below the best so far; `patience` evaluations in a row without improvement stop the run.
class EarlyStopping {
 public:
  explicit EarlyStopping(std::int64_t patience) : patience_(patience) {}
  // Records one evaluation; true when the run should stop (never with patience 0 = off).
  bool observe(const EvalMetrics& eval);
  std::optional<EvalMetrics> best() const { return best_; }
  std::int64_t withoutImprovement() const { return withoutImprovement_; }
  std::int64_t patience() const { return patience_; }

 private:
  std::int64_t patience_;
  std::optional<EvalMetrics> best_;
  std::int64_t withoutImprovement_ = 0;
};

}  // namespace lorascope::train
