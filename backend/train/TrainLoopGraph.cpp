// train/TrainLoopGraph.cpp — graph mode's optimizer step (Note [whole-step graphs] in
// train/StepGraphs.h): the step's rows padded to one shape and written into pinned inputs, its
// values into device memory, its ops issued once per shape and replayed, one read at its end.
// Kept apart from TrainLoop.cpp's eager step; both share takeRows, checkFinite and completeStep.
#include <algorithm>
#include <cmath>

#include "compute/Errors.h"  // defines: ShapeError
#include "train/TrainLoop.h"

namespace lorascope::train {
namespace {

const char* runName(StepGraphs::Run run) {
  switch (run) {
    case StepGraphs::Run::Uncaptured:
      return "deferred";
    case StepGraphs::Run::WarmUp:
      return "warm-up";
    case StepGraphs::Run::Captured:
      return "captured";
    case StepGraphs::Run::Replayed:
      break;
  }
  return "replayed";
}

// Row r of a micro-batch in the padded layout: its ids, and its labels shifted by one (the
// target of position t is the label of t + 1), −100 past its end.
void fillRow(const Sequence& s, std::int64_t seq, std::int32_t* ids, std::int32_t* targets) {
  const auto n = static_cast<std::int64_t>(s.ids.size());
  std::fill(ids, ids + seq, 0);
  std::fill(targets, targets + seq, compute::kIgnoreTarget);
  std::copy(s.ids.begin(), s.ids.end(), ids);
  for (std::int64_t t = 0; t + 1 < n; ++t) {
    targets[t] = s.labels[static_cast<std::size_t>(t + 1)];
  }
}

// A micro-batch's lm-head rows (compute::LmHeadRows): its predicted rows in order, then rows it
// does not predict, until the buffers are full.
void fillPassRows(std::span<const std::int32_t> targets, std::span<std::int32_t> rows,
                  std::span<std::int32_t> rowTargets) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < targets.size() && n < rows.size(); ++i) {
    if (targets[i] != compute::kIgnoreTarget) {
      rows[n] = static_cast<std::int32_t>(i);
      rowTargets[n++] = targets[i];
    }
  }
  for (std::size_t i = 0; i < targets.size() && n < rows.size(); ++i) {
    if (targets[i] == compute::kIgnoreTarget) {
      rows[n] = static_cast<std::int32_t>(i);
      rowTargets[n++] = compute::kIgnoreTarget;
    }
  }
}

}  // namespace

void TrainLoop::setStepMode(StepMode mode) {
  if (mode == stepMode_) {
    return;
  }
  leaveGraphMode();
  stepMode_ = mode;
}

void TrainLoop::leaveGraphMode() {
  stepGraphs_.reset();
  stepMode_ = StepMode::Eager;
}

