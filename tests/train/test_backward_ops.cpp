// test_backward_ops.cpp — the CPU backward ops of the training graph against independent
// references: causal GQA attention backward (matrix-form double reference and finite
// differences), SwiGLU backward (finite differences), the fused chunked lm-head + cross-entropy
// (unfused logits + cross_entropy_forward, a double softmax gradient, several chunks, bf16
// weights, ignored rows), the mask product, and the argument checks.
#include <QtTest>

#include <cmath>
#include <random>
#include <string>

#include "TrainTestUtil.h"  // defines: throwsNaming
#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/Errors.h"
#include "compute/cpu/lm_head_loss.h"  // defines: lmHeadChunkColumns

using namespace lorascope::compute;
using lorascope::test::throwsNaming;

namespace {

std::vector<float> randomValues(std::size_t n, unsigned seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v)
    x = normal(rng);
  return v;
}

// max |got − want| ≤ tolerance · max(1, max |want|)
bool closeTo(const std::vector<float>& got, const std::vector<double>& want, double tolerance) {
  double worst = 0.0, scale = 1.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    const double d = std::fabs(got[i] - want[i]);
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  if (worst > tolerance * scale || got.size() != want.size()) {
    qWarning("element %zu: %.9g vs %.9g (scale %g)", at, double{got[at]}, want[at], scale);
    return false;
  }
  return true;
}

struct AttnCase {
  int b = 2, s = 7, h = 4, kv = 2, d = 6;
  float scale = 0.4f;
};

// Matrix-form reference: P = softmax(scale·QKᵀ + mask), dP = dO·Vᵀ, dS = P ⊙ (dP − rowsum(dO⊙O)),
// dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO, in double, with O recomputed in double.
void referenceAttentionBackward(const AttnCase& c, const std::vector<float>& q,
                                const std::vector<float>& k, const std::vector<float>& v,
                                const std::vector<float>& dout, std::vector<double>& dq,
                                std::vector<double>& dk, std::vector<double>& dv) {
  const int group = c.h / c.kv;
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  auto qi = [&](int b, int i, int h, int x) { return q[((b * c.s + i) * c.h + h) * c.d + x]; };
  auto ki = [&](int b, int j, int g, int x) { return k[((b * c.s + j) * c.kv + g) * c.d + x]; };
  auto vi = [&](int b, int j, int g, int x) { return v[((b * c.s + j) * c.kv + g) * c.d + x]; };
  auto doi = [&](int b, int i, int h, int x) { return dout[((b * c.s + i) * c.h + h) * c.d + x]; };
  for (int b = 0; b < c.b; ++b) {
    for (int h = 0; h < c.h; ++h) {
      const int g = h / group;
      std::vector<double> p(static_cast<std::size_t>(c.s * c.s), 0.0);
      for (int i = 0; i < c.s; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int x = 0; x < c.d; ++x)
            dot += double{qi(b, i, h, x)} * ki(b, j, g, x);
          p[i * c.s + j] = dot * c.scale;
          mx = std::max(mx, p[i * c.s + j]);
        }
        for (int j = 0; j <= i; ++j)
          sum += (p[i * c.s + j] = std::exp(p[i * c.s + j] - mx));
        for (int j = 0; j <= i; ++j)
          p[i * c.s + j] /= sum;
      }
      for (int i = 0; i < c.s; ++i) {
        std::vector<double> o(static_cast<std::size_t>(c.d), 0.0);
        for (int j = 0; j <= i; ++j)
          for (int x = 0; x < c.d; ++x)
            o[x] += p[i * c.s + j] * vi(b, j, g, x);
        double rowDot = 0;
        for (int x = 0; x < c.d; ++x)
          rowDot += double{doi(b, i, h, x)} * o[x];
        for (int j = 0; j <= i; ++j) {
          double dp = 0;
          for (int x = 0; x < c.d; ++x)
            dp += double{doi(b, i, h, x)} * vi(b, j, g, x);
          const double ds = p[i * c.s + j] * (dp - rowDot);
          for (int x = 0; x < c.d; ++x) {
            dq[((b * c.s + i) * c.h + h) * c.d + x] += c.scale * ds * ki(b, j, g, x);
            dk[((b * c.s + j) * c.kv + g) * c.d + x] += c.scale * ds * qi(b, i, h, x);
            dv[((b * c.s + j) * c.kv + g) * c.d + x] += p[i * c.s + j] * doi(b, i, h, x);
          }
        }
      }
    }
  }
}

}  // namespace

