// test_op_rope.cpp — the CPU rotary position embedding (compute/cpu/rope.cpp): pairs rotate by
// position × inverse frequency, and the inverse rotation undoes it; the backward's q/k/v gradients
// go side by side through RoPE's inverse (Backend::ropeBackwardStacked), into a column view.
#include <QtTest>

#include <cmath>

#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;
using lorascope::test::near;

class TestOpRope : public QObject {
  Q_OBJECT

 private slots:
  void ropeRotatesPairsAndInverseUndoesIt() {
    auto cpu = createCpuBackend();
    // One token at position 2, one head of dim 4: pairs (x0, x2) and (x1, x3).
    Tensor x = cpu->upload(std::vector<float>{1, 0, 0, 1}, DType::F32, {1, 1, 4});
    const Tensor invFreq = cpu->upload(std::vector<float>{0.5f, 0.25f}, DType::F32, {2});
    const std::vector<std::int32_t> pos{2};
    cpu->rope(x, pos, invFreq, false);
    const std::vector<float> r = cpu->download(x);
    // angle 1 for pair 0: (1, 0) -> (cos 1, sin 1); angle 0.5 for pair 1: (0, 1) -> (-sin .5, cos
    // .5)
    QVERIFY(near(r, {std::cos(1.0f), -std::sin(0.5f), std::sin(1.0f), std::cos(0.5f)}, 1e-6f));
    cpu->rope(x, pos, invFreq, true);
    QVERIFY(near(cpu->download(x), {1, 0, 0, 1}, 1e-6f));
  }

  // Two tokens, dq of 2 heads and dk, dv of 1 (head dim 4), into the first 16 of 17 columns: each
  // row is [q heads rotated back | k head rotated back | v head as it was], the spare column kept.
  void backwardGradientsStackThroughTheInverseRotation() {
    auto cpu = createCpuBackend();
    std::vector<float> qValues(16), kValues(8), vValues(8);
    for (std::size_t i = 0; i < qValues.size(); ++i) {
      qValues[i] = 0.1f * static_cast<float>(i) - 0.5f;
    }
    for (std::size_t i = 0; i < kValues.size(); ++i) {
      kValues[i] = 0.3f - 0.05f * static_cast<float>(i);
      vValues[i] = static_cast<float>(i) + 1.0f;
    }
    const Tensor invFreq = cpu->upload(std::vector<float>{0.5f, 0.25f}, DType::F32, {2});
    const std::vector<std::int32_t> pos{3, 7};
    Tensor dq = cpu->upload(qValues, DType::F32, {2, 2, 4});
    Tensor dk = cpu->upload(kValues, DType::F32, {2, 1, 4});
    const Tensor dv = cpu->upload(vValues, DType::F32, {2, 1, 4});
    Tensor wide = cpu->upload(std::vector<float>(34, -9.0f), DType::F32, {2, 17});
    Tensor dqkv = wide.columns(0, 16);
    cpu->ropeBackwardStacked(dq, dk, dv, pos, invFreq, dqkv);

    Tensor q = cpu->upload(qValues, DType::F32, {2, 2, 4});
    Tensor k = cpu->upload(kValues, DType::F32, {2, 1, 4});
    cpu->rope(q, pos, invFreq, true);
    cpu->rope(k, pos, invFreq, true);
    const std::vector<float> qRotated = cpu->download(q);
    const std::vector<float> kRotated = cpu->download(k);
    const std::vector<float> out = cpu->download(wide);
    for (std::size_t t = 0; t < 2; ++t) {
      const std::vector<float> row(out.begin() + static_cast<std::ptrdiff_t>(17 * t),
                                   out.begin() + static_cast<std::ptrdiff_t>(17 * t + 17));
      std::vector<float> expected(qRotated.begin() + static_cast<std::ptrdiff_t>(8 * t),
                                  qRotated.begin() + static_cast<std::ptrdiff_t>(8 * t + 8));
      expected.insert(expected.end(), kRotated.begin() + static_cast<std::ptrdiff_t>(4 * t),
                      kRotated.begin() + static_cast<std::ptrdiff_t>(4 * t + 4));
      expected.insert(expected.end(), vValues.begin() + static_cast<std::ptrdiff_t>(4 * t),
                      vValues.begin() + static_cast<std::ptrdiff_t>(4 * t + 4));
      expected.push_back(-9.0f);
      QVERIFY(near(row, expected, 0.0f));
    }
    // dqkv one column short of the three parts: a ShapeError naming the op and the tensor.
    Tensor narrow = wide.columns(0, 15);
    try {
      cpu->ropeBackwardStacked(dq, dk, dv, pos, invFreq, narrow);
      QFAIL("accepted a dqkv of 15 columns for 16");
    } catch (const ShapeError& e) {
      const QString message = QString::fromUtf8(e.what());
      QVERIFY2(message.contains("rope_backward_stacked") && message.contains("dqkv"),
               qPrintable(message));
    }
  }
};

QTEST_APPLESS_MAIN(TestOpRope)
#include "test_op_rope.moc"
