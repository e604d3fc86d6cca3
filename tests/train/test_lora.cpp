// test_lora.cpp — Philox known-answer vectors, PEFT-style initialisation, targets and keys.
#include <QtTest>

#include <cmath>

#include "train/Lora.h"
#include "train/Philox.h"

using namespace lorascope::train;

class TestLora : public QObject {
  Q_OBJECT

 private slots:
  // Known-answer vectors of Random123's philox4x32-10 (kat_vectors).
  void philoxMatchesKnownAnswers() {
    const auto zero = philox4x32(0, 0, 0);
    QCOMPARE(zero[0], 0x6627e8d5u);
    QCOMPARE(zero[1], 0xe169c58du);
    QCOMPARE(zero[2], 0xbc57ac4cu);
    QCOMPARE(zero[3], 0x9b00dbd8u);
    const auto ones = philox4x32(~0ull, ~0ull, ~0ull);
    QCOMPARE(ones[0], 0x408f276du);
    QCOMPARE(ones[1], 0x41c83b0eu);
    QCOMPARE(ones[2], 0xa20bc7c6u);
    QCOMPARE(ones[3], 0x6d5451fdu);
  }

  void uniformDrawsCoverTheUnitInterval() {
    double sum = 0;
    float lo = 1, hi = 0;
    constexpr int n = 100000;
    for (int i = 0; i < n; ++i) {
      const float u = uniformFloat(42, 7, i);
      QVERIFY(u >= 0.0f && u < 1.0f);
      sum += u;
      lo = std::min(lo, u);
      hi = std::max(hi, u);
    }
    QVERIFY(std::fabs(sum / n - 0.5) < 0.005);
    QVERIFY(lo < 1e-3f && hi > 0.999f);
    std::uint64_t index = 0;
    for (int i = 0; i < 1000; ++i) {
      QVERIFY(uniformBelow(1, 2, index, 7) < 7);
    }
  }

  void adapterIsInitialisedLikePeft() {
    LoraConfig config;
    config.rank = 4;
    const std::vector<LoraSite> sites = {{0, LoraModule::Q, 64, 64},
                                         {0, LoraModule::Down, 172, 64}};
    const LoraAdapter adapter = createLoraAdapter(config, sites, 1234);
    QCOMPARE(adapter.weights.size(), std::size_t{2});
    const LoraWeights& down = adapter.weights[1];
    QCOMPARE(down.a.size(), std::size_t{4 * 172});
    QCOMPARE(down.b.size(), std::size_t{64 * 4});
    const float bound = 1.0f / std::sqrt(172.0f);
    float maxAbs = 0;
    for (float v : down.a)
      maxAbs = std::max(maxAbs, std::fabs(v));
    QVERIFY(maxAbs <= bound && maxAbs > 0.9f * bound);
    for (float v : down.b)
      QCOMPARE(v, 0.0f);
    QCOMPARE(adapter.parameterCount(), std::int64_t{4 * 64 + 64 * 4 + 4 * 172 + 64 * 4});
  }

  void initialisationDependsOnlyOnSeedAndSite() {
    LoraConfig config;
    const std::vector<LoraSite> both = {{0, LoraModule::Q, 32, 32}, {1, LoraModule::Q, 32, 32}};
    const std::vector<LoraSite> second = {{1, LoraModule::Q, 32, 32}};
    const LoraAdapter a = createLoraAdapter(config, both, 9);
    QCOMPARE(createLoraAdapter(config, second, 9).weights[0].a, a.weights[1].a);
    QVERIFY(createLoraAdapter(config, second, 10).weights[0].a != a.weights[1].a);
    QVERIFY(a.weights[0].a != a.weights[1].a);
  }

  void targetsAndLayerFilterSelectSites() {
    LoraConfig config;
    config.targets = parseLoraTargets("q,v_proj,mlp.down_proj");
    config.layers = std::set<int>{1};
    std::vector<LoraSite> sites;
    for (int layer = 0; layer < 2; ++layer) {
      for (LoraModule m : kAllLoraModules)
        sites.push_back({layer, m, 8, 8});
    }
    const LoraAdapter adapter = createLoraAdapter(config, sites, 1);
    QCOMPARE(adapter.weights.size(), std::size_t{3});
    QVERIFY(adapter.find(1, LoraModule::V) != nullptr);
    QVERIFY(adapter.find(0, LoraModule::V) == nullptr);
    QVERIFY(adapter.find(1, LoraModule::K) == nullptr);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseLoraTargets("q,attn"));
    QCOMPARE(parseLoraTargets("all").size(), std::size_t{7});
  }

  void scalingFollowsLoraAndRsLora() {
    LoraConfig config;
    config.rank = 16;
    config.alpha = 32;
    QCOMPARE(config.scale(), 2.0);
    config.useRslora = true;
    QCOMPARE(config.scale(), 8.0);
    config.rank = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, config.validate());
  }

  void peftKeysMatchHuggingFaceNames() {
    QCOMPARE(peftKey({3, LoraModule::Up, 1, 1}, false),
             std::string("base_model.model.model.layers.3.mlp.up_proj.lora_B.weight"));
    QCOMPARE(peftKey({0, LoraModule::Q, 1, 1}, true),
             std::string("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
  }
};

QTEST_APPLESS_MAIN(TestLora)
#include "test_lora.moc"