StepMetrics TrainLoop::graphStep(const std::atomic<bool>* cancel) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto ms = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  StepMetrics metrics;
  const StepRows r = takeRows();
  std::int64_t longest = 0;
  for (const Sequence* s : r.rows) {
    longest = std::max(longest, static_cast<std::int64_t>(s->ids.size()));
  }
  const bool documents = config_.packing == Packing::Documents;
  const std::int64_t seq = graphSeqLength(longest, config_.maxSeqLen);
  std::int64_t mostPredicted = 0;  // Note [predicted rows in a graph]
  for (std::int64_t first = 0; first < r.taken; first += microBatch_) {
    std::int64_t predicted = 0;
    for (std::int64_t i = first; i < std::min(first + microBatch_, r.taken); ++i) {
      predicted += r.rows[static_cast<std::size_t>(i)]->predictedTokens;
    }
    mostPredicted = std::max(mostPredicted, predicted);
  }
  const StepShape shape{microBatch_, seq, (r.taken + microBatch_ - 1) / microBatch_, documents,
                        graphPredictedRows(mostPredicted, microBatch_ * seq)};
  if (!stepGraphs_) {
    stepGraphs_ = std::make_unique<StepGraphs>(*backend_);
  }
  // The inputs: every micro-batch padded to shape.rows × shape.seq, checked on the host as the
  // eager ops check them (a replay checks nothing).
  std::vector<model::ForwardInput> inputs;
  std::vector<std::span<const std::int32_t>> targets;
  const std::span<std::int32_t> rowLengths = stepGraphs_->rowLengths(shape);
  for (std::int64_t m = 0; m < shape.microBatches; ++m) {
    const std::span<std::int32_t> ids = stepGraphs_->ids(shape, m);
    const std::span<std::int32_t> shifted = stepGraphs_->targets(shape, m);
    const std::span<std::int32_t> starts =
        documents ? stepGraphs_->documentStarts(shape, m) : std::span<std::int32_t>();
    const std::span<std::int32_t> positions =
        documents ? stepGraphs_->positions(shape, m) : std::span<std::int32_t>();
    std::int64_t rowLength = 0;  // the eager step's padded length of this micro-batch
    for (std::int64_t row = 0; row < shape.rows; ++row) {
      const std::int64_t index = m * shape.rows + row;
      std::int32_t* rowIds = ids.data() + row * shape.seq;
      std::int32_t* rowTargets = shifted.data() + row * shape.seq;
      const Sequence* s = index < r.taken ? r.rows[static_cast<std::size_t>(index)] : nullptr;
      if (s != nullptr) {
        fillRow(*s, shape.seq, rowIds, rowTargets);
        metrics.tokens += static_cast<std::int64_t>(s->ids.size());
        rowLength = std::max(rowLength, static_cast<std::int64_t>(s->ids.size()));
      } else {  // a padding row: no target, so no loss and no gradient
        std::fill(rowIds, rowIds + shape.seq, 0);
        std::fill(rowTargets, rowTargets + shape.seq, compute::kIgnoreTarget);
      }
      if (documents) {  // a padding row is one document
        const auto at = static_cast<std::size_t>(row * shape.seq);
        const std::span<std::int32_t> rowStarts = starts.subspan(at, shape.seq);
        fillDocumentStarts(s != nullptr ? *s : Sequence{}, rowStarts);
        for (std::int64_t t = 0; t < shape.seq; ++t) {
          positions[at + static_cast<std::size_t>(t)] =
              static_cast<std::int32_t>(t) - rowStarts[static_cast<std::size_t>(t)];
        }
      }
    }
    rowLengths[static_cast<std::size_t>(m)] = static_cast<std::int32_t>(rowLength);
    compute::checkTargetIds("graph step (ids)", ids, modelConfig_.vocabSize);
    compute::checkTargetIds("graph step (targets)", shifted, modelConfig_.vocabSize);
    if (documents) {
      compute::checkDocumentStarts("graph step (document starts)", starts, shape.rows, shape.seq);
    }
    if (shape.predicted > 0) {
      fillPassRows(shifted, stepGraphs_->passRowIndices(shape, m),
                   stepGraphs_->passRowTargets(shape, m));
    }
    // The labels only size-check the pass: with a DeferredPass the targets are read instead.
    inputs.push_back({shape.rows, shape.seq, ids, shifted, starts, positions});
    targets.emplace_back(shifted);
    metrics.positions += shape.rows * shape.seq;
  }
  const double lr = learningRate();
  const float gradScale = 1.0f / static_cast<float>(r.predicted);
  compute::StepScalars& scalars = stepGraphs_->scalars();
  scalars.adamw = adamwScalars(config_.adamw, lr, state_.step + 1);
  scalars.maxGradNorm = config_.maxGradNorm;
  scalars.gradScale = gradScale;
  scalars.dropoutStreamHigh = dropoutStreamHigh(state_.step);
  const auto built = Clock::now();
  metrics.stages.batchesMs = ms(start, built);

  const StepGraphs::Run run = stepGraphs_->run(shape, [&] {
    graph_->zeroGradients();
    graph_->markWeightsChanged();  // the products' copy of the weights is remade inside the step
    for (std::int64_t m = 0; m < shape.microBatches; ++m) {
      const DeferredPass pass{targets[static_cast<std::size_t>(m)], stepGraphs_->passRows(shape, m),
                              &stepGraphs_->deviceScalars(), &stepGraphs_->deviceSums(),
                              &stepGraphs_->deviceRowLengths(shape)};
      graph_->forwardBackward(inputs[static_cast<std::size_t>(m)], gradScale, {config_.seed, 0, m},
                              cancel, &pass);
    }
    graph_->clipAndUpdateOnBackend(stepGraphs_->deviceScalars(), stepGraphs_->deviceSums());
  });
  backend_->synchronize();
  metrics.stages.passesMs = ms(built, Clock::now());
  const compute::StepSums sums = stepGraphs_->sums();
  const double loss = sums.lossSum / static_cast<double>(r.predicted);
  const double gradNorm = std::sqrt(sums.gradSquares);
  metrics.nonFinite = checkFinite(loss, gradNorm);
  if (sums.finite == 1.0) {  // the device applied the update
    hostStateStale_ = true;
  }
  metrics.loss = loss;
  metrics.learningRate = lr;
  metrics.gradNorm = gradNorm;
  metrics.accumulation = shape.microBatches;
  metrics.graph = runName(run);
  return completeStep(r, std::move(metrics), start);
}

}  // namespace lorascope::train
