// test_group_training.cpp — the trainer's data parallelism on CPU backends, one thread per rank
// over the in-process collective: a group of 2 (and 3, where one rank gets no micro-batch of a
// step) follows one rank's loss curve with dropout on, every rank ends with the same adapter,
// a group continues a one-rank run's state (and so does a group of another size), a group
// resumed on the same size continues bit for bit, and a rank's failure ends its peers' step with
// an error naming it.
#include "TestRunner.h"

#include <functional>
#include <thread>

#include "TrainExamples.h"
#include "TrainTestUtil.h"
#include "group/InProcessCollective.h"
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;
using train::StepMetrics;
using train::TrainConfig;
using train::TrainerState;
using train::TrainLoop;

namespace {

TrainConfig groupConfig() {
  TrainConfig c;
  c.lora.rank = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0.1;  // the masks must follow the micro-batch, not the rank
  c.adamw.learningRate = 1e-2;
  c.warmupSteps = 1;
  c.microBatchSize = 2;
  c.gradAccumulation = 4;  // 4 micro-batches a step: 2 per rank of 2, 2/1/1 over 3 ranks
  c.maxSteps = 0;
  c.epochs = 2;  // 18 sequences / 8: 3 steps an epoch, the last of 2 sequences (one micro-batch)
  c.maxSeqLen = 12;
  c.seed = 77;
  return c;
}

struct RankRun {
  std::vector<StepMetrics> steps;
  TrainerState state;
  std::string error;
};

// `size` ranks of the same loop, each on its own CPU backend and thread; `steps` steps (0: to
// the end), from `resume` when given. `beforeStep(rank, step)` may act on the group.
std::vector<RankRun> runGroup(int size, std::int64_t steps = 0,
                              const std::optional<TrainerState>& resume = std::nullopt,
                              const std::function<void(group::Collective&, int)>& beforeStep = {}) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto ranks = group::makeInProcessGroup(size, 60'000);
  std::vector<RankRun> runs(static_cast<std::size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      RankRun& run = runs[static_cast<std::size_t>(r)];
      try {
        auto backend = compute::createCpuBackend();
        TrainLoop loop(*backend, folder.config(), folder.weights(), syntheticExamples(18, 5),
                       groupConfig(), resume);
        loop.joinGroup(*ranks[static_cast<std::size_t>(r)]);
        for (int i = 0; !loop.finished() && (steps == 0 || i < steps); ++i) {
          if (beforeStep) {
            beforeStep(*ranks[static_cast<std::size_t>(r)], i);
          }
          run.steps.push_back(loop.step());
        }
        run.state = loop.state();
      } catch (const std::exception& e) {
        run.error = e.what();
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  return runs;
}

RankRun runAlone(std::int64_t steps = 0) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainLoop loop(*backend, folder.config(), folder.weights(), syntheticExamples(18, 5),
                 groupConfig());
  RankRun run;
  for (int i = 0; !loop.finished() && (steps == 0 || i < steps); ++i) {
    run.steps.push_back(loop.step());
  }
  run.state = loop.state();
  return run;
}

// The same curve from step `offset` on: losses within 1e-6 relative (the sum over ranks adds in
// another order), the same tokens and positions (the group's, on every rank).
bool sameCurve(const std::vector<StepMetrics>& got, const std::vector<StepMetrics>& want,
               std::size_t offset = 0) {
  if (got.empty() || got.size() + offset > want.size()) {
    lstest::warning("%zu steps after %zu, of %zu", got.size(), offset, want.size());
    return false;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const StepMetrics& a = got[i];
    const StepMetrics& b = want[i + offset];
    if (a.step != b.step || std::fabs(a.loss - b.loss) > 1e-6 * std::fabs(b.loss) ||
        std::fabs(a.gradNorm - b.gradNorm) > 1e-5 * b.gradNorm || a.tokens != b.tokens ||
        a.positions != b.positions || a.accumulation != b.accumulation) {
      lstest::warning("step %lld: loss %.9g vs %.9g, norm %.9g vs %.9g, tokens %lld vs %lld",
                      static_cast<long long>(a.step), a.loss, b.loss, a.gradNorm, b.gradNorm,
                      static_cast<long long>(a.tokens), static_cast<long long>(b.tokens));
      return false;
    }
  }
  return true;
}

bool closeAdapters(const train::LoraAdapter& got, const train::LoraAdapter& want) {
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    if (!closeRelativeToMax(got.weights[i].a, want.weights[i].a, 1e-5, "A") ||
        !closeRelativeToMax(got.weights[i].b, want.weights[i].b, 1e-5, "B")) {
      return false;
    }
  }
  return true;
}

bool identicalAdapters(const train::LoraAdapter& a, const train::LoraAdapter& b) {
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    if (!bitIdentical(a.weights[i].a, b.weights[i].a) ||
        !bitIdentical(a.weights[i].b, b.weights[i].b)) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE(twoRanksFollowOneRanksCurve) {
  const RankRun alone = runAlone();
  COMPARE(alone.steps.size(), std::size_t{6});
  const std::vector<RankRun> ranks = runGroup(2);
  for (const RankRun& r : ranks) {
    COMPARE(r.error, std::string());
    VERIFY(sameCurve(r.steps, alone.steps));
  }
  COMPARE(ranks[0].steps[0].accumulation, std::int64_t{4});  // the step's, not the rank's share
  VERIFY(closeAdapters(ranks[0].state.adapter, alone.state.adapter));
  VERIFY(identicalAdapters(ranks[0].state.adapter, ranks[1].state.adapter));
  COMPARE(ranks[1].state.dataCursor, alone.state.dataCursor);
}

// Three ranks: 4 micro-batches split 1/1/2, and the epoch's last step of one micro-batch leaves
// two ranks with nothing to compute (they add zeros).
TEST_CASE(threeRanksFollowTheCurveWithIdleRanks) {
  const RankRun alone = runAlone();
  const std::vector<RankRun> ranks = runGroup(3);
  for (const RankRun& r : ranks) {
    COMPARE(r.error, std::string());
    VERIFY(sameCurve(r.steps, alone.steps));
  }
  VERIFY(identicalAdapters(ranks[0].state.adapter, ranks[2].state.adapter));
}

// A group resumes a one-rank state, and a group of another size resumes a group's: the rank count
// may change on a restart (a lost GPU, the CPU rung) without changing the curve.
TEST_CASE(aGroupOfAnySizeContinuesTheState) {
  const RankRun alone = runAlone();
  const RankRun firstHalf = runAlone(2);
  const std::vector<RankRun> pair = runGroup(2, 2, firstHalf.state);
  COMPARE(pair[0].error, std::string());
  VERIFY(sameCurve(pair[0].steps, alone.steps, 2));
  const std::vector<RankRun> trio = runGroup(3, 0, pair[1].state);
  COMPARE(trio[0].error, std::string());
  VERIFY(sameCurve(trio[2].steps, alone.steps, 4));
  VERIFY(closeAdapters(trio[1].state.adapter, alone.state.adapter));
}

// A group stopped after 3 steps and resumed from its state on the same number of ranks continues
// bit for bit: the same shares, the same sums in the same order.
TEST_CASE(resumeOnTheSameGroupSizeIsBitIdentical) {
  const std::vector<RankRun> uninterrupted = runGroup(2);
  const std::vector<RankRun> stopped = runGroup(2, 3);
  COMPARE(stopped[0].state.step, std::int64_t{3});
  const std::vector<RankRun> resumed = runGroup(2, 0, stopped[0].state);
  COMPARE(resumed[0].error, std::string());
  COMPARE(resumed[0].steps.size(), uninterrupted[0].steps.size() - 3);
  for (std::size_t i = 0; i < resumed[0].steps.size(); ++i) {
    VERIFY(resumed[0].steps[i].loss == uninterrupted[0].steps[i + 3].loss);
    VERIFY(resumed[1].steps[i].gradNorm == uninterrupted[1].steps[i + 3].gradNorm);
  }
  VERIFY(identicalAdapters(resumed[1].state.adapter, uninterrupted[1].state.adapter));
}

// Rank 1 fails before its third step: rank 0's third step ends with an error naming it, and
// neither rank records the step.
TEST_CASE(aRanksFailureEndsThePeersStep) {
  const std::vector<RankRun> ranks =
      runGroup(2, 0, std::nullopt, [](group::Collective& c, int step) {
        if (c.rank() == 1 && step == 2) {
          group::failInProcessRank(c, 1, "injected out of memory");
          throw std::runtime_error("rank 1 stopped");
        }
      });
  VERIFY2(ranks[0].error.find("rank 1 failed: injected out of memory") != std::string::npos,
          ranks[0].error.c_str());
  COMPARE(ranks[0].steps.size(), std::size_t{2});
  COMPARE(ranks[1].steps.size(), std::size_t{2});
}
