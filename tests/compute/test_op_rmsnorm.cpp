// test_op_rmsnorm.cpp — the CPU RMSNorm (compute/cpu/rmsnorm.cpp; the reference for every GPU
// kernel) is itself right: hand-computed values, gradients against finite differences, and shape
// errors. Its GPU twin is checked in backend/parity/cases_rmsnorm.cpp.
#include <QtTest>

#include <cmath>
#include <random>

#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;

class TestOpRmsnorm : public QObject {
  Q_OBJECT

 private slots:
  void forwardMatchesHandComputedValues() {
    auto cpu = createCpuBackend();
    // Row [1, 2, 3, 4]: mean of squares 7.5; row [0, 0, 0, 2]: mean of squares 1.
    const Tensor x = cpu->upload(std::vector<float>{1, 2, 3, 4, 0, 0, 0, 2}, DType::F32, {2, 4});
    const Tensor w = cpu->upload(std::vector<float>{1, 0.5f, 2, -1}, DType::F32, {4});
    Tensor y = cpu->empty(DType::F32, {2, 4});
    Tensor rstd = cpu->empty(DType::F32, {2});
    cpu->rmsnormForward(x, w, 0.0f, y, rstd);
    const float s = 1.0f / std::sqrt(7.5f);
    const std::vector<float> expectedY{s, 2 * 0.5f * s, 3 * 2 * s, -4 * s, 0, 0, 0, -2};
    const std::vector<float> gotY = cpu->download(y);
    for (std::size_t i = 0; i < expectedY.size(); ++i) {
      QVERIFY2(std::fabs(gotY[i] - expectedY[i]) < 1e-6f, qPrintable(QString::number(i)));
    }
    QCOMPARE(cpu->download(rstd)[1], 1.0f);
  }

  void epsilonKeepsZeroRowFinite() {
    auto cpu = createCpuBackend();
    const Tensor x = cpu->upload(std::vector<float>(8, 0.0f), DType::F32, {1, 8});
    const Tensor w = cpu->upload(std::vector<float>(8, 1.0f), DType::F32, {8});
    Tensor y = cpu->empty(DType::F32, {1, 8});
    Tensor rstd = cpu->empty(DType::F32, {1});
    cpu->rmsnormForward(x, w, 1e-6f, y, rstd);
    QVERIFY(std::fabs(cpu->download(rstd)[0] - 1000.0f) < 1e-2f);
    QCOMPARE(cpu->download(y)[0], 0.0f);
  }

  // L = Σ c ⊙ y; the analytic dx with dy = c must match central differences of L.
  void backwardMatchesFiniteDifferences() {
    auto cpu = createCpuBackend();
    constexpr std::int64_t rows = 3, dim = 17;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> xv(rows * dim), wv(dim), cv(rows * dim);
    for (float& v : xv)
      v = normal(rng);
    for (float& v : wv)
      v = 1.0f + 0.3f * normal(rng);
    for (float& v : cv)
      v = normal(rng);

    const Tensor w = cpu->upload(wv, DType::F32, {dim});
    auto loss = [&](const std::vector<float>& xs) {
      const Tensor x = cpu->upload(xs, DType::F32, {rows, dim});
      Tensor y = cpu->empty(DType::F32, {rows, dim});
      Tensor rstd = cpu->empty(DType::F32, {rows});
      cpu->rmsnormForward(x, w, 1e-5f, y, rstd);
      double l = 0;
      const std::vector<float> yv = cpu->download(y);
      for (std::size_t i = 0; i < yv.size(); ++i)
        l += static_cast<double>(yv[i]) * cv[i];
      return l;
    };

    const Tensor x = cpu->upload(xv, DType::F32, {rows, dim});
    Tensor y = cpu->empty(DType::F32, {rows, dim});
    Tensor rstd = cpu->empty(DType::F32, {rows});
    cpu->rmsnormForward(x, w, 1e-5f, y, rstd);
    const Tensor dy = cpu->upload(cv, DType::F32, {rows, dim});
    Tensor dx = cpu->empty(DType::F32, {rows, dim});
    cpu->rmsnormBackward(dy, x, w, rstd, dx, false);
    const std::vector<float> analytic = cpu->download(dx);

    constexpr float h = 1e-2f;
    for (std::size_t i = 0; i < xv.size(); ++i) {
      std::vector<float> plus = xv, minus = xv;
      plus[i] += h;
      minus[i] -= h;
      const double numeric = (loss(plus) - loss(minus)) / (2.0 * h);
      QVERIFY2(std::fabs(numeric - analytic[i]) < 2e-3 + 2e-3 * std::fabs(numeric),
               qPrintable(QStringLiteral("element %1: numeric %2 analytic %3")
                              .arg(i)
                              .arg(numeric)
                              .arg(analytic[i])));
    }
  }

