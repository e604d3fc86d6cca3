// test_lora.cpp — Philox known-answer vectors, PEFT-style initialisation, targets and keys.
#include "TestRunner.h"

#include <cmath>

#include "compute/Philox.h"  // defines: compute::philox4x32
#include "train/Lora.h"
#include "train/RandomDraws.h"

using namespace lorascope::train;

// Known-answer vectors of Random123's philox4x32-10 (kat_vectors).
TEST_CASE(philoxMatchesKnownAnswers) {
  const auto zero = lorascope::compute::philox4x32(0, 0, 0);
  COMPARE(zero.word[0], 0x6627e8d5u);
  COMPARE(zero.word[1], 0xe169c58du);
  COMPARE(zero.word[2], 0xbc57ac4cu);
  COMPARE(zero.word[3], 0x9b00dbd8u);
  const auto ones = lorascope::compute::philox4x32(~0ull, ~0ull, ~0ull);
  COMPARE(ones.word[0], 0x408f276du);
  COMPARE(ones.word[1], 0x41c83b0eu);
  COMPARE(ones.word[2], 0xa20bc7c6u);
  COMPARE(ones.word[3], 0x6d5451fdu);
}

TEST_CASE(uniformDrawsCoverTheUnitInterval) {
  double sum = 0;
  float lo = 1, hi = 0;
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = uniformFloat(42, 7, i);
    VERIFY(u >= 0.0f && u < 1.0f);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  VERIFY(std::fabs(sum / n - 0.5) < 0.005);
  VERIFY(lo < 1e-3f && hi > 0.999f);
  std::uint64_t index = 0;
  for (int i = 0; i < 1000; ++i) {
    VERIFY(uniformBelow(1, 2, index, 7) < 7);
  }
}

TEST_CASE(adapterIsInitialisedLikePeft) {
  LoraConfig config;
  config.rank = 4;
  const std::vector<LoraSite> sites = {{0, LoraModule::Q, 64, 64}, {0, LoraModule::Down, 172, 64}};
  const LoraAdapter adapter = createLoraAdapter(config, sites, 1234);
  COMPARE(adapter.weights.size(), std::size_t{2});
  const LoraWeights& down = adapter.weights[1];
  COMPARE(down.a.size(), std::size_t{4 * 172});
  COMPARE(down.b.size(), std::size_t{64 * 4});
  const float bound = 1.0f / std::sqrt(172.0f);
  float maxAbs = 0;
  for (float v : down.a)
    maxAbs = std::max(maxAbs, std::fabs(v));
  VERIFY(maxAbs <= bound && maxAbs > 0.9f * bound);
  for (float v : down.b)
    COMPARE(v, 0.0f);
  COMPARE(adapter.parameterCount(), std::int64_t{4 * 64 + 64 * 4 + 4 * 172 + 64 * 4});
}

TEST_CASE(initialisationDependsOnlyOnSeedAndSite) {
  LoraConfig config;
  const std::vector<LoraSite> both = {{0, LoraModule::Q, 32, 32}, {1, LoraModule::Q, 32, 32}};
  const std::vector<LoraSite> second = {{1, LoraModule::Q, 32, 32}};
  const LoraAdapter a = createLoraAdapter(config, both, 9);
  COMPARE(createLoraAdapter(config, second, 9).weights[0].a, a.weights[1].a);
  VERIFY(createLoraAdapter(config, second, 10).weights[0].a != a.weights[1].a);
  VERIFY(a.weights[0].a != a.weights[1].a);
}

TEST_CASE(targetsAndLayerFilterSelectSites) {
  LoraConfig config;
  config.targets = parseLoraTargets("q,v_proj,mlp.down_proj");
  config.layers = std::set<int>{1};
  std::vector<LoraSite> sites;
  for (int layer = 0; layer < 2; ++layer) {
    for (LoraModule m : kAllLoraModules)
      sites.push_back({layer, m, 8, 8});
  }
  const LoraAdapter adapter = createLoraAdapter(config, sites, 1);
  COMPARE(adapter.weights.size(), std::size_t{3});
  VERIFY(adapter.find(1, LoraModule::V) != nullptr);
  VERIFY(adapter.find(0, LoraModule::V) == nullptr);
  VERIFY(adapter.find(1, LoraModule::K) == nullptr);
  VERIFY_THROWS_EXCEPTION(std::invalid_argument, parseLoraTargets("q,attn"));
  COMPARE(parseLoraTargets("all").size(), std::size_t{7});
}

TEST_CASE(scalingFollowsLoraAndRsLora) {
  LoraConfig config;
  config.rank = 16;
  config.alpha = 32;
  COMPARE(config.scale(), 2.0);
  config.useRslora = true;
  COMPARE(config.scale(), 8.0);
  config.rank = 0;
  VERIFY_THROWS_EXCEPTION(std::invalid_argument, config.validate());
}

TEST_CASE(peftKeysMatchHuggingFaceNames) {
  COMPARE(peftKey({3, LoraModule::Up, 1, 1}, false),
          std::string("base_model.model.model.layers.3.mlp.up_proj.lora_B.weight"));
  COMPARE(peftKey({0, LoraModule::Q, 1, 1}, true),
          std::string("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
}
