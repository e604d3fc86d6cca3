// test_op_rope.cpp — the CPU rotary position embedding (compute/cpu/rope.cpp): pairs rotate by
// position × inverse frequency, and the inverse rotation undoes it.
#include <QtTest>

#include <cmath>

#include "OpTestUtil.h"
#include "compute/Backend.h"

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
};

QTEST_APPLESS_MAIN(TestOpRope)
#include "test_op_rope.moc"
