// test_op_lm_head_loss.cpp — the CPU fused lm head + cross-entropy
// (compute/cpu/lm_head_loss.cpp): losses equal the unfused matmul + cross-entropy, the hidden
// gradient matches a double softmax reference over several vocabulary chunks with bf16 weights
// and ignored rows, only the predicted rows are computed (the rest, even non-finite, give 0), and
// bad targets and shapes are named. Its GPU twin is checked in
// backend/parity/cases_lm_head.cpp.
#include <QtTest>

#include <cmath>

#include "ExpectError.h"
#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/Errors.h"
#include "compute/cpu/lm_head_loss.h"  // defines: lmHeadChunkColumns

using namespace lorascope::compute;
using lorascope::test::closeTo;
using lorascope::test::randomValues;
using lorascope::test::throwsWith;

class TestOpLmHeadLoss : public QObject {
  Q_OBJECT

 private slots:
  void lmHeadLossMatchesUnfusedCrossEntropy();
  void lmHeadGradientMatchesSoftmaxReferenceOverChunks();
  void lmHeadComputesThePredictedRowsAlone();
  void lmHeadRejectsBadTargetsAndShapes();
};

void TestOpLmHeadLoss::lmHeadLossMatchesUnfusedCrossEntropy() {
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

void TestOpLmHeadLoss::lmHeadGradientMatchesSoftmaxReferenceOverChunks() {
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

void TestOpLmHeadLoss::lmHeadComputesThePredictedRowsAlone() {
  // Note [predicted rows only]: the predicted rows of a batch give, bit for bit, what a batch of
  // those rows alone gives; the ignored ones (here non-finite) give loss 0 and a zero gradient.
  auto be = createCpuBackend();
  const std::int64_t rows = 6, hidden = 8, vocab = 40;
  auto h = randomValues(static_cast<std::size_t>(rows * hidden), 41);
  const auto w = randomValues(static_cast<std::size_t>(vocab * hidden), 42, 0.5f);
  const std::vector<std::int32_t> targets{kIgnoreTarget, 5, 39, kIgnoreTarget, 0, kIgnoreTarget};
  for (const std::int64_t r : {0, 3, 5})
    std::fill_n(h.begin() + r * hidden, hidden, r == 3 ? INFINITY : NAN);
  const Tensor tw = be->upload(w, DType::F32, {vocab, hidden});
  Tensor losses = be->empty(DType::F32, {rows}), dh = be->empty(DType::F32, {rows, hidden});
  be->lmHeadCrossEntropy(be->upload(h, DType::F32, {rows, hidden}), tw, targets, 0.25f, losses, dh);
  std::vector<float> alone;
  for (const std::int64_t r : {1, 2, 4})
    alone.insert(alone.end(), h.begin() + r * hidden, h.begin() + (r + 1) * hidden);
  Tensor aloneLosses = be->empty(DType::F32, {3}), aloneDh = be->empty(DType::F32, {3, hidden});
  be->lmHeadCrossEntropy(be->upload(alone, DType::F32, {3, hidden}), tw,
                         std::vector<std::int32_t>{5, 39, 0}, 0.25f, aloneLosses, aloneDh);
  const std::vector<float> gotLoss = be->download(losses), gotDh = be->download(dh);
  const std::vector<float> wantLoss = be->download(aloneLosses), wantDh = be->download(aloneDh);
  int predicted = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const bool ignored = targets[static_cast<std::size_t>(r)] == kIgnoreTarget;
    QCOMPARE(gotLoss[r], ignored ? 0.0f : wantLoss[predicted]);
    for (std::int64_t x = 0; x < hidden; ++x)
      QCOMPARE(gotDh[r * hidden + x], ignored ? 0.0f : wantDh[predicted * hidden + x]);
    predicted += ignored ? 0 : 1;
  }
  // No predicted row at all: every loss and gradient is 0.
  const std::vector<std::int32_t> none(static_cast<std::size_t>(rows), kIgnoreTarget);
  be->lmHeadCrossEntropy(be->upload(h, DType::F32, {rows, hidden}), tw, none, 0.25f, losses, dh);
  for (const float x : be->download(losses))
    QCOMPARE(x, 0.0f);
  for (const float x : be->download(dh))
    QCOMPARE(x, 0.0f);
}

void TestOpLmHeadLoss::lmHeadRejectsBadTargetsAndShapes() {
  auto be = createCpuBackend();
  Tensor h = be->empty(DType::F32, {2, 4}),
         w = be->upload(std::vector<float>(40, 0.1f), DType::F32, {10, 4});
  Tensor losses = be->empty(DType::F32, {2}), dh = be->empty(DType::F32, {2, 4});
  std::vector<float> zeros(8, 0.0f);
  h = be->upload(zeros, DType::F32, {2, 4});
  const std::vector<std::int32_t> bad{1, 10};
  QVERIFY(throwsWith<ShapeError>([&] { be->lmHeadCrossEntropy(h, w, bad, 1.0f, losses, dh); },
                                 {"target 10 of row 1"}));
  const std::vector<std::int32_t> three{1, 2, 3};
  QVERIFY(throwsWith<ShapeError>([&] { be->lmHeadCrossEntropy(h, w, three, 1.0f, losses, dh); },
                                 {"3 targets for 2 rows"}));
  Tensor wrongWidth = be->empty(DType::F32, {10, 5});
  const std::vector<std::int32_t> ok{1, 2};
  QVERIFY(throwsWith<ShapeError>(
      [&] { be->lmHeadCrossEntropy(h, wrongWidth, ok, 1.0f, losses, dh); }, {"hidden size 4"}));
}

QTEST_APPLESS_MAIN(TestOpLmHeadLoss)
#include "test_op_lm_head_loss.moc"
