// test_step_graphs.cpp — graph mode's step without capture (StepMode::Deferred, what a GPU
// captures: train/StepGraphs.h) against the eager step on the CPU: padded fixed shapes, the loss
// summed on the backend, clipping with the loss weight folded in, the update guarded by a device
// flag and the dropout stream's step read from device memory give the eager run's curve, with
// document packing too.
// The capture itself runs on the GPU: tests/train/gpu/gpu_train.cpp's graph case.
#include "TestRunner.h"

#include <cmath>
#include <limits>

#include "TrainExamples.h"
#include "TrainTestUtil.h"
#include "compute/Errors.h"
#include "train/LoraDropout.h"
#include "train/StepGraphs.h"
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;
using train::StepMetrics;
using train::StepMode;
using train::TrainConfig;
using train::TrainLoop;

namespace {

// Dropout on, two micro-batches per step, 10 examples of 4 per step: the third step of each epoch
// takes the last 2 (a shorter step, another shape), and lengths vary so micro-batches pad.
TrainConfig config(std::int64_t steps) {
  TrainConfig c;
  c.lora.rank = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0.1;
  c.adamw.learningRate = 1e-2;
  c.adamw.weightDecay = 0.01;
  c.schedule = train::ScheduleKind::Cosine;
  c.warmupSteps = 2;
  c.microBatchSize = 2;
  c.gradAccumulation = 2;
  c.maxSteps = steps;
  c.maxSeqLen = 12;
  c.maxGradNorm = 0.05;  // small: clipping acts on most steps
  c.seed = 1234;
  return c;
}

std::vector<StepMetrics> steps(TrainLoop& loop, int n) {
  std::vector<StepMetrics> out;
  for (int i = 0; i < n && !loop.finished(); ++i) {
    out.push_back(loop.step());
  }
  return out;
}

bool closeRelative(double got, double want, double tolerance) {
  return std::fabs(got - want) <= tolerance * std::fabs(want);
}

// The same curve: the deferred step sums in another order and scales once instead of per
// micro-batch, so it agrees to float rounding, not bit for bit.
bool sameCurve(const std::vector<StepMetrics>& got, const std::vector<StepMetrics>& want) {
  if (got.size() != want.size()) {
    return false;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!closeRelative(got[i].loss, want[i].loss, 1e-5) ||
        !closeRelative(got[i].gradNorm, want[i].gradNorm, 1e-4) ||
        got[i].tokens != want[i].tokens || got[i].predictedTokens != want[i].predictedTokens) {
      lstest::warning("step %zu: loss %.9g vs %.9g, norm %.9g vs %.9g, tokens %lld vs %lld", i + 1,
                      got[i].loss, want[i].loss, got[i].gradNorm, want[i].gradNorm,
                      static_cast<long long>(got[i].tokens),
                      static_cast<long long>(want[i].tokens));
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE(deferredStepsFollowTheEagerCurve) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainLoop eager(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1), config(9));
  TrainLoop deferred(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1),
                     config(9));
  deferred.setStepMode(StepMode::Deferred);
  const auto want = steps(eager, 9);
  const auto got = steps(deferred, 9);
  VERIFY(sameCurve(got, want));
  for (const StepMetrics& m : got) {
    COMPARE(m.graph, std::string("deferred"));
    VERIFY(m.graphFallback.empty());
    VERIFY(m.positions >= m.tokens);
  }
  // The adapters after nine updates: the same to float rounding.
  const auto& a = deferred.state().adapter.weights;
  const auto& b = eager.state().adapter.weights;
  for (std::size_t i = 0; i < a.size(); ++i) {
    VERIFY(closeRelativeToMax(a[i].a, b[i].a, 1e-4, "A of site " + std::to_string(i)));
    VERIFY(closeRelativeToMax(a[i].b, b[i].b, 1e-4, "B of site " + std::to_string(i)));
  }
}

TEST_CASE(switchingModesAtStepBoundariesKeepsTheCurve) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainLoop eager(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1), config(8));
  TrainLoop mixed(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1), config(8));
  const auto want = steps(eager, 8);
  std::vector<StepMetrics> got = steps(mixed, 2);
  mixed.setStepMode(StepMode::Deferred);
  for (const StepMetrics& m : steps(mixed, 3)) {
    got.push_back(m);
  }
  mixed.setMicroBatchSize(1, "test");  // another shape in the middle of the mode
  mixed.setMicroBatchSize(2, "test");
  mixed.setStepMode(StepMode::Eager);
  for (const StepMetrics& m : steps(mixed, 3)) {
    got.push_back(m);
  }
  VERIFY(sameCurve(got, want));
  COMPARE(got[2].graph, std::string("deferred"));
  COMPARE(got[7].graph, std::string());
}