class TestBackwardOps : public QObject {
  Q_OBJECT

 private slots:
  void attentionBackwardMatchesMatrixReference();
  void attentionBackwardMatchesFiniteDifferences();
  void attentionBackwardRejectsMismatchedShapes();
  void swigluBackwardMatchesFiniteDifferences();
  void multiplyInPlaceIsElementwise();
  void lmHeadLossMatchesUnfusedCrossEntropy();
  void lmHeadGradientMatchesSoftmaxReferenceOverChunks();
  void lmHeadRejectsBadTargetsAndShapes();
};

void TestBackwardOps::attentionBackwardMatchesMatrixReference() {
  auto be = createCpuBackend();
  for (const AttnCase c :
       {AttnCase{}, AttnCase{1, 9, 3, 3, 4, 0.5f}, AttnCase{2, 5, 4, 1, 8, 0.3f}}) {
    const std::size_t nq = static_cast<std::size_t>(c.b * c.s * c.h * c.d);
    const std::size_t nk = static_cast<std::size_t>(c.b * c.s * c.kv * c.d);
    const auto q = randomValues(nq, 1), k = randomValues(nk, 2), v = randomValues(nk, 3);
    const auto dout = randomValues(nq, 4);
    const Shape qs{c.b, c.s, c.h, c.d}, ks{c.b, c.s, c.kv, c.d};
    Tensor tq = be->upload(q, DType::F32, qs), tk = be->upload(k, DType::F32, ks),
           tv = be->upload(v, DType::F32, ks), tdo = be->upload(dout, DType::F32, qs);
    Tensor out = be->empty(DType::F32, qs), lse = be->empty(DType::F32, {c.b, c.h, c.s});
    be->attentionForward(tq, tk, tv, c.scale, out, lse);
    Tensor dq = be->empty(DType::F32, qs), dk = be->empty(DType::F32, ks),
           dv = be->empty(DType::F32, ks);
    be->attentionBackward(tdo, tq, tk, tv, out, lse, c.scale, dq, dk, dv);
    std::vector<double> rq, rk, rv;
    referenceAttentionBackward(c, q, k, v, dout, rq, rk, rv);
    QVERIFY(closeTo(be->download(dq), rq, 2e-6));
    QVERIFY(closeTo(be->download(dk), rk, 2e-6));
    QVERIFY(closeTo(be->download(dv), rv, 2e-6));
  }
}

void TestBackwardOps::attentionBackwardMatchesFiniteDifferences() {
  // L = Σ dout ⊙ attention(q, k, v); central differences over a few elements of q, k and v.
  auto be = createCpuBackend();
  const AttnCase c{1, 5, 4, 2, 4, 0.5f};
  const Shape qs{c.b, c.s, c.h, c.d}, ks{c.b, c.s, c.kv, c.d};
  std::vector<float> in[3] = {randomValues(80, 5), randomValues(40, 6), randomValues(40, 7)};
  const auto dout = randomValues(80, 8);
  auto loss = [&]() {
    Tensor out = be->empty(DType::F32, qs), lse = be->empty(DType::F32, {c.b, c.h, c.s});
    be->attentionForward(be->upload(in[0], DType::F32, qs), be->upload(in[1], DType::F32, ks),
                         be->upload(in[2], DType::F32, ks), c.scale, out, lse);
    double l = 0;
    const auto o = be->download(out);
    for (std::size_t i = 0; i < o.size(); ++i)
      l += double{o[i]} * dout[i];
    return l;
  };
  Tensor tq = be->upload(in[0], DType::F32, qs), tk = be->upload(in[1], DType::F32, ks),
         tv = be->upload(in[2], DType::F32, ks);
  Tensor out = be->empty(DType::F32, qs), lse = be->empty(DType::F32, {c.b, c.h, c.s});
  be->attentionForward(tq, tk, tv, c.scale, out, lse);
  Tensor grads[3] = {be->empty(DType::F32, qs), be->empty(DType::F32, ks),
                     be->empty(DType::F32, ks)};
  be->attentionBackward(be->upload(dout, DType::F32, qs), tq, tk, tv, out, lse, c.scale, grads[0],
                        grads[1], grads[2]);
  const float eps = 1e-2f;
  for (int t = 0; t < 3; ++t) {
    const auto g = be->download(grads[t]);
    for (std::size_t i = 0; i < in[t].size(); i += 7) {
      const float saved = in[t][i];
      in[t][i] = saved + eps;
      const double up = loss();
      in[t][i] = saved - eps;
      const double down = loss();
      in[t][i] = saved;
      const double fd = (up - down) / (2 * eps);
      QVERIFY2(
          std::fabs(fd - g[i]) < 2e-3 * (1 + std::fabs(fd)),
          qPrintable(QString("tensor %1 element %2: %3 vs fd %4").arg(t).arg(i).arg(g[i]).arg(fd)));
    }
  }
}

