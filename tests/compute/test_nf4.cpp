// test_nf4.cpp — NF4 double quantisation on the host (compute/Nf4.cpp) and the CPU backend's
// NF4 ops: the code tables, the storage layout, quantise → dequantise error bounds, zero blocks,
// bad weights, matmul and dequantize through the Backend interface, and every code, scale and
// sampled weight against tests/compute/data/nf4_reference.json (scripts/reference/nf4.py,
// PyTorch from QLoRA's published tables, made on the GPU machine by scripts/gpu-check.sh qlora).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "OpTestUtil.h"
#include "TestPaths.h"
#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/Errors.h"
#include "compute/Nf4.h"

using namespace lorascope::compute;

namespace {

// n weights drawn from N(0, stddev²) with a fixed seed.
std::vector<float> normalWeights(std::size_t count, float stddev, unsigned seed) {
  return lorascope::test::randomValues(count, seed, stddev);
}

std::vector<std::byte> quantized(const std::vector<float>& w) {
  std::vector<std::byte> packed(nf4::storageBytes(static_cast<std::int64_t>(w.size())));
  nf4::quantize(w.data(), DType::F32, static_cast<std::int64_t>(w.size()), packed.data());
  return packed;
}

std::vector<float> dequantized(const std::vector<std::byte>& packed, std::size_t count) {
  std::vector<float> out(count);
  nf4::dequantize(packed.data(), 0, static_cast<std::int64_t>(count), out.data());
  return out;
}

// scripts/reference/nf4.py's weights: per element the sum of four 16-bit draws of a 64-bit LCG,
// times 2^-17, times 2^(block % 5 − 2); block 3 all zero, block 5 one non-zero weight. Every
// value is an integer times a power of two, so both sides start from the same f32 values.
std::vector<float> referenceWeights(std::int64_t count, std::uint64_t seed) {
  std::uint64_t state = seed;
  std::vector<float> w(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t total = 0;
    for (int draw = 0; draw < 4; ++draw) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      total += static_cast<std::int64_t>((state >> 33) & 0xFFFF) - 32768;
    }
    const std::int64_t block = i / 64;
    if (block == 3 || (block == 5 && i % 64 != 10)) {
      total = 0;
    }
    w[static_cast<std::size_t>(i)] =
        std::ldexp(static_cast<float>(total), static_cast<int>(-17 + block % 5 - 2));
  }
  return w;
}

}  // namespace

class TestNf4 : public QObject {
  Q_OBJECT

 private slots:
  void codeTablesAreAscendingAndSpanMinusOneToOne() {
    QCOMPARE(nf4::kCode.front(), -1.0f);
    QCOMPARE(nf4::kCode[7], 0.0f);
    QCOMPARE(nf4::kCode.back(), 1.0f);
    QVERIFY(std::is_sorted(nf4::kCode.begin(), nf4::kCode.end()));
    const auto& dynamic = nf4::dynamicCode();
    QVERIFY(std::is_sorted(dynamic.begin(), dynamic.end()));
    QCOMPARE(dynamic.back(), 1.0f);
    QCOMPARE(std::count(dynamic.begin(), dynamic.end(), 0.0f), std::ptrdiff_t{1});
    // 127 negative values, 0, then 127 positive ones and 1. The smallest magnitude is 10^-6 times
    // the midpoint of linspace(0.1, 1, 2)'s two values.
    QCOMPARE(dynamic[127], 0.0f);
    QVERIFY(std::abs(dynamic[128] - 0.55e-6f) < 1e-12f);
    // The most negative is −(0.9859375 + 1) / 2 (the last midpoint of linspace(0.1, 1, 65)).
    QVERIFY(std::abs(dynamic[0] + 0.99296875f) < 1e-6f);
  }

  void storageIsAHeaderAndWholeGroupsOfSixteenThousandWeights() {
    QCOMPARE(nf4::storageBytes(0), std::size_t{16});
    QCOMPARE(nf4::storageBytes(1), std::size_t{16 + 8452});
    QCOMPARE(nf4::storageBytes(16384), std::size_t{16 + 8452});
    QCOMPARE(nf4::storageBytes(16385), std::size_t{16 + 2 * 8452});
    QCOMPARE(storageBytes(DType::NF4, 4096 * 4096), std::size_t{16 + 1024 * 8452});
    QVERIFY_THROWS_EXCEPTION(ShapeError, dtypeBytes(DType::NF4));
  }

