// test_op_convert.cpp — the CPU dtype conversions (compute/Convert.h, cpu/convert.cpp): f16
// widening over normal, subnormal and special values.
#include <QtTest>

#include <cmath>

#include "compute/Convert.h"

class TestOpConvert : public QObject {
  Q_OBJECT

 private slots:
  void f16WideningCoversNormalSubnormalAndSpecialValues() {
    using lorascope::compute::f16ToFloat;
    QCOMPARE(f16ToFloat(0x3c00), 1.0f);
    QCOMPARE(f16ToFloat(0xc000), -2.0f);
    QCOMPARE(f16ToFloat(0x7bff), 65504.0f);
    QCOMPARE(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
    QCOMPARE(f16ToFloat(0x0200), std::ldexp(1.0f, -15));
    QCOMPARE(f16ToFloat(0x8000), -0.0f);
    QVERIFY(std::isinf(f16ToFloat(0x7c00)));
    QVERIFY(std::isnan(f16ToFloat(0x7e00)));
  }
};

QTEST_APPLESS_MAIN(TestOpConvert)
#include "test_op_convert.moc"
