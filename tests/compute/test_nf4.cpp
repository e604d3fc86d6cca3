// test_nf4.cpp — NF4 double quantisation on the host (compute/Nf4.cpp) and the CPU backend's
// NF4 ops: the code tables, the storage layout, quantise → dequantise error bounds, zero blocks,
// bad weights, matmul and dequantize through the Backend interface.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "OpTestUtil.h"
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
