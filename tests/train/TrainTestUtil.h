// TrainTestUtil.h — shared helpers of the trainer tests: the tiny reference model folders, the
// small run most of them train, an adapter whose B is non-zero (so every LoRA gradient is
// informative), and comparisons.
#pragma once

#include "TestRunner.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "TestPaths.h"
#include "model/ModelFolder.h"
#include "train/Lora.h"
#include "train/RandomDraws.h"
#include "train/TrainGraph.h"  // defines: modelLoraSites
#include "train/TrainLoop.h"   // defines: TrainConfig

namespace lorascope::test {

inline const std::string kModelDataDir = lstest::sourcePath("tests/model/data");

inline model::ModelFolder openFixture(const std::string& name) {
  return model::ModelFolder::open(kModelDataDir + "/" + name);
}

// The small run: LoRA rank 4 (alpha 8, dropout 0.1), AdamW at 1e-2, 2 x 2 sequences of up to 12
// tokens a step, 6 steps, seed 1234.
inline train::TrainConfig smallTrainConfig() {
  train::TrainConfig c{.lora = {},
                       .adamw = {.learningRate = 1e-2},
                       .maxSteps = 6,
                       .microBatchSize = 2,
                       .gradAccumulation = 2,
                       .maxSeqLen = 12,
                       .seed = 1234};
  c.lora.rank = 4;
  c.lora.alpha = 8;
  c.lora.dropout = 0.1;
  return c;
}

// createLoraAdapter's A, and B drawn uniform(−0.2, 0.2) from Philox stream 999 of `seed`.
inline train::LoraAdapter adapterWithNonZeroB(const model::ModelConfig& config,
                                              const train::LoraConfig& lora, std::uint64_t seed) {
  train::LoraAdapter adapter = train::createLoraAdapter(lora, train::modelLoraSites(config), seed);
  std::uint64_t i = 0;
  for (train::LoraWeights& w : adapter.weights) {
    for (float& b : w.b)
      b = 0.4f * train::uniformFloat(seed, 999, i++) - 0.2f;
  }
  return adapter;
}

inline bool bitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// max |got − want| ≤ tolerance · max |want| (over the whole tensor).
inline bool closeRelativeToMax(const std::vector<float>& got, const std::vector<float>& want,
                               double tolerance, const std::string& what) {
  double worst = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(double{want[i]}));
    worst = std::max(worst, std::fabs(double{got[i]} - want[i]));
  }
  if (got.size() != want.size() || worst > tolerance * scale) {
    lstest::warning("%s: max difference %g against max magnitude %g (tolerance %g)", what.c_str(),
                    worst, scale, tolerance);
    return false;
  }
  return true;
}

template <typename E>
bool throwsNaming(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
  } catch (const E& e) {
    if (std::string(e.what()).find(fragment) != std::string::npos)
      return true;
    lstest::warning("message \"%s\" lacks \"%s\"", e.what(), fragment.c_str());
    return false;
  }
  lstest::warning("nothing thrown");
  return false;
}

}  // namespace lorascope::test
