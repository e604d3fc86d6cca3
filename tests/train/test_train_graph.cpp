// test_train_graph.cpp — the LoRA training graph on the tiny Llama/Qwen2 fixtures:
// gradients of every A and B against central finite differences (with and without dropout),
// activation checkpointing bit-identical to keeping every layer, the gradient independent of the
// micro-batch split, a document-packed batch equal to its examples run unpacked, a zero-B adapter
// reproducing the model's forward loss, cancellation, errors for inputs that do not fit, and
// optimizer steps on the backend equal to the host's.
#include "TestRunner.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "TrainExamples.h"
#include "TrainTestUtil.h"
#include "compute/Errors.h"
#include "model/Forward.h"
#include "train/Batching.h"

using namespace lorascope;
using namespace lorascope::test;
using train::LossSum;
using train::TrainGraph;

namespace {

struct Batch {
  std::int64_t batch = 0, seq = 0;
  std::vector<std::int32_t> ids, labels;
  model::ForwardInput input() const { return {batch, seq, ids, labels}; }
};

// The fixture's own (2, 12) ids and labels (some −100), with transformers' loss.
Batch fixtureBatch(const std::string& name, double* loss = nullptr) {
  std::ifstream in(kModelDataDir + "/" + name + "/expected.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  Batch b;
  for (const auto& row : doc["input_ids"]) {
    for (int id : row)
      b.ids.push_back(id);
    ++b.batch;
  }
  for (const auto& row : doc["labels"])
    for (int l : row)
      b.labels.push_back(l);
  b.seq = static_cast<std::int64_t>(b.ids.size()) / b.batch;
  if (loss)
    *loss = doc["loss"].get<double>();
  return b;
}

train::LoraConfig smallLora(double dropout = 0.0) {
  train::LoraConfig lora;
  lora.rank = 2;
  lora.alpha = 4.0;
  lora.dropout = dropout;
  return lora;
}

double meanLoss(const LossSum& s) {
  return s.sum / static_cast<double>(s.predictedTokens);
}

// Central differences of the mean loss at a few elements of every A and B. `loss` evaluates the
// current adapter. fp32 forward passes: eps 1e-2 keeps the rounding noise near 1e-4.
void checkAgainstFiniteDifferences(train::LoraAdapter& adapter, TrainGraph& graph,
                                   const std::vector<train::LoraGradient>& grads,
                                   const std::function<double()>& loss) {
  const float eps = 1e-2f;
  int checked = 0;
  double largestGradient = 0, largestDifference = 0;
  for (std::size_t s = 0; s < adapter.weights.size(); ++s) {
    for (int which = 0; which < 2; ++which) {
      std::vector<float>& values = which == 0 ? adapter.weights[s].a : adapter.weights[s].b;
      const std::vector<float>& g = which == 0 ? grads[s].a : grads[s].b;
      for (std::size_t i : {std::size_t{0}, values.size() / 2 + 1, values.size() - 1}) {
        const float saved = values[i];
        values[i] = saved + eps;
        graph.loadAdapter(adapter);
        const double up = loss();
        values[i] = saved - eps;
        graph.loadAdapter(adapter);
        const double down = loss();
        values[i] = saved;
        const double fd = (up - down) / (2.0 * eps);
        largestGradient = std::max(largestGradient, std::fabs(fd));
        largestDifference = std::max(largestDifference, std::fabs(fd - g[i]));
        VERIFY2(std::fabs(fd - g[i]) <= 1e-3 + 1e-2 * std::fabs(fd),
                train::peftKey(adapter.weights[s].site, which == 0) +
                    lstest::format(" [%zu]: backward %g, finite difference %g", i, g[i], fd));
        ++checked;
      }
    }
  }
  graph.loadAdapter(adapter);
  lstest::info("%d elements: largest gradient %.3g, largest difference to finite differences %.3g",
               checked, largestGradient, largestDifference);
  VERIFY(checked == static_cast<int>(adapter.weights.size()) * 6);
  VERIFY(largestGradient > 0.05);  // the check is not vacuous
}

}  // namespace

TEST_DATA(gradientsMatchFiniteDifferences) {
  lstest::addColumn<std::string>("fixture");
  lstest::newRow("llama (llama3 rope, untied)") << "llama_f32_legacy_rope";
  lstest::newRow("qwen2 (qkv bias, tied)") << "qwen2_f32_tied";
  lstest::newRow("qwen3 (q/k norms)") << "qwen3_f32";
  lstest::newRow("mistral (sliding window 5)") << "mistral_f32_sliding";
  lstest::newRow("gemma2 (soft-caps, sandwich norms, GeGLU)") << "gemma2_f32";
  lstest::newRow("gemma3 (q/k norms, local/global rope)") << "gemma3_f32";
}

TEST_CASE(gradientsMatchFiniteDifferences) {
  FETCH(std::string, fixture);
  const model::ModelFolder folder = openFixture(fixture);
  auto backend = compute::createCpuBackend();
  train::LoraAdapter adapter = adapterWithNonZeroB(folder.config(), smallLora(), 7);
  TrainGraph graph(*backend, folder.config(), folder.weights(), adapter);
  const Batch batch = fixtureBatch(fixture);
  const LossSum base = graph.forwardLoss(batch.input());
  graph.zeroGradients();
  const LossSum trained = graph.forwardBackward(batch.input(), 1.0f / base.predictedTokens, {});
  COMPARE(trained.predictedTokens, base.predictedTokens);
  VERIFY(trained.sum == base.sum);  // dropout off: the same forward, bit for bit
  checkAgainstFiniteDifferences(adapter, graph, graph.gradients(),
                                [&] { return meanLoss(graph.forwardLoss(batch.input())); });
}

TEST_CASE(dropoutGradientsMatchFiniteDifferences) {
  // The loss with dropout is a smooth function of A and B for a fixed mask (fixed key); its value
  // comes from forwardBackward with a zero gradient scale.
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  train::LoraAdapter adapter = adapterWithNonZeroB(folder.config(), smallLora(0.3), 8);
  TrainGraph graph(*backend, folder.config(), folder.weights(), adapter);
  const Batch batch = fixtureBatch("llama_f32_legacy_rope");
  const train::DropoutKey key{5, 3, 1};
  const LossSum noDropout = graph.forwardLoss(batch.input());
  graph.zeroGradients();
  const LossSum withDropout =
      graph.forwardBackward(batch.input(), 1.0f / noDropout.predictedTokens, key);
  VERIFY(withDropout.sum != noDropout.sum);  // the mask is applied
  const std::vector<train::LoraGradient> grads = graph.gradients();
  checkAgainstFiniteDifferences(adapter, graph, grads, [&] {
    const double value = meanLoss(graph.forwardBackward(batch.input(), 0.0f, key));
    return value;
  });
}

TEST_CASE(dropoutMaskIsKeyedAndScaled) {
  const train::DropoutKey key{77, 12, 3};
  const std::vector<float> mask = train::dropoutMask(key, 5, train::LoraModule::Up, 0.25, 4003);
  const std::uint64_t stream = train::dropoutStream(key, 5, train::LoraModule::Up);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    const float want = train::uniformFloat(77, stream, i) < 0.25f ? 0.0f : 1.0f / 0.75f;
    COMPARE(mask[i], want);
    dropped += mask[i] == 0.0f ? 1 : 0;
  }
  VERIFY(dropped > 900 && dropped < 1100);  // ≈ 25 % of 4003
  VERIFY(mask != train::dropoutMask({77, 12, 4}, 5, train::LoraModule::Up, 0.25, 4003));
  VERIFY(mask != train::dropoutMask({77, 13, 3}, 5, train::LoraModule::Up, 0.25, 4003));
  VERIFY(mask != train::dropoutMask(key, 5, train::LoraModule::Gate, 0.25, 4003));
  VERIFY((stream >> 63) == 1);  // apart from the LoRA-init streams (layer·16 + module)
}