void TestBackwardOps::attentionBackwardRejectsMismatchedShapes() {
  auto be = createCpuBackend();
  Tensor q = be->empty(DType::F32, {1, 4, 2, 2}), k = be->empty(DType::F32, {1, 4, 1, 2});
  Tensor out = be->empty(DType::F32, {1, 4, 2, 2}), lse = be->empty(DType::F32, {1, 2, 4});
  Tensor dq = be->empty(DType::F32, {1, 4, 2, 2}), badDk = be->empty(DType::F32, {1, 4, 2, 2});
  Tensor dv = be->empty(DType::F32, {1, 4, 1, 2});
  QVERIFY(throwsNaming<ShapeError>(
      [&] { be->attentionBackward(out, q, k, k, out, lse, 1.0f, dq, badDk, dv); },
      "attention_backward: dk"));
}

void TestBackwardOps::swigluBackwardMatchesFiniteDifferences() {
  auto be = createCpuBackend();
  const auto gate = randomValues(64, 11, 3.0f), up = randomValues(64, 12),
             dout = randomValues(64, 13);
  Tensor dg = be->empty(DType::F32, {8, 8}), du = be->empty(DType::F32, {8, 8});
  be->swigluBackward(be->upload(dout, DType::F32, {8, 8}), be->upload(gate, DType::F32, {8, 8}),
                     be->upload(up, DType::F32, {8, 8}), dg, du);
  auto silu = [](double g) { return g / (1 + std::exp(-g)); };
  std::vector<double> wantGate(64), wantUp(64);
  const double eps = 1e-6;
  for (std::size_t i = 0; i < 64; ++i) {
    wantGate[i] = dout[i] * up[i] * (silu(gate[i] + eps) - silu(gate[i] - eps)) / (2 * eps);
    wantUp[i] = dout[i] * silu(gate[i]);
  }
  QVERIFY(closeTo(be->download(dg), wantGate, 1e-6));
  QVERIFY(closeTo(be->download(du), wantUp, 1e-6));
}

void TestBackwardOps::multiplyInPlaceIsElementwise() {
  auto be = createCpuBackend();
  Tensor x = be->upload(std::vector<float>{1, 2, 3, 4}, DType::F32, {2, 2});
  be->multiplyInPlace(x, be->upload(std::vector<float>{0, 2, 0.5f, -1}, DType::F32, {2, 2}));
  QCOMPARE(be->download(x), (std::vector<float>{0, 4, 1.5f, -4}));
  QVERIFY(throwsNaming<ShapeError>([&] { be->multiplyInPlace(x, be->empty(DType::F32, {4})); },
                                   "multiply: y"));
}

void TestBackwardOps::lmHeadLossMatchesUnfusedCrossEntropy() {
  auto be = createCpuBackend();
  const int rows = 9, hidden = 16, vocab = 50;
  const auto h = randomValues(rows * hidden, 21), w = randomValues(vocab * hidden, 22, 0.5f);
  std::vector<std::int32_t> targets{3, 49, kIgnoreTarget, 0, 17, 17, kIgnoreTarget, 8, 25};
  Tensor th = be->upload(h, DType::F32, {rows, hidden}),
         tw = be->upload(w, DType::F32, {vocab, hidden});
  Tensor logits = be->empty(DType::F32, {rows, vocab});
  be->matmul(th, false, tw, true, logits, 1.0f, 0.0f);
  Tensor wantLoss = be->empty(DType::F32, {rows}), lse = be->empty(DType::F32, {rows});
  be->crossEntropyForward(logits, targets, wantLoss, lse);
  Tensor losses = be->empty(DType::F32, {rows}), noGrad;
  be->lmHeadCrossEntropy(th, tw, targets, 1.0f, losses, noGrad);
  const auto want = be->download(wantLoss);
  QVERIFY(closeTo(be->download(losses), std::vector<double>(want.begin(), want.end()), 1e-6));
  QCOMPARE(be->download(losses)[2], 0.0f);
}

