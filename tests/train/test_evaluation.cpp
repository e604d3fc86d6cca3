// test_evaluation.cpp — the validation loss (train/Evaluation.h) on the tiny Llama fixture: the
// seeded held-out split, the held-out loss against the plain forward, a run evaluated between
// its steps trains bit for bit as one that is not, early stopping's rule, and the eval lines of
// metrics.jsonl, trainer_state.json and the TensorBoard events.
#include "TestRunner.h"

#include <set>
#include <utility>

#include "TempDir.h"
#include "TrainExamples.h"
#include "TrainTestUtil.h"
#include "train/Evaluation.h"
#include "train/HfLogs.h"
#include "train/RunDirectory.h"
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;
using train::EvalMetrics;
using train::TrainConfig;
using train::TrainLoop;

namespace {

EvalMetrics evalAt(std::int64_t step, double loss) {
  EvalMetrics e;
  e.step = step;
  e.loss = loss;
  return e;
}

}  // namespace

TEST_CASE(splitIsSeededDisjointAndComplete) {
  const auto all = syntheticExamples(40, 3);
  auto trainA = all, trainB = all, trainC = all;
  const auto heldA = train::splitForEvaluation(trainA, 0.05, 7);
  const auto heldB = train::splitForEvaluation(trainB, 0.05, 7);
  const auto heldC = train::splitForEvaluation(trainC, 0.05, 8);
  COMPARE(heldA.size(), std::size_t{2});  // ⌈0.05 × 40⌉
  COMPARE(trainA.size(), std::size_t{38});
  VERIFY(heldA.size() == heldB.size() && heldA[0].ids == heldB[0].ids &&
         heldA[1].ids == heldB[1].ids);  // the same seed holds out the same examples
  VERIFY(heldA[0].ids != heldC[0].ids || heldA[1].ids != heldC[1].ids);
  std::multiset<std::vector<std::int32_t>> seen;
  for (const std::vector<train::TokenizedExample>* part : {&std::as_const(trainA), &heldA})
    for (const auto& e : *part)
      seen.insert(e.ids);
  std::multiset<std::vector<std::int32_t>> original;
  for (const auto& e : all)
    original.insert(e.ids);
  VERIFY(seen == original);  // nothing lost, nothing doubled
}

TEST_CASE(splitRejectsWhatCannotBeSplit) {
  auto one = syntheticExamples(1, 3);
  VERIFY(throwsNaming<std::invalid_argument>([&] { train::splitForEvaluation(one, 0.1, 1); },
                                             "at least 2 examples"));
  auto some = syntheticExamples(5, 3);
  VERIFY(throwsNaming<std::invalid_argument>([&] { train::splitForEvaluation(some, 1.0, 1); },
                                             "fraction in (0, 1)"));
  auto two = syntheticExamples(2, 3);
  COMPARE(train::splitForEvaluation(two, 0.9, 1).size(), std::size_t{1});  // one left to train
  COMPARE(two.size(), std::size_t{1});
}

TEST_CASE(heldOutLossIsTheForwardLoss) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  const auto held = syntheticExamples(5, 9);
  const auto sequences = train::evaluationSequences(held, 12);
  TrainLoop loop(*backend, folder.config(), folder.weights(), syntheticExamples(8, 1),
                 smallTrainConfig());
  const EvalMetrics eval = loop.evaluate(sequences);
  // A fresh adapter (B = 0) leaves the model as it is: the held-out loss is the base model's,
  // token-weighted over the whole set.
  double sum = 0.0;
  std::int64_t tokens = 0;
  for (const train::Sequence& s : sequences) {
    const auto result =
        model::forward(*backend, folder.config(), folder.weights(),
                       {1, static_cast<std::int64_t>(s.ids.size()), s.ids, s.labels});
    sum += *result.loss * static_cast<double>(result.predictedTokens);
    tokens += result.predictedTokens;
  }
  COMPARE(eval.predictedTokens, tokens);
  COMPARE(eval.sequences, static_cast<std::int64_t>(sequences.size()));
  COMPARE(eval.batches, std::int64_t{3});  // 5 sequences in micro-batches of 2
  VERIFY(std::fabs(eval.loss - sum / static_cast<double>(tokens)) < 1e-5);
}