TEST_CASE(checkpointingIsBitIdentical) {
  const model::ModelFolder folder = openFixture("qwen2_f32_tied");
  auto backend = compute::createCpuBackend();
  const train::LoraAdapter adapter = adapterWithNonZeroB(folder.config(), smallLora(0.2), 9);
  const Batch batch = fixtureBatch("qwen2_f32_tied");
  std::vector<std::vector<train::LoraGradient>> results;
  std::vector<double> losses;
  for (bool checkpointing : {false, true}) {
    TrainGraph graph(*backend, folder.config(), folder.weights(), adapter, {checkpointing});
    losses.push_back(graph.forwardBackward(batch.input(), 0.05f, {1, 2, 0}).sum);
    results.push_back(graph.gradients());
  }
  VERIFY(losses[0] == losses[1]);
  for (std::size_t s = 0; s < results[0].size(); ++s) {
    VERIFY(bitIdentical(results[0][s].a, results[1][s].a));
    VERIFY(bitIdentical(results[0][s].b, results[1][s].b));
  }
}

TEST_CASE(gradientDoesNotDependOnMicroBatchSplit) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  const train::LoraAdapter adapter = adapterWithNonZeroB(folder.config(), smallLora(), 10);
  const Batch both = fixtureBatch("llama_f32_legacy_rope");
  TrainGraph whole(*backend, folder.config(), folder.weights(), adapter);
  const LossSum all = whole.forwardBackward(both.input(), 1.0f / 19.0f, {});
  TrainGraph split(*backend, folder.config(), folder.weights(), adapter);
  LossSum parts;
  for (std::int64_t row = 0; row < both.batch; ++row) {
    Batch one{1, both.seq, {}, {}};
    one.ids.assign(both.ids.begin() + row * both.seq, both.ids.begin() + (row + 1) * both.seq);
    one.labels.assign(both.labels.begin() + row * both.seq,
                      both.labels.begin() + (row + 1) * both.seq);
    const LossSum s = split.forwardBackward(one.input(), 1.0f / 19.0f, {});
    parts.sum += s.sum;
    parts.predictedTokens += s.predictedTokens;
  }
  COMPARE(parts.predictedTokens, all.predictedTokens);
  VERIFY(std::fabs(parts.sum - all.sum) < 1e-5 * all.sum);
  const auto a = whole.gradients(), b = split.gradients();
  for (std::size_t s = 0; s < a.size(); ++s) {
    VERIFY(closeRelativeToMax(b[s].a, a[s].a, 1e-5, train::peftKey(adapter.weights[s].site, true)));
    VERIFY(
        closeRelativeToMax(b[s].b, a[s].b, 1e-5, train::peftKey(adapter.weights[s].site, false)));
  }
}

