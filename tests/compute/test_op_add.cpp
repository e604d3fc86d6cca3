// test_op_add.cpp — the CPU element-wise adds and product (compute/cpu/add.cpp): addInPlace,
// addBias with a bf16 bias broadcast over rows, multiplyInPlace, and the shape check.
#include <QtTest>

#include "ExpectError.h"
#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;
using lorascope::test::near;
using lorascope::test::throwsWith;

class TestOpAdd : public QObject {
  Q_OBJECT

 private slots:
  void addInPlaceThenBf16BiasOverRows() {
    auto cpu = createCpuBackend();
    Tensor x = cpu->upload(std::vector<float>{0.5f, 0, -1, 2, 3, 4}, DType::F32, {2, 3});
    cpu->addInPlace(x, cpu->upload(std::vector<float>{2, 5, 1, -2, 0, 1}, DType::F32, {2, 3}));
    cpu->addBias(x, cpu->upload(std::vector<float>{1, 1, -0.5f}, DType::BF16, {3}));
    QVERIFY(near(cpu->download(x), {3.5f, 6, -0.5f, 1, 4, 4.5f}, 1e-6f));
  }

  void multiplyInPlaceIsElementwise() {
    auto cpu = createCpuBackend();
    Tensor x = cpu->upload(std::vector<float>{1, 2, 3, 4}, DType::F32, {2, 2});
    cpu->multiplyInPlace(x, cpu->upload(std::vector<float>{0, 2, 0.5f, -1}, DType::F32, {2, 2}));
    QCOMPARE(cpu->download(x), (std::vector<float>{0, 4, 1.5f, -4}));
    QVERIFY(throwsWith<ShapeError>([&] { cpu->multiplyInPlace(x, cpu->empty(DType::F32, {4})); },
                                   {"multiply: y"}));
  }
};

QTEST_APPLESS_MAIN(TestOpAdd)
#include "test_op_add.moc"
