// test_format.cpp — common::formatBytes, the one byte formatter of messages, reports and widgets:
// plain bytes below 1 KiB, two decimals in binary units above, and a value that would read
// 1024.00 moved up a unit. (Locale independence comes from std::to_chars, which the standard
// defines without a locale.) Also trimBlanks, the trimming of a typed list's entries.
#include "TestRunner.h"

#include <cstdint>
#include <string>

#include "common/Format.h"

using lorascope::common::formatBytes;

namespace {
constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = kKiB << 10;
constexpr std::uint64_t kGiB = kMiB << 10;
}  // namespace

TEST_CASE(plainBytesBelowOneKiB) {
  COMPARE(formatBytes(0), std::string("0 B"));
  COMPARE(formatBytes(80), std::string("80 B"));
  COMPARE(formatBytes(1023), std::string("1023 B"));
}

// The form of PyTorch's "Tried to allocate 2.00 GiB".
TEST_CASE(twoDecimalsInBinaryUnits) {
  COMPARE(formatBytes(kKiB), std::string("1.00 KiB"));
  COMPARE(formatBytes(30 * kMiB), std::string("30.00 MiB"));
  COMPARE(formatBytes(512 * kMiB), std::string("512.00 MiB"));
  COMPARE(formatBytes(3 * kGiB / 2), std::string("1.50 GiB"));
  COMPARE(formatBytes(25 * kGiB / 2), std::string("12.50 GiB"));
  COMPARE(formatBytes(3 * (kGiB << 10)), std::string("3.00 TiB"));
}

TEST_CASE(roundsToTheNearestHundredth) {
  COMPARE(formatBytes(10 * kKiB - 11), std::string("9.99 KiB"));  // 9.9893 KiB
  COMPARE(formatBytes(10 * kKiB - 5), std::string("10.00 KiB"));  // 9.9951 KiB
}

// 1023.999 KiB would read "1024.00 KiB"; it reads as the next unit instead.
TEST_CASE(aValueReading1024MovesUpAUnit) {
  COMPARE(formatBytes(kMiB - 1), std::string("1.00 MiB"));
  COMPARE(formatBytes(kMiB - 600), std::string("1023.41 KiB"));
  COMPARE(formatBytes(kGiB - 1), std::string("1.00 GiB"));
}

TEST_CASE(largestCountsStayInPiB) {
  COMPARE(formatBytes(UINT64_MAX), std::string("16384.00 PiB"));
}

// A list entry a user typed loses its blanks at both ends, nothing inside it.
TEST_CASE(trimBlanksKeepsTheInside) {
  using lorascope::common::trimBlanks;
  COMPARE(std::string(trimBlanks(" \t0, 1 \t")), std::string("0, 1"));
  COMPARE(std::string(trimBlanks("oom@step#3")), std::string("oom@step#3"));
  COMPARE(std::string(trimBlanks(" \t ")), std::string());
}
