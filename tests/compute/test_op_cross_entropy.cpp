// test_op_cross_entropy.cpp — the CPU cross-entropy over full logits
// (compute/cpu/cross_entropy.cpp): hand values, ignored rows (-100), and a bad target named.
#include <QtTest>

#include <cmath>

#include "ExpectError.h"
#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;
using lorascope::test::near;
using lorascope::test::throwsWith;

class TestOpCrossEntropy : public QObject {
  Q_OBJECT

 private slots:
  void crossEntropyIgnoresMinus100AndNamesBadTargets() {
    auto cpu = createCpuBackend();
    // Row 0 uniform over 4: loss ln 4. Row 1: target logit 2 against [0, 2, 0, 0].
    const Tensor logits =
        cpu->upload(std::vector<float>{1, 1, 1, 1, 0, 2, 0, 0, 5, 5, 5, 5}, DType::F32, {3, 4});
    Tensor losses = cpu->empty(DType::F32, {3});
    Tensor lse = cpu->empty(DType::F32, {3});
    const std::vector<std::int32_t> targets{3, 1, kIgnoreTarget};
    cpu->crossEntropyForward(logits, targets, losses, lse);
    const double lse1 = std::log(3 + std::exp(2.0));
    QVERIFY(near(cpu->download(losses), {std::log(4.0f), static_cast<float>(lse1 - 2), 0}, 1e-6f));
    QVERIFY(near(cpu->download(lse),
                 {1 + std::log(4.0f), static_cast<float>(lse1), 5 + std::log(4.0f)}, 1e-6f));
    const std::vector<std::int32_t> bad{0, 4, 0};
    QVERIFY(throwsWith<ShapeError>([&] { cpu->crossEntropyForward(logits, bad, losses, lse); },
                                   {"target 4 of row 1"}));
  }
};

QTEST_APPLESS_MAIN(TestOpCrossEntropy)
#include "test_op_cross_entropy.moc"
