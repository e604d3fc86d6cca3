// test_model_ops.cpp — the CPU ops of the model graph against naive loops and hand values:
// matmul (every transpose, alpha/beta, 16-bit weights widened block by block), f16 widening,
// embedding, RoPE (and its inverse), causal GQA attention, SwiGLU, adds, cross-entropy.
#include <QtTest>

#include <cmath>
#include <random>

#include "ExpectError.h"
#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/Errors.h"
#include "compute/cpu/convert.h"

using namespace lorascope::compute;
using lorascope::test::throwsWith;

namespace {

std::vector<float> randomValues(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v)
    x = normal(rng);
  return v;
}

// Values exactly representable in bf16, so bf16 and f32 weights give the same product.
std::vector<float> bf16Values(std::size_t n, unsigned seed) {
  std::vector<float> v = randomValues(n, seed);
  for (float& x : v)
    x = roundToBf16(x);
  return v;
}

// c = alpha · op(a) · op(b) + beta · c with every operand given row-major as stored.
std::vector<float> naiveMatmul(const std::vector<float>& a, bool ta, const std::vector<float>& b,
                               bool tb, std::vector<float> c, int m, int n, int k, float alpha,
                               float beta) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        s += double{ta ? a[p * m + i] : a[i * k + p]} * (tb ? b[j * k + p] : b[p * n + j]);
      }
      c[i * n + j] = static_cast<float>(alpha * s + beta * c[i * n + j]);
    }
  }
  return c;
}

bool near(const std::vector<float>& got, const std::vector<float>& want, float tolerance) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > tolerance * (1.0f + std::fabs(want[i]))) {
      qWarning("element %zu: %g vs %g", i, double{got[i]}, double{want[i]});
      return false;
    }
  }
  return got.size() == want.size();
}

}  // namespace