TEST_DATA(documentPackedBatchEqualsItsExamplesUnpacked) {
  lstest::addColumn<std::string>("fixture");
  lstest::newRow("llama (llama3 rope)") << "llama_f32_legacy_rope";
  lstest::newRow("qwen3 (q/k norms)") << "qwen3_f32";
  lstest::newRow("mistral (sliding window 5)") << "mistral_f32_sliding";
  lstest::newRow("gemma2 (soft-caps)") << "gemma2_f32";
}

// train/Batching.h, Note [document packing]: 12 examples packed into rows of 32 tokens, each
// example seeing only itself with positions from 0, give the loss and every LoRA gradient of the
// 12 examples as 12 padded rows; causal packing (where they see each other) does not.
TEST_CASE(documentPackedBatchEqualsItsExamplesUnpacked) {
  FETCH(std::string, fixture);
  const model::ModelFolder folder = openFixture(fixture);
  auto backend = compute::createCpuBackend();
  const train::LoraAdapter adapter = adapterWithNonZeroB(folder.config(), smallLora(), 11);
  const auto examples =
      syntheticExamples(12, 4, static_cast<std::uint64_t>(folder.config().vocabSize));
  struct Result {
    LossSum loss;
    std::vector<train::LoraGradient> grads;
    std::int64_t rows = 0;
  };
  const auto run = [&](train::Packing packing) {
    const train::SequenceSet set = train::buildSequences(examples, 32, packing);
    std::vector<const train::Sequence*> rows;
    for (const train::Sequence& s : set.sequences)
      rows.push_back(&s);
    const train::MicroBatch mb = train::collate(rows);
    TrainGraph graph(*backend, folder.config(), folder.weights(), adapter);
    Result r;
    r.loss = graph.forwardBackward({mb.batch, mb.seq, mb.ids, mb.labels, mb.documentStarts},
                                   1.0f / static_cast<float>(mb.predictedTokens), {});
    r.grads = graph.gradients();
    r.rows = mb.batch;
    return r;
  };
  const Result unpacked = run(train::Packing::Off);
  const Result documents = run(train::Packing::Documents);
  const Result causal = run(train::Packing::Causal);
  COMPARE(unpacked.rows, std::int64_t{12});
  VERIFY2(documents.rows < 8, lstest::format("%lld rows", static_cast<long long>(documents.rows)));
  COMPARE(documents.loss.predictedTokens, unpacked.loss.predictedTokens);
  VERIFY2(
      std::fabs(documents.loss.sum - unpacked.loss.sum) < 1e-5 * unpacked.loss.sum,
      lstest::format("loss sum %.9g packed, %.9g unpacked", documents.loss.sum, unpacked.loss.sum));
  for (std::size_t s = 0; s < unpacked.grads.size(); ++s) {
    VERIFY(closeRelativeToMax(documents.grads[s].a, unpacked.grads[s].a, 1e-5,
                              train::peftKey(adapter.weights[s].site, true)));
    VERIFY(closeRelativeToMax(documents.grads[s].b, unpacked.grads[s].b, 1e-5,
                              train::peftKey(adapter.weights[s].site, false)));
  }
  // Not vacuous: with causal packing the examples see each other and the loss moves by five
  // times the tolerance above or more (gemma2's tiny fixture: 1.5e-4 of it).
  COMPARE(causal.loss.predictedTokens, unpacked.loss.predictedTokens);
  VERIFY2(std::fabs(causal.loss.sum - unpacked.loss.sum) > 5e-5 * unpacked.loss.sum,
          lstest::format("causal %.9g, unpacked %.9g", causal.loss.sum, unpacked.loss.sum));
}

