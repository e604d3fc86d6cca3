// test_tensor.cpp — bf16 rounding, tensor descriptions and the GPU entry points of the cpu build.
#include <QtTest>

#include <cmath>
#include <limits>

#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/BuildInfo.h"
#include "compute/Errors.h"

using namespace lorascope::compute;

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