TEST_CASE(graphModeOnTheCpuRunsEagerSteps) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  VERIFY(!backend->canCapture());
  TrainLoop loop(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1), config(2));
  loop.setStepMode(StepMode::Graph);
  VERIFY(!loop.graphActive());
  const StepMetrics m = loop.step();
  COMPARE(m.graph, std::string());  // eager: the CPU cannot capture
  VERIFY(throwsNaming<compute::UnsupportedOpError>([&] { backend->beginCapture(); },
                                                   "not applicable"));
}

// A document-packed run in graph mode: each step's document starts and RoPE positions are its
// inputs beside the ids, and the deferred steps follow the eager document-packed curve (which
// tests/train/test_train_graph.cpp holds equal to the examples run unpacked).
TEST_CASE(documentPackedDeferredStepsFollowTheEagerCurve) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainConfig packed = config(6);
  packed.packing = train::Packing::Documents;
  TrainLoop eager(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1), packed);
  TrainLoop deferred(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1), packed);
  deferred.setStepMode(StepMode::Deferred);
  VERIFY(eager.sequenceCount() < 10);  // some rows pack several examples
  const auto want = steps(eager, 6);
  const auto got = steps(deferred, 6);
  VERIFY(sameCurve(got, want));
  for (const StepMetrics& m : got) {
    COMPARE(m.graph, std::string("deferred"));
    VERIFY2(m.graphFallback.empty(), m.graphFallback.c_str());
  }
  VERIFY(deferred.stepMode() == StepMode::Deferred);
}

// Two thirds of each example a prompt, packed four rows of up to 64 positions a step: each step's
// lm-head is given its predicted rows, fewer than its positions (Note [predicted rows in a graph];
// the CPU checks them against the targets and computes its own), and the deferred steps follow the
// eager curve.
TEST_CASE(deferredStepsGiveTheLmHeadItsPredictedRows) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainConfig c = config(6);
  c.packing = train::Packing::Documents;
  c.microBatchSize = 4;
  c.gradAccumulation = 1;
  c.maxSeqLen = 64;
  std::vector<train::TokenizedExample> examples = syntheticExamples(160, 1);
  for (train::TokenizedExample& e : examples) {
    std::fill(e.labels.begin(),
              e.labels.begin() + static_cast<std::ptrdiff_t>(e.labels.size() * 2 / 3),
              compute::kIgnoreTarget);
  }
  TrainLoop eager(*backend, folder.config(), folder.weights(), examples, c);
  TrainLoop deferred(*backend, folder.config(), folder.weights(), examples, c);
  deferred.setStepMode(StepMode::Deferred);
  const auto want = steps(eager, 6);
  const auto got = steps(deferred, 6);
  VERIFY(sameCurve(got, want));
  for (const StepMetrics& m : got) {
    COMPARE(m.graph, std::string("deferred"));
    VERIFY2(
        train::graphPredictedRows(m.predictedTokens, m.positions) > 0,
        ("predicted " + std::to_string(m.predictedTokens) + " of " + std::to_string(m.positions))
            .c_str());
  }
}

TEST_CASE(aNonFiniteDeferredStepChangesNothing) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainConfig c = config(4);
  c.adamw.learningRate = std::numeric_limits<double>::max();  // the first update overflows
  c.warmupSteps = 0;
  c.schedule = train::ScheduleKind::Constant;
  TrainLoop loop(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1), c);
  loop.setStepMode(StepMode::Deferred);
  loop.step();  // the update makes the weights infinite or NaN
  const train::LoraAdapter before = loop.state().adapter;
  const StepMetrics second = loop.step();
  VERIFY(!second.nonFinite.empty());
  VERIFY(second.nonFinite.find("update was skipped") != std::string::npos);
  const train::LoraAdapter& after = loop.state().adapter;
  for (std::size_t i = 0; i < after.weights.size(); ++i) {
    // NaN != NaN: compare the bytes
    VERIFY(bitIdentical(after.weights[i].a, before.weights[i].a));
    VERIFY(bitIdentical(after.weights[i].b, before.weights[i].b));
  }
}