TEST_CASE(zeroBAdapterReproducesModelForward) {
  for (const char* name : {"llama_f32_legacy_rope", "qwen2_f32_tied", "llama_bf16_sharded_tied"}) {
    const model::ModelFolder folder = openFixture(name);
    auto backend = compute::createCpuBackend();
    const train::LoraAdapter fresh =
        train::createLoraAdapter(smallLora(), train::modelLoraSites(folder.config()), 3);
    TrainGraph graph(*backend, folder.config(), folder.weights(), fresh);
    double transformersLoss = 0;
    const Batch batch = fixtureBatch(name, &transformersLoss);
    const double ours = meanLoss(graph.forwardLoss(batch.input()));
    const model::ForwardResult plain =
        model::forward(*backend, folder.config(), folder.weights(), batch.input());
    VERIFY2(std::fabs(ours - *plain.loss) < 1e-6 * *plain.loss,
            lstest::format("%s: %g vs %g", name, ours, *plain.loss));
    VERIFY2(std::fabs(ours - transformersLoss) < 1e-4 * transformersLoss,
            lstest::format("%s: %g vs transformers %g", name, ours, transformersLoss));
  }
}

TEST_CASE(cancellationStopsBetweenOps) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  const train::LoraAdapter adapter = adapterWithNonZeroB(folder.config(), smallLora(), 11);
  TrainGraph graph(*backend, folder.config(), folder.weights(), adapter);
  const Batch batch = fixtureBatch("llama_f32_legacy_rope");
  std::atomic<bool> cancel{true};
  VERIFY(throwsNaming<train::TrainingCancelled>(
      [&] { graph.forwardBackward(batch.input(), 1.0f, {}, &cancel); }, "cancelled"));
  cancel = false;
  graph.zeroGradients();
  VERIFY(graph.forwardBackward(batch.input(), 1.0f, {}, &cancel).predictedTokens > 0);
}