  void nearestIndexBreaksTiesTowardTheLowerValue() {
    const float table[] = {-1.0f, 0.0f, 1.0f};
    QCOMPARE(nf4::nearestIndex(table, 3, -0.5f), 0);
    QCOMPARE(nf4::nearestIndex(table, 3, 0.5f), 1);
    QCOMPARE(nf4::nearestIndex(table, 3, 0.51f), 2);
    QCOMPARE(nf4::nearestIndex(table, 3, -7.0f), 0);
    QCOMPARE(nf4::nearestIndex(table, 3, 7.0f), 2);
  }

  void dequantizedWeightsAreWithinHalfACodeStepOfTheBlockScale() {
    // Two groups and a ragged end, normal weights as a trained projection's.
    const std::vector<float> w = normalWeights(2 * 16384 + 1000 + 3, 0.02f, 7);
    const std::vector<std::byte> packed = quantized(w);
    const std::vector<float> back = dequantized(packed, w.size());
    double largestGap = 0.0;
    for (std::size_t i = 0; i + 1 < nf4::kCode.size(); ++i) {
      largestGap = std::max(largestGap, double(nf4::kCode[i + 1] - nf4::kCode[i]));
    }
    double sumSquaredError = 0.0;
    double sumSquared = 0.0;
    for (std::size_t b = 0; b * 64 < w.size(); ++b) {
      const std::size_t end = std::min(w.size(), b * 64 + 64);
      float absmax = 0.0f;
      for (std::size_t i = b * 64; i < end; ++i) {
        absmax = std::max(absmax, std::abs(w[i]));
      }
      const float scale = nf4::blockScale(packed.data(), static_cast<std::int64_t>(b));
      // The second level keeps the scale within half a dynamic-code step of 1 of the group's
      // spread, far below 1 % of absmax for weights like these.
      QVERIFY2(std::abs(scale - absmax) <= 0.01f * absmax, qPrintable(QString::number(b)));
      for (std::size_t i = b * 64; i < end; ++i) {
        const double bound = 0.5 * largestGap * absmax + std::abs(scale - absmax) + 1e-9;
        QVERIFY2(std::abs(back[i] - w[i]) <= bound, qPrintable(QString::number(i)));
        sumSquaredError += double(back[i] - w[i]) * (back[i] - w[i]);
        sumSquared += double(w[i]) * w[i];
      }
    }
    // NF4 of normal data keeps the relative RMS error near 0.1 (QLoRA's Table 2 regime).
    QVERIFY(std::sqrt(sumSquaredError / sumSquared) < 0.12);
  }

  void dequantizingARangeEqualsThatRangeOfTheWhole() {
    const std::vector<float> w = normalWeights(16384 + 600, 1.0f, 3);
    const std::vector<std::byte> packed = quantized(w);
    const std::vector<float> whole = dequantized(packed, w.size());
    std::vector<float> part(500);
    nf4::dequantize(packed.data(), 16300, 500, part.data());
    for (std::size_t i = 0; i < part.size(); ++i) {
      QCOMPARE(part[i], whole[16300 + i]);
    }
  }

  void zeroBlocksComeBackAsZeroAndEveryCodeValueIsReachable() {
    std::vector<float> w(3 * 64, 0.0f);
    for (std::size_t i = 0; i < 16; ++i) {
      w[64 + i] = nf4::kCode[i] * 3.0f;  // block 1 holds every code value times its absmax
    }
    const std::vector<float> back = dequantized(quantized(w), w.size());
    for (std::size_t i = 0; i < 64; ++i) {
      QCOMPARE(back[i], 0.0f);
      QCOMPARE(back[128 + i], 0.0f);
    }
    const float scale = nf4::blockScale(quantized(w).data(), 1);
    for (std::size_t i = 0; i < 16; ++i) {
      QCOMPARE(back[64 + i], nf4::kCode[i] * scale);
    }
  }