TEST_CASE(paddedLengthsAndDropoutStreamHalves) {
  COMPARE(train::graphSeqLength(1, 512), std::int64_t{64});
  COMPARE(train::graphSeqLength(64, 512), std::int64_t{64});
  COMPARE(train::graphSeqLength(65, 512), std::int64_t{128});
  COMPARE(train::graphSeqLength(500, 512), std::int64_t{512});
  COMPARE(train::graphSeqLength(11, 12), std::int64_t{12});
  const train::DropoutKey key{7, 1234567, 3};
  const std::uint64_t whole = train::dropoutStream(key, 21, train::LoraModule::Up);
  COMPARE(whole >> 32, std::uint64_t{train::dropoutStreamHigh(key.step)});
  COMPARE(whole & 0xFFFFFFFFu,
          std::uint64_t{train::dropoutStreamLow(key, 21, train::LoraModule::Up)});
}

// Note [predicted rows in a graph]: a step's lm-head row count is one of eight per (rows, seq),
// and the rows a pass is given are checked against its targets before anything runs.
TEST_CASE(predictedRowCountsAndTheRowsGiven) {
  COMPARE(train::graphPredictedRows(3000, 4096), std::int64_t{3072});
  COMPARE(train::graphPredictedRows(3073, 4096), std::int64_t{3584});
  COMPARE(train::graphPredictedRows(0, 4096), std::int64_t{512});
  COMPARE(train::graphPredictedRows(3585, 4096), std::int64_t{0});  // every row
  COMPARE(train::graphPredictedRows(1000, 2048), std::int64_t{1024});
  COMPARE(train::graphPredictedRows(100, 256), std::int64_t{128});
  COMPARE(train::graphPredictedRows(129, 256), std::int64_t{0});
  COMPARE(train::graphPredictedRows(10, 24), std::int64_t{0});

  const std::vector<std::int32_t> targets{-100, 5, -100, 7, -100, -100};
  const auto check = [&](std::vector<std::int32_t> rows, std::vector<std::int32_t> rowTargets) {
    compute::checkLmHeadRows("test", {rows, rowTargets}, targets);
  };
  check({}, {});                            // every row
  check({1, 3, 0, 4}, {5, 7, -100, -100});  // predicted, then padding
  check({1, 3}, {5, 7});                    // no padding
  const auto fails = [&](std::vector<std::int32_t> rows, std::vector<std::int32_t> rowTargets,
                         const char* naming) {
    return throwsNaming<compute::ShapeError>([&] { check(rows, rowTargets); }, naming);
  };
  VERIFY(fails({1, 3, 0}, {5, 7}, "differ in number"));
  VERIFY(fails({1}, {5}, "hold 1 of the 2 predicted rows"));
  VERIFY(fails({3, 1}, {7, 5}, "out of order"));
  VERIFY(fails({1, 0, 3}, {5, -100, 7}, "after a padding row"));
  VERIFY(fails({1, 3, 0, 0}, {5, 7, -100, -100}, "twice"));
  VERIFY(fails({1, 3, 6}, {5, 7, -100}, "outside h"));
  VERIFY(fails({1, 3, 2}, {5, 7, 9}, "the target 9"));
}

// More shapes than kMaxShapes: the one used longest ago makes room, the others keep their inputs.
TEST_CASE(aShapeBeyondTheBudgetReplacesTheOneUsedLongestAgo) {
  auto backend = compute::createCpuBackend();
  train::StepGraphs graphs(*backend);
  const auto shape = [](std::int64_t seq) { return train::StepShape{1, seq, 1, false, 0}; };
  for (std::int64_t s = 1; s <= static_cast<std::int64_t>(train::StepGraphs::kMaxShapes); ++s) {
    graphs.ids(shape(s), 0)[0] = static_cast<std::int32_t>(s);
  }
  COMPARE(graphs.shapes(), train::StepGraphs::kMaxShapes);
  COMPARE(graphs.ids(shape(1), 0)[0], 1);  // used again: now shape 2 is the oldest
  graphs.ids(shape(100), 0)[0] = 100;
  COMPARE(graphs.shapes(), train::StepGraphs::kMaxShapes);
  COMPARE(graphs.ids(shape(1), 0)[0], 1);
  COMPARE(graphs.ids(shape(3), 0)[0], 3);
  COMPARE(graphs.ids(shape(100), 0)[0], 100);
  COMPARE(graphs.ids(shape(2), 0)[0], 0);  // replaced: a new entry, its inputs zeroed
}
