// test_tensor.cpp — bf16 rounding, tensor descriptions and the GPU entry points of the cpu build.
#include <QtTest>

#include <array>
#include <cmath>
#include <limits>

#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/BuildInfo.h"
#include "compute/Errors.h"

using namespace lorascope::compute;

namespace {

// The message of the ShapeError `f` throws ("" when it throws none).
template <typename F>
QString describeThrows(F&& f) {
  try {
    f();
  } catch (const ShapeError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

}  // namespace

class TestTensor : public QObject {
  Q_OBJECT

 private slots:
  void bf16RoundsToNearestEven() {
    QCOMPARE(floatToBf16(1.0f), std::uint16_t{0x3f80});
    // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
    QCOMPARE(floatToBf16(1.0f + std::ldexp(1.0f, -8)), std::uint16_t{0x3f80});
    // 1 + 3·2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: ties go to even (1 + 2^-6).
    QCOMPARE(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), std::uint16_t{0x3f82});
    QCOMPARE(floatToBf16(-2.0f), std::uint16_t{0xc000});
    QCOMPARE(bf16ToFloat(0x3f80), 1.0f);
    QVERIFY(std::isnan(bf16ToFloat(floatToBf16(std::numeric_limits<float>::quiet_NaN()))));
    QVERIFY(std::isinf(bf16ToFloat(floatToBf16(std::numeric_limits<float>::infinity()))));
  }

  void uploadRoundTripsThroughBf16() {
    auto cpu = createCpuBackend();
    const std::vector<float> values{0.1f, -3.14159f, 1e-3f, 65504.0f};
    const Tensor t = cpu->upload(values, DType::BF16, {4});
    QCOMPARE(t.bytes(), std::size_t{8});
    const std::vector<float> back = cpu->download(t);
    for (std::size_t i = 0; i < values.size(); ++i) {
      QCOMPARE(back[i], roundToBf16(values[i]));
    }
  }

  void uploadRejectsWrongCount() {
    auto cpu = createCpuBackend();
    QVERIFY_THROWS_EXCEPTION(ShapeError, cpu->upload(std::vector<float>(5), DType::F32, {2, 3}));
  }

  void describeNamesDtypeShapeAndDevice() {
    auto cpu = createCpuBackend();
    QCOMPARE(QString::fromStdString(cpu->empty(DType::BF16, {7, 896}).describe()),
             QStringLiteral("bf16[7, 896] on cpu"));
  }

  // A column view (Tensor::columns) shares its matrix's storage with rows ld() apart; rows() of
  // it keep the stride; the ops that take no leading dimension refuse it by name.
  void columnViewsKeepTheirRowsApartAndAreRefusedAsDense() {
    auto cpu = createCpuBackend();
    std::vector<float> values(4 * 6);
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<float>(i);
    }
    const Tensor matrix = cpu->upload(values, DType::F32, {4, 6});
    const Tensor view = matrix.columns(2, 3);
    QCOMPARE(view.shape(), (Shape{4, 3}));
    QCOMPARE(view.ld(), std::int64_t{6});
    QVERIFY(!view.dense());
    QCOMPARE(view.base<float>()[0], 2.0f);
    const Tensor lower = view.rows(1, 2);
    QCOMPARE(lower.ld(), std::int64_t{6});
    QCOMPARE(lower.base<float>()[0], 8.0f);
    QVERIFY(matrix.columns(0, 6).dense());
    QVERIFY(describeThrows([&] { (void)view.data(); }).contains("a column view, rows 6 apart"));
    QVERIFY(describeThrows([&] { (void)view.viewAs({12}); }).contains("not contiguous"));
    QVERIFY(describeThrows([&] { (void)matrix.columns(4, 3); }).contains("not inside"));
    QVERIFY_THROWS_EXCEPTION(ShapeError, cpu->download(view));
  }

  // Backend::copyMatrices (the host default): straight and transposed-and-scaled copies into
  // column views, and stackColumns into one; the elements around them untouched.
  void copiesReachColumnViewsOnly() {
    auto cpu = createCpuBackend();
    const Tensor src = cpu->upload(std::vector<float>{1, 2, 3, 4, 5, 6}, DType::F32, {2, 3});
    const Tensor wide = cpu->upload(std::vector<float>(5 * 7, -1.0f), DType::F32, {5, 7});
    Tensor straight = wide.rows(0, 2).columns(1, 3);
    Tensor across = wide.rows(2, 3).columns(5, 2);
    const std::array<MatrixCopy, 2> copies{{{&src, &straight}, {&src, &across, true, 0.5f}}};
    cpu->copyMatrices(copies);
    const std::vector<float> got = cpu->download(wide);
    const std::vector<float> want{-1, 1,  2,  3,  -1, -1,  -1,   //
                                  -1, 4,  5,  6,  -1, -1,  -1,   //
                                  -1, -1, -1, -1, -1, 0.5, 2,    //
                                  -1, -1, -1, -1, -1, 1,   2.5,  //
                                  -1, -1, -1, -1, -1, 1.5, 3};
    QCOMPARE(got, want);
    Tensor stacked = wide.columns(0, 6);
    const Tensor left = cpu->upload(std::vector<float>(5 * 2, 7.0f), DType::F32, {5, 2});
    const Tensor right = cpu->upload(std::vector<float>(5 * 4, 8.0f), DType::F32, {5, 4});
    cpu->stackColumns(std::array<const Tensor*, 2>{&left, &right}, stacked);
    const std::vector<float> after = cpu->download(wide);
    for (std::size_t r = 0; r < 5; ++r) {
      QCOMPARE(after[r * 7 + 1], 7.0f);
      QCOMPARE(after[r * 7 + 5], 8.0f);
      QCOMPARE(after[r * 7 + 6], want[r * 7 + 6]);
    }
    Tensor wrongShape = wide.rows(0, 3).columns(0, 2);
    const std::array<MatrixCopy, 1> bad{{{&src, &wrongShape}}};
    QVERIFY_THROWS_EXCEPTION(ShapeError, cpu->copyMatrices(bad));
  }

  void cpuBuildAnswersThatThereIsNoGpu() {
    if (buildInfo().flavour != "cpu") {
      QSKIP("only the cpu flavour is built without a GPU runtime");
    }
    const GpuInventory inventory = queryGpuInventory();
    QVERIFY(inventory.devices.empty());
    QVERIFY(!inventory.unavailableReason.empty());
    QVERIFY_THROWS_EXCEPTION(NoGpuError, createGpuBackend(0));
  }
};

QTEST_APPLESS_MAIN(TestTensor)
#include "test_tensor.moc"