  // With accumulate the gradient is added to what dx held: each element is prior + the gradient
  // written without accumulate, to the bit.
  void backwardAccumulateAddsToDx() {
    auto cpu = createCpuBackend();
    constexpr std::int64_t rows = 5, dim = 37;  // several rows a range, a dim past a vector
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    std::vector<float> xv(rows * dim), wv(dim), dyv(rows * dim), prior(rows * dim);
    for (auto* values : {&xv, &wv, &dyv, &prior}) {
      for (float& v : *values) {
        v = normal(rng);
      }
    }
    const Tensor x = cpu->upload(xv, DType::F32, {rows, dim});
    const Tensor w = cpu->upload(wv, DType::F32, {dim});
    const Tensor dy = cpu->upload(dyv, DType::F32, {rows, dim});
    Tensor y = cpu->empty(DType::F32, {rows, dim});
    Tensor rstd = cpu->empty(DType::F32, {rows});
    cpu->rmsnormForward(x, w, 1e-5f, y, rstd);
    Tensor plain = cpu->empty(DType::F32, {rows, dim});
    cpu->rmsnormBackward(dy, x, w, rstd, plain, false);
    Tensor summed = cpu->upload(prior, DType::F32, {rows, dim});
    cpu->rmsnormBackward(dy, x, w, rstd, summed, true);
    const std::vector<float> gradient = cpu->download(plain);
    const std::vector<float> got = cpu->download(summed);
    for (std::size_t i = 0; i < got.size(); ++i) {
      QVERIFY2(got[i] == prior[i] + gradient[i],
               qPrintable(QStringLiteral("element %1: %2, expected %3 + %4")
                              .arg(i)
                              .arg(got[i])
                              .arg(prior[i])
                              .arg(gradient[i])));
    }
  }

  void rejectsMismatchedShapesNamingTheTensor() {
    auto cpu = createCpuBackend();
    const Tensor x = cpu->empty(DType::F32, {2, 8});
    const Tensor w = cpu->empty(DType::F32, {7});
    Tensor y = cpu->empty(DType::F32, {2, 8});
    Tensor rstd = cpu->empty(DType::F32, {2});
    try {
      cpu->rmsnormForward(x, w, 1e-6f, y, rstd);
      QFAIL("a weight of the wrong length was accepted");
    } catch (const ShapeError& e) {
      const QString message = QString::fromUtf8(e.what());
      QVERIFY2(message.contains("rmsnorm_forward") && message.contains("weight") &&
                   message.contains("[7]") && message.contains("[8]"),
               qPrintable(message));
    }
  }

  void rejectsWrongActivationDType() {
    auto cpu = createCpuBackend();
    const Tensor x = cpu->empty(DType::BF16, {2, 8});
    const Tensor w = cpu->empty(DType::F32, {8});
    Tensor y = cpu->empty(DType::F32, {2, 8});
    Tensor rstd = cpu->empty(DType::F32, {2});
    QVERIFY_THROWS_EXCEPTION(ShapeError, cpu->rmsnormForward(x, w, 1e-6f, y, rstd));
  }

  void acceptsBf16FrozenWeight() {
    auto cpu = createCpuBackend();
    const Tensor x = cpu->upload(std::vector<float>{3, 4}, DType::F32, {1, 2});
    const Tensor w = cpu->upload(std::vector<float>{2, 2}, DType::BF16, {2});
    Tensor y = cpu->empty(DType::F32, {1, 2});
    Tensor rstd = cpu->empty(DType::F32, {1});
    cpu->rmsnormForward(x, w, 0.0f, y, rstd);
    const float s = 1.0f / std::sqrt(12.5f);
    QVERIFY(std::fabs(cpu->download(y)[1] - 8 * s) < 1e-6f);
  }
};

QTEST_APPLESS_MAIN(TestOpRmsnorm)
#include "test_op_rmsnorm.moc"