  void nonFiniteWeightsAreRefusedNamingTheIndex() {
    std::vector<float> w(100, 0.5f);
    w[77] = std::numeric_limits<float>::quiet_NaN();
    std::vector<std::byte> packed(nf4::storageBytes(100));
    try {
      nf4::quantize(w.data(), DType::F32, 100, packed.data());
      QFAIL("a NaN weight was quantised");
    } catch (const ShapeError& e) {
      QVERIFY2(std::string(e.what()).find("weight 77") != std::string::npos, e.what());
    }
  }

  void bf16SourcesQuantiseAsTheirWidenedValues() {
    const std::vector<float> w = normalWeights(1000, 0.05f, 11);
    std::vector<std::uint16_t> bits(w.size());
    std::vector<float> widened(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      bits[i] = floatToBf16(w[i]);
      widened[i] = bf16ToFloat(bits[i]);
    }
    std::vector<std::byte> fromBf16(nf4::storageBytes(1000));
    nf4::quantize(bits.data(), DType::BF16, 1000, fromBf16.data());
    QVERIFY(fromBf16 == quantized(widened));
  }

  void cpuMatmulWithAnNf4WeightEqualsTheProductWithItsDequantisedValues() {
    auto cpu = createCpuBackend();
    const std::int64_t tokens = 5, in = 192, out = 96;
    const std::vector<float> x = normalWeights(tokens * in, 1.0f, 21);
    const std::vector<float> w = normalWeights(out * in, 0.05f, 22);
    const Tensor xt = cpu->upload(x, DType::F32, {tokens, in});
    const Tensor packed = cpu->upload(w, DType::NF4, {out, in});
    QCOMPARE(packed.dtype(), DType::NF4);
    QCOMPARE(packed.bytes(), nf4::storageBytes(out * in));
    Tensor dense = cpu->empty(DType::F32, {out, in});
    cpu->dequantize(packed, dense);
    QCOMPARE(cpu->download(packed), cpu->download(dense));
    // Forward y = x·Wᵀ and the input gradient dx = dy·W, as the training graph calls them.
    Tensor y = cpu->empty(DType::F32, {tokens, out});
    cpu->matmul(xt, false, packed, true, y, 1.0f, 0.0f);
    const std::vector<float> deq = cpu->download(dense);
    const std::vector<float> yv = cpu->download(y);
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t o = 0; o < out; ++o) {
        double sum = 0.0;
        for (std::int64_t i = 0; i < in; ++i) {
          sum += double(x[t * in + i]) * deq[o * in + i];
        }
        QVERIFY(std::abs(yv[t * out + o] - sum) <= 1e-4 * (1.0 + std::abs(sum)));
      }
    }
    const Tensor dy = cpu->upload(normalWeights(tokens * out, 1.0f, 23), DType::F32, {tokens, out});
    Tensor dxPacked = cpu->empty(DType::F32, {tokens, in});
    Tensor dxDense = cpu->empty(DType::F32, {tokens, in});
    cpu->matmul(dy, false, packed, false, dxPacked, 1.0f, 0.0f);
    cpu->matmul(dy, false, dense, false, dxDense, 1.0f, 0.0f);
    const std::vector<float> a = cpu->download(dxPacked);
    const std::vector<float> b = cpu->download(dxDense);
    for (std::size_t i = 0; i < a.size(); ++i) {
      QVERIFY(std::abs(a[i] - b[i]) <= 1e-5f * (1.0f + std::abs(b[i])));
    }
  }

  // scripts/reference/nf4.py (PyTorch, from QLoRA's published code table and bitsandbytes'
  // published dynamic map) against this implementation, on the script's own weights.
  void matchesTheCommittedPyTorchReference() {
    std::ifstream in(lstest::sourcePath("tests/compute/data/nf4_reference.json"));
    QVERIFY2(in.good(), "tests/compute/data/nf4_reference.json is missing");
    const nlohmann::json ref = nlohmann::json::parse(in);
    for (std::size_t i = 0; i < 16; ++i) {
      QVERIFY(nf4::kCode[i] == ref["nf4_code"][i].get<float>());
    }
    for (std::size_t i = 0; i < 256; ++i) {
      QVERIFY2(nf4::dynamicCode()[i] == ref["dynamic_code"][i].get<float>(),
               qPrintable(QString::number(i)));
    }
    for (const nlohmann::json& c : ref["cases"]) {
      const auto count = c["count"].get<std::int64_t>();
      const std::vector<float> w = referenceWeights(count, c["seed"].get<std::uint64_t>());
      const auto& positions = c["sample_positions"];
      for (std::size_t i = 0; i < positions.size(); ++i) {
        QVERIFY(w[positions[i].get<std::size_t>()] == c["sample_weights"][i].get<float>());
      }
      const std::vector<std::byte> packed = quantized(w);
      const std::string name = c["name"].get<std::string>();
      float offset = 0.0f;
      std::memcpy(&offset, packed.data(), sizeof offset);
      QVERIFY2(offset == c["offset"].get<float>(), qPrintable(QString::fromStdString(name)));
      // The 4-bit codes, byte for byte, group by group.
      const std::string hex = c["codes_hex"].get<std::string>();
      for (std::int64_t e = 0; e < count; e += 2) {
        const std::size_t g = static_cast<std::size_t>(e / nf4::kGroupWeights);
        const std::size_t inGroup = static_cast<std::size_t>(e % nf4::kGroupWeights);
        const auto mine =
            static_cast<unsigned>(packed[nf4::kHeaderBytes + g * nf4::kGroupBytes + inGroup / 2]);
        const unsigned theirs = static_cast<unsigned>(
            std::stoul(hex.substr(static_cast<std::size_t>(e), 2), nullptr, 16));
        QVERIFY2(mine == theirs,
                 qPrintable(QString::fromStdString(name) + " byte " + QString::number(e / 2)));
      }
      // The second level: 8-bit codes of the absmax values and each group's f32 scale.
      const auto& qabsmax = c["qabsmax"];
      for (std::size_t b = 0; b < qabsmax.size(); ++b) {
        const std::size_t g = b / nf4::kBlocksPerGroup;
        const auto mine = static_cast<int>(packed[nf4::kHeaderBytes + g * nf4::kGroupBytes +
                                                  nf4::kGroupCodeBytes + b % nf4::kBlocksPerGroup]);
        QVERIFY2(mine == qabsmax[b].get<int>(),
                 qPrintable(QString::fromStdString(name) + " block " + QString::number(b)));
      }
      const auto& absmax2 = c["absmax2"];
      for (std::size_t g = 0; g < absmax2.size(); ++g) {
        float mine = 0.0f;
        std::memcpy(&mine,
                    packed.data() + nf4::kHeaderBytes + g * nf4::kGroupBytes +
                        nf4::kGroupCodeBytes + nf4::kBlocksPerGroup,
                    sizeof mine);
        QVERIFY2(mine == absmax2[g].get<float>(),
                 qPrintable(QString::fromStdString(name) + " group " + QString::number(g)));
      }
      // The dequantised weights, bit for bit at the sampled positions, and their sum of squares.
      const std::vector<float> back = dequantized(packed, static_cast<std::size_t>(count));
      for (std::size_t i = 0; i < positions.size(); ++i) {
        QVERIFY2(back[positions[i].get<std::size_t>()] == c["sample_dequantized"][i].get<float>(),
                 qPrintable(QString::fromStdString(name) + " weight " +
                            QString::number(positions[i].get<qint64>())));
      }
      double sumOfSquares = 0.0;
      for (const float v : back) {
        sumOfSquares += double(v) * v;
      }
      const double expected = c["dequantized_sum_of_squares"].get<double>();
      QVERIFY(std::abs(sumOfSquares - expected) <= 1e-9 * expected);
    }
  }

  void dequantizeRefusesOtherDtypesAndShapes() {
    auto cpu = createCpuBackend();
    const Tensor packed = cpu->upload(std::vector<float>(128, 1.0f), DType::NF4, {2, 64});
    Tensor wrongShape = cpu->empty(DType::F32, {64, 2});
    QVERIFY_THROWS_EXCEPTION(ShapeError, cpu->dequantize(packed, wrongShape));
    const Tensor notPacked = cpu->empty(DType::F32, {2, 64});
    Tensor out = cpu->empty(DType::F32, {2, 64});
    QVERIFY_THROWS_EXCEPTION(ShapeError, cpu->dequantize(notPacked, out));
  }
};

QTEST_APPLESS_MAIN(TestNf4)
#include "test_nf4.moc"