class TestModelOps : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> cpu_ = createCpuBackend();

  void checkMatmul(int m, int n, int k, bool ta, bool tb, DType bType, float alpha, float beta) {
    const std::vector<float> a = randomValues(static_cast<std::size_t>(m) * k, 1);
    const std::vector<float> b = bf16Values(static_cast<std::size_t>(k) * n, 2);
    const std::vector<float> c0 = randomValues(static_cast<std::size_t>(m) * n, 3);
    const Tensor ta_ = cpu_->upload(a, DType::F32, ta ? Shape{k, m} : Shape{m, k});
    const Tensor tb_ = cpu_->upload(b, bType, tb ? Shape{n, k} : Shape{k, n});
    Tensor c = cpu_->upload(c0, DType::F32, {m, n});
    cpu_->matmul(ta_, ta, tb_, tb, c, alpha, beta);
    QVERIFY(near(cpu_->download(c), naiveMatmul(a, ta, b, tb, c0, m, n, k, alpha, beta), 1e-4f));
  }

 private slots:
  void matmulEveryTransposeWithAlphaAndBeta() {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        checkMatmul(5, 7, 3, ta, tb, DType::F32, 1.0f, 0.0f);
        checkMatmul(4, 6, 9, ta, tb, DType::F32, 0.5f, 1.0f);  // accumulate, as a gradient does
      }
    }
  }

  // 2100 × 2048 bf16 is more than one 4 Mi-float scratch block: both blocking paths are used.
  void matmulWidensBf16WeightsBlockByBlock() {
    checkMatmul(3, 2100, 2048, false, true, DType::BF16, 1.0f, 0.0f);
    checkMatmul(3, 2048, 2100, true, false, DType::BF16, 1.0f, 0.5f);
  }

  void matmulRejectsMismatchedInnerDimensions() {
    const Tensor a = cpu_->empty(DType::F32, {2, 3});
    const Tensor b = cpu_->empty(DType::F32, {4, 5});
    Tensor c = cpu_->empty(DType::F32, {2, 4});
    QVERIFY(throwsWith<ShapeError>([&] { cpu_->matmul(a, false, b, true, c, 1, 0); },
                                   {"matmul", "inner dimensions differ"}));
  }

  void f16WideningCoversNormalSubnormalAndSpecialValues() {
    using lorascope::compute::cpu::f16ToFloat;
    QCOMPARE(f16ToFloat(0x3c00), 1.0f);
    QCOMPARE(f16ToFloat(0xc000), -2.0f);
    QCOMPARE(f16ToFloat(0x7bff), 65504.0f);
    QCOMPARE(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
    QCOMPARE(f16ToFloat(0x0200), std::ldexp(1.0f, -15));
    QCOMPARE(f16ToFloat(0x8000), -0.0f);
    QVERIFY(std::isinf(f16ToFloat(0x7c00)));
    QVERIFY(std::isnan(f16ToFloat(0x7e00)));
  }

  void f16WeightsMultiplyLikeTheirValues() {
    Tensor w = cpu_->empty(DType::F16, {2, 2});
    const std::uint16_t bits[] = {0x3c00, 0x4000, 0xbc00, 0x3800};  // 1, 2, -1, 0.5
    std::memcpy(w.data(), bits, sizeof bits);
    const Tensor x = cpu_->upload(std::vector<float>{3, 4}, DType::F32, {1, 2});
    Tensor y = cpu_->empty(DType::F32, {1, 2});
    cpu_->matmul(x, false, w, true, y, 1, 0);  // y = x·Wᵀ = [3+8, -3+2]
    QCOMPARE(cpu_->download(y), (std::vector<float>{11, -1}));
  }

  void embeddingGathersRowsAndNamesBadIds() {
    const Tensor table =
        cpu_->upload(std::vector<float>{0, 1, 10, 11, 20, 21}, DType::BF16, {3, 2});
    Tensor out = cpu_->empty(DType::F32, {3, 2});
    const std::vector<std::int32_t> ids{2, 0, 2};
    cpu_->embeddingForward(table, ids, out);
    QCOMPARE(cpu_->download(out), (std::vector<float>{20, 21, 0, 1, 20, 21}));
    const std::vector<std::int32_t> bad{0, -1, 1};
    QVERIFY(throwsWith<ShapeError>([&] { cpu_->embeddingForward(table, bad, out); },
                                   {"token id -1 at position 1"}));
  }

  void ropeRotatesPairsAndInverseUndoesIt() {
    // One token at position 2, one head of dim 4: pairs (x0, x2) and (x1, x3).
    Tensor x = cpu_->upload(std::vector<float>{1, 0, 0, 1}, DType::F32, {1, 1, 4});
    const Tensor invFreq = cpu_->upload(std::vector<float>{0.5f, 0.25f}, DType::F32, {2});
    const std::vector<std::int32_t> pos{2};
    cpu_->rope(x, pos, invFreq, false);
    const std::vector<float> r = cpu_->download(x);
    // angle 1 for pair 0: (1, 0) -> (cos 1, sin 1); angle 0.5 for pair 1: (0, 1) -> (-sin .5, cos
    // .5)
    QVERIFY(near(r, {std::cos(1.0f), -std::sin(0.5f), std::sin(1.0f), std::cos(0.5f)}, 1e-6f));
    cpu_->rope(x, pos, invFreq, true);
    QVERIFY(near(cpu_->download(x), {1, 0, 0, 1}, 1e-6f));
  }

  void attentionIsCausalWithGroupedKvHeads() {
    const int batch = 2, seq = 5, heads = 4, kvHeads = 2, hd = 3;
    const std::vector<float> q = randomValues(batch * seq * heads * hd, 4);
    const std::vector<float> k = randomValues(batch * seq * kvHeads * hd, 5);
    const std::vector<float> v = randomValues(batch * seq * kvHeads * hd, 6);
    const float scale = 0.7f;
    Tensor out = cpu_->empty(DType::F32, {batch, seq, heads, hd});
    Tensor lse = cpu_->empty(DType::F32, {batch, heads, seq});
    cpu_->attentionForward(cpu_->upload(q, DType::F32, {batch, seq, heads, hd}),
                           cpu_->upload(k, DType::F32, {batch, seq, kvHeads, hd}),
                           cpu_->upload(v, DType::F32, {batch, seq, kvHeads, hd}), scale, out, lse);
    const std::vector<float> got = cpu_->download(out);
    const std::vector<float> gotLse = cpu_->download(lse);
    for (int b = 0; b < batch; ++b) {
      for (int h = 0; h < heads; ++h) {
        const int g = h / (heads / kvHeads);
        for (int i = 0; i < seq; ++i) {
          std::vector<double> w(i + 1);
          double z = 0;
          for (int j = 0; j <= i; ++j) {
            double s = 0;
            for (int d = 0; d < hd; ++d)
              s += q[((b * seq + i) * heads + h) * hd + d] *
                   k[((b * seq + j) * kvHeads + g) * hd + d];
            w[j] = std::exp(s * scale);
            z += w[j];
          }
          QVERIFY(std::fabs(gotLse[(b * heads + h) * seq + i] - std::log(z)) < 1e-5);
          for (int d = 0; d < hd; ++d) {
            double o = 0;
            for (int j = 0; j <= i; ++j)
              o += w[j] / z * v[((b * seq + j) * kvHeads + g) * hd + d];
            QVERIFY(std::fabs(got[((b * seq + i) * heads + h) * hd + d] - o) < 1e-5);
          }
        }
      }
    }
  }

  void swigluAndAdds() {
    const Tensor gate = cpu_->upload(std::vector<float>{1, 0, -2}, DType::F32, {1, 3});
    const Tensor up = cpu_->upload(std::vector<float>{2, 5, 1}, DType::F32, {1, 3});
    Tensor out = cpu_->empty(DType::F32, {1, 3});
    cpu_->swigluForward(gate, up, out);
    QVERIFY(near(cpu_->download(out),
                 {2.0f / (1 + std::exp(-1.0f)), 0, -2.0f / (1 + std::exp(2.0f))}, 1e-6f));
    cpu_->addInPlace(out, up);
    cpu_->addBias(out, cpu_->upload(std::vector<float>{1, 1, 1}, DType::BF16, {3}));
    QVERIFY(near(cpu_->download(out),
                 {2.0f / (1 + std::exp(-1.0f)) + 3, 6, -2.0f / (1 + std::exp(2.0f)) + 2}, 1e-6f));
  }

  void crossEntropyIgnoresMinus100AndNamesBadTargets() {
    // Row 0 uniform over 4: loss ln 4. Row 1: target logit 2 against [0, 2, 0, 0].
    const Tensor logits =
        cpu_->upload(std::vector<float>{1, 1, 1, 1, 0, 2, 0, 0, 5, 5, 5, 5}, DType::F32, {3, 4});
    Tensor losses = cpu_->empty(DType::F32, {3});
    Tensor lse = cpu_->empty(DType::F32, {3});
    const std::vector<std::int32_t> targets{3, 1, kIgnoreTarget};
    cpu_->crossEntropyForward(logits, targets, losses, lse);
    const double lse1 = std::log(3 + std::exp(2.0));
    QVERIFY(near(cpu_->download(losses), {std::log(4.0f), static_cast<float>(lse1 - 2), 0}, 1e-6f));
    QVERIFY(near(cpu_->download(lse),
                 {1 + std::log(4.0f), static_cast<float>(lse1), 5 + std::log(4.0f)}, 1e-6f));
    const std::vector<std::int32_t> bad{0, 4, 0};
    QVERIFY(throwsWith<ShapeError>([&] { cpu_->crossEntropyForward(logits, bad, losses, lse); },
                                   {"target 4 of row 1"}));
  }
};

QTEST_GUILESS_MAIN(TestModelOps)
#include "test_model_ops.moc"
