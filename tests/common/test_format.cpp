// test_format.cpp — common::formatBytes, the one byte formatter of messages, reports and widgets:
// plain bytes below 1 KiB, two decimals in binary units above, and a value that would read
// 1024.00 moved up a unit. (Locale independence comes from std::to_chars, which the standard
// defines without a locale.)
#include <QtTest>

#include <cstdint>
#include <string>

#include "common/Format.h"

using lorascope::common::formatBytes;

namespace {
constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = kKiB << 10;
constexpr std::uint64_t kGiB = kMiB << 10;
}  // namespace

class TestFormat : public QObject {
  Q_OBJECT

 private slots:
  void plainBytesBelowOneKiB() {
    QCOMPARE(formatBytes(0), std::string("0 B"));
    QCOMPARE(formatBytes(80), std::string("80 B"));
    QCOMPARE(formatBytes(1023), std::string("1023 B"));
  }

  // The form of PyTorch's "Tried to allocate 2.00 GiB".
  void twoDecimalsInBinaryUnits() {
    QCOMPARE(formatBytes(kKiB), std::string("1.00 KiB"));
    QCOMPARE(formatBytes(30 * kMiB), std::string("30.00 MiB"));
    QCOMPARE(formatBytes(512 * kMiB), std::string("512.00 MiB"));
    QCOMPARE(formatBytes(3 * kGiB / 2), std::string("1.50 GiB"));
    QCOMPARE(formatBytes(25 * kGiB / 2), std::string("12.50 GiB"));
    QCOMPARE(formatBytes(3 * (kGiB << 10)), std::string("3.00 TiB"));
  }

  void roundsToTheNearestHundredth() {
    QCOMPARE(formatBytes(10 * kKiB - 11), std::string("9.99 KiB"));  // 9.9893 KiB
    QCOMPARE(formatBytes(10 * kKiB - 5), std::string("10.00 KiB"));  // 9.9951 KiB
  }

  // 1023.999 KiB would read "1024.00 KiB"; it reads as the next unit instead.
  void aValueReading1024MovesUpAUnit() {
    QCOMPARE(formatBytes(kMiB - 1), std::string("1.00 MiB"));
    QCOMPARE(formatBytes(kMiB - 600), std::string("1023.41 KiB"));
    QCOMPARE(formatBytes(kGiB - 1), std::string("1.00 GiB"));
  }

  void largestCountsStayInPiB() { QCOMPARE(formatBytes(UINT64_MAX), std::string("16384.00 PiB")); }
};

QTEST_APPLESS_MAIN(TestFormat)
#include "test_format.moc"
