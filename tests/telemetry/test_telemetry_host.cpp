// test_telemetry_host.cpp — host memory from /proc/meminfo and /proc/self/status: the fixture's
// exact values, this machine's live values, and missing or malformed lines.
#include <QtTest>

#include "TestPaths.h"
#include "telemetry/HostProvider.h"
#include "telemetry/TextFiles.h"

using namespace lorascope::telemetry;

namespace {
const std::filesystem::path kProc =
    std::filesystem::path(lstest::sourcePath("tests/telemetry/data")) / "amdgpu-linux-6.8" / "proc";
constexpr std::uint64_t kKiB = 1024;
}  // namespace

class TestTelemetryHost : public QObject {
  Q_OBJECT

 private slots:
  void readsFixtureValuesInBytes() {
    HostProvider provider(kProc);
    QVERIFY(provider.init());
    Snapshot snapshot;
    QVERIFY(provider.refresh(snapshot));
    QVERIFY(snapshot.host.has_value());
    const HostReading& h = *snapshot.host;
    QCOMPARE(h.ramTotalBytes.value(), 32768000 * kKiB);
    QCOMPARE(h.ramAvailableBytes.value(), 20480000 * kKiB);
    QCOMPARE(h.swapTotalBytes.value(), 8388604 * kKiB);
    QCOMPARE(h.swapFreeBytes.value(), 8000000 * kKiB);
    QCOMPARE(h.processRssBytes.value(), 2048000 * kKiB);
  }

  void readsThisMachine() {
    HostProvider provider;
    QVERIFY(provider.init());
    Snapshot snapshot;
    QVERIFY(provider.refresh(snapshot));
    const HostReading& h = snapshot.host.value();
    QVERIFY(h.ramTotalBytes.value() > 0);
    QVERIFY(h.ramAvailableBytes.value() <= h.ramTotalBytes.value());
    QVERIFY(h.processRssBytes.value() > 0);
  }

  void missingAndMalformedLinesStayNotAvailable() {
    const HostReading h = parseHostMemory(
        "MemTotal:  1000 kB\nMemAvailable: lots kB\nSwapTotal:  12 furlongs\n", "VmRSS:\n");
    QCOMPARE(h.ramTotalBytes.value(), 1000 * kKiB);
    QVERIFY(!h.ramAvailableBytes);
    QVERIFY(!h.swapTotalBytes);
    QVERIFY(!h.swapFreeBytes);
    QVERIFY(!h.processRssBytes);
  }

  void missingRootIsAnErrorWithThePath() {
    HostProvider provider(kProc / "nowhere");
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("nowhere/meminfo") != std::string::npos);
  }

  void strictNumberParsing() {
    QCOMPARE(parseUnsigned(" 42\n").value(), std::uint64_t{42});
    QVERIFY(!parseUnsigned("-1"));
    QVERIFY(!parseUnsigned("4.5"));
    QVERIFY(!parseUnsigned("18446744073709551616"));  // 2^64
    QVERIFY(!parseUnsigned(""));
    QCOMPARE(parseSizeBytes("3 GiB").value(), std::uint64_t{3} << 30);
    QVERIFY(!parseSizeBytes("18014398509481984 GiB"));  // overflows 64 bits
  }
};

QTEST_GUILESS_MAIN(TestTelemetryHost)
#include "test_telemetry_host.moc"