void TestBackwardOps::lmHeadGradientMatchesSoftmaxReferenceOverChunks() {
  // 2100 rows × vocab 2500 forces two vocabulary chunks; the weight is bf16 (widened per block).
  const std::int64_t rows = 2100, hidden = 4, vocab = 2500;
  QVERIFY(cpu::lmHeadChunkColumns(rows, vocab) < vocab);
  auto be = createCpuBackend();
  auto w = randomValues(static_cast<std::size_t>(vocab * hidden), 31);
  for (float& x : w)
    x = roundToBf16(x);
  const auto h = randomValues(static_cast<std::size_t>(rows * hidden), 32);
  std::vector<std::int32_t> targets(static_cast<std::size_t>(rows));
  for (std::size_t r = 0; r < targets.size(); ++r)
    targets[r] = r % 5 == 0 ? kIgnoreTarget : static_cast<std::int32_t>((r * 37) % vocab);
  const float gradScale = 1.0f / 1680.0f;
  Tensor losses = be->empty(DType::F32, {rows}), dh = be->empty(DType::F32, {rows, hidden});
  be->lmHeadCrossEntropy(be->upload(h, DType::F32, {rows, hidden}),
                         be->upload(w, DType::BF16, {vocab, hidden}), targets, gradScale, losses,
                         dh);
  std::vector<double> wantLoss(static_cast<std::size_t>(rows)),
      wantDh(static_cast<std::size_t>(rows * hidden), 0.0);
  std::vector<double> logit(static_cast<std::size_t>(vocab));
  for (std::int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (std::int64_t c = 0; c < vocab; ++c) {
      double dot = 0;
      for (std::int64_t x = 0; x < hidden; ++x)
        dot += double{h[r * hidden + x]} * w[c * hidden + x];
      logit[c] = dot;
      mx = std::max(mx, dot);
    }
    for (double l : logit)
      sum += std::exp(l - mx);
    const std::int32_t t = targets[static_cast<std::size_t>(r)];
    if (t == kIgnoreTarget)
      continue;
    wantLoss[r] = mx + std::log(sum) - logit[t];
    for (std::int64_t c = 0; c < vocab; ++c) {
      const double d = (std::exp(logit[c] - mx) / sum - (c == t ? 1.0 : 0.0)) * gradScale;
      for (std::int64_t x = 0; x < hidden; ++x)
        wantDh[r * hidden + x] += d * w[c * hidden + x];
    }
  }
  QVERIFY(closeTo(be->download(losses), wantLoss, 2e-6));
  // dh entries are O(gradScale); compare relative to that scale.
  std::vector<double> scaledWant(wantDh);
  std::vector<float> got = be->download(dh);
  for (double& x : scaledWant)
    x /= gradScale;
  for (float& x : got)
    x /= gradScale;
  QVERIFY(closeTo(got, scaledWant, 2e-5));
  QCOMPARE(got[0], 0.0f);  // row 0 is ignored: a zero gradient row
}

void TestBackwardOps::lmHeadRejectsBadTargetsAndShapes() {
  auto be = createCpuBackend();
  Tensor h = be->empty(DType::F32, {2, 4}),
         w = be->upload(std::vector<float>(40, 0.1f), DType::F32, {10, 4});
  Tensor losses = be->empty(DType::F32, {2}), dh = be->empty(DType::F32, {2, 4});
  std::vector<float> zeros(8, 0.0f);
  h = be->upload(zeros, DType::F32, {2, 4});
  const std::vector<std::int32_t> bad{1, 10};
  QVERIFY(throwsNaming<ShapeError>([&] { be->lmHeadCrossEntropy(h, w, bad, 1.0f, losses, dh); },
                                   "target 10 of row 1"));
  const std::vector<std::int32_t> three{1, 2, 3};
  QVERIFY(throwsNaming<ShapeError>([&] { be->lmHeadCrossEntropy(h, w, three, 1.0f, losses, dh); },
                                   "3 targets for 2 rows"));
  Tensor wrongWidth = be->empty(DType::F32, {10, 5});
  const std::vector<std::int32_t> ok{1, 2};
  QVERIFY(throwsNaming<ShapeError>(
      [&] { be->lmHeadCrossEntropy(h, wrongWidth, ok, 1.0f, losses, dh); }, "hidden size 4"));
}

QTEST_APPLESS_MAIN(TestBackwardOps)
#include "test_backward_ops.moc"