TEST_CASE(evaluatingDoesNotChangeTraining) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  const auto sequences = train::evaluationSequences(syntheticExamples(5, 9), 12);
  TrainLoop plain(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1),
                  smallTrainConfig());
  TrainLoop evaluated(*backend, folder.config(), folder.weights(), syntheticExamples(10, 1),
                      smallTrainConfig());
  std::vector<double> evalLosses;
  while (!plain.finished()) {
    const auto a = plain.step();
    evalLosses.push_back(evaluated.evaluate(sequences).loss);
    const auto b = evaluated.step();
    VERIFY(a.loss == b.loss && a.gradNorm == b.gradNorm);  // bit for bit
  }
  const auto& pa = plain.state().adapter.weights;
  const auto& pb = evaluated.state().adapter.weights;
  for (std::size_t i = 0; i < pa.size(); ++i)
    VERIFY(bitIdentical(pa[i].a, pb[i].a) && bitIdentical(pa[i].b, pb[i].b));
  VERIFY(evalLosses.back() != evalLosses.front());  // the adapter it reads did change
}

TEST_CASE(earlyStoppingCountsEvaluationsWithoutImprovement) {
  train::EarlyStopping stopping(2);
  VERIFY(!stopping.observe(evalAt(10, 2.0)));
  VERIFY(!stopping.observe(evalAt(20, 1.5)));
  VERIFY(!stopping.observe(evalAt(30, 1.5)));  // equal is not better
  COMPARE(stopping.withoutImprovement(), std::int64_t{1});
  VERIFY(stopping.observe(evalAt(40, 1.7)));
  COMPARE(stopping.best()->step, std::int64_t{20});
  train::EarlyStopping off(0);
  for (int i = 0; i < 10; ++i)
    VERIFY(!off.observe(evalAt(i, 3.0)));
}

TEST_CASE(evalLinesReachEveryLog) {
  lstest::TempDir tmp;
  const auto run = train::RunDirectory::create(
      tmp.path() / "run", {{"model_path", kModelDataDir + "/llama_f32_legacy_rope"},
                           {"training", {{"eval", {{"every", 2}}}}}});
  train::StepMetrics one;
  one.step = 1;
  one.loss = 2.5;
  train::StepMetrics two = one;
  two.step = 2;
  two.eval = evalAt(2, 2.25);
  two.eval->predictedTokens = 40;
  two.eval->sequences = 5;
  two.eval->batches = 3;
  two.eval->seconds = 0.5;
  run.appendMetrics(one);
  run.appendMetrics(two);
  const auto read = runs::readStepRecords(run.dir() / train::kMetricsFile);
  COMPARE(read.size(), std::size_t{2});
  VERIFY(!read[0].eval);
  VERIFY(read[1].eval && read[1].eval->loss == 2.25 && read[1].eval->predictedTokens == 40);
  train::TrainerState state;
  state.step = 2;
  const nlohmann::json hf = train::hfTrainerState(read, state, run.config());
  COMPARE(hf["log_history"].size(), std::size_t{3});  // two steps and one evaluation
  COMPARE(hf["log_history"][2]["eval_loss"].get<double>(), 2.25);
  COMPARE(hf["log_history"][2]["eval_samples_per_second"].get<double>(), 10.0);
  COMPARE(hf["log_history"][2]["eval_steps_per_second"].get<double>(), 6.0);
  COMPARE(hf["best_metric"].get<double>(), 2.25);
  COMPARE(hf["eval_steps"].get<int>(), 2);
  bool tagged = false;
  for (const auto& [tag, value] : train::tfEventOf(read[1]).scalars)
    tagged = tagged || (tag == "eval/loss" && value == 2.25f);
  VERIFY(tagged);
}
