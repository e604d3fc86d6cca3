// test_op_add.cpp — the CPU element-wise adds and product (compute/cpu/add.cpp): addInPlace,
// addBias with a bf16 bias broadcast over rows, multiplyInPlace, stackColumns, and the shape
// checks.
#include <QtTest>

#include <array>

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

  // stackColumns (the default on host memory): each row of the result is the parts' rows side by
  // side; parts that do not fit are refused, naming the op.
  void stackColumnsPutsThePartsSideBySide() {
    auto cpu = createCpuBackend();
    const Tensor a = cpu->upload(std::vector<float>{1, 2, 3, 4}, DType::F32, {2, 2});
    const Tensor b = cpu->upload(std::vector<float>{5, 6}, DType::F32, {2, 1});
    Tensor both = cpu->empty(DType::F32, {2, 3});
    cpu->stackColumns(std::array<const Tensor*, 2>{&a, &b}, both);
    QCOMPARE(cpu->download(both), (std::vector<float>{1, 2, 5, 3, 4, 6}));
    Tensor narrow = cpu->empty(DType::F32, {2, 2});
    QVERIFY(throwsWith<ShapeError>(
        [&] {
          cpu->stackColumns(std::array<const Tensor*, 2>{&a, &b}, narrow);
        },
        {"stack_columns: the parts have 3 columns"}));
  }
};

QTEST_APPLESS_MAIN(TestOpAdd)
#include "test_op_add.moc"