TEST_CASE(rejectsInputsThatDoNotFit) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  train::LoraAdapter adapter = adapterWithNonZeroB(folder.config(), smallLora(), 12);
  Batch batch = fixtureBatch("llama_f32_legacy_rope");
  {
    train::LoraAdapter wrong = adapter;
    wrong.weights[0].site.inFeatures = 31;
    VERIFY(throwsNaming<std::invalid_argument>(
        [&] { TrainGraph g(*backend, folder.config(), folder.weights(), wrong); },
        "layer 0 q_proj is (31 → 32) but the model's is (32 → 32)"));
  }
  TrainGraph graph(*backend, folder.config(), folder.weights(), adapter);
  batch.ids[5] = 300;
  VERIFY(throwsNaming<compute::ShapeError>([&] { graph.forwardBackward(batch.input(), 1.0f, {}); },
                                           "300"));
  batch.ids[5] = 1;
  batch.labels.clear();
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { graph.forwardBackward(batch.input(), 1.0f, {}); }, "no labels"));
  batch.labels.assign(batch.ids.size(), 1);
  batch.labels[3] = 999;
  VERIFY(throwsNaming<compute::ShapeError>([&] { graph.forwardBackward(batch.input(), 1.0f, {}); },
                                           "target 999"));
}

// Three steps with dropout, clipping and weight decay run on the backend (clipGradients,
// adamwStep, masks drawn by the backend) leave the bits the trainer's earlier host round trip
// left: gradients downloaded, clipped by train::clipGradNorm and updated by train::adamwStep on
// the host, the adapter uploaded again.
TEST_CASE(backendStepEqualsTheHostRoundTrip) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  train::LoraAdapter hostAdapter = adapterWithNonZeroB(folder.config(), smallLora(0.3), 8);
  std::vector<train::LoraMoments> hostMoments = train::zeroMoments(hostAdapter);
  TrainGraph onHost(*backend, folder.config(), folder.weights(), hostAdapter);
  TrainGraph onBackend(*backend, folder.config(), folder.weights(), hostAdapter);
  const Batch batch = fixtureBatch("llama_f32_legacy_rope");
  train::AdamWConfig adamw;
  adamw.weightDecay = 0.01;
  constexpr double kMaxNorm = 1e-3;  // below every step's norm: each step is clipped
  for (std::int64_t step = 0; step < 3; ++step) {
    const train::DropoutKey key{5, step, 0};
    onHost.zeroGradients();
    onBackend.zeroGradients();
    const LossSum hostLoss = onHost.forwardBackward(batch.input(), 0.05f, key);
    VERIFY(onBackend.forwardBackward(batch.input(), 0.05f, key).sum == hostLoss.sum);
    std::vector<train::LoraGradient> grads = onHost.gradients();
    std::vector<std::span<float>> views;
    for (train::LoraGradient& g : grads) {
      views.emplace_back(g.a);
      views.emplace_back(g.b);
    }
    const double hostNorm = train::clipGradNorm(views, kMaxNorm);
    VERIFY(hostNorm > kMaxNorm);
    VERIFY(onBackend.clipGradients(kMaxNorm) == hostNorm);
    std::vector<train::AdamWParam> params;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      train::LoraWeights& w = hostAdapter.weights[i];
      train::LoraMoments& m = hostMoments[i];
      params.push_back({w.a, grads[i].a, m.firstA, m.secondA});
      params.push_back({w.b, grads[i].b, m.firstB, m.secondB});
    }
    train::adamwStep(adamw, 1e-2, step + 1, params);
    onHost.loadAdapter(hostAdapter);
    onBackend.adamwStep(adamw, 1e-2, step + 1);
  }
  train::LoraAdapter adapter = hostAdapter;
  std::vector<train::LoraMoments> moments;
  onBackend.downloadAdapter(adapter);
  onBackend.downloadMoments(moments);
  COMPARE(moments.size(), hostMoments.size());
  for (std::size_t i = 0; i < moments.size(); ++i) {
    VERIFY(bitIdentical(adapter.weights[i].a, hostAdapter.weights[i].a));
    VERIFY(bitIdentical(adapter.weights[i].b, hostAdapter.weights[i].b));
    VERIFY(bitIdentical(moments[i].firstA, hostMoments[i].firstA));
    VERIFY(bitIdentical(moments[i].secondA, hostMoments[i].secondA));
    VERIFY(bitIdentical(moments[i].firstB, hostMoments[i].firstB));
    VERIFY(bitIdentical(moments[i].secondB, hostMoments[i].secondB));
  }
}
