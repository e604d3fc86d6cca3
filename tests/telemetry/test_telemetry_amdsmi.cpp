// test_telemetry_amdsmi.cpp — AmdSmiProvider against the fixture library fake_amd_smi (an RX 7900
// XTX and an MI210 in one socket, plus a CPU processor): only the GPUs are devices, named and
// placed on the bus; every metric with its unit; unsupported and inconsistent values left n/a;
// processes with their device, VRAM, GTT, SDMA time and occupancy; and the refusals: library
// absent, wrong library, unchecked library version, no /dev/kfd, a failing amdsmi_init.
#include <QtTest>

#include <unistd.h>

#include "TestPaths.h"
#include "telemetry/AmdSmiProvider.h"

using namespace lorascope::telemetry;

namespace {
const std::string kFake = lstest::fakeAmdSmi();
// Any existing file stands in for /dev/kfd; the fixture library itself will do.
const std::string kPresentNode = lstest::fakeAmdSmi();
constexpr std::uint64_t kMiB = 1 << 20;
}  // namespace

class TestTelemetryAmdSmi : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    qunsetenv("LORASCOPE_FAKE_AMDSMI_MAJOR");
    qunsetenv("LORASCOPE_FAKE_AMDSMI_INIT");
  }

  void listsOnlyTheGpusWithNameAndBus() {
    AmdSmiProvider provider({kFake}, kPresentNode);
    QVERIFY2(provider.init(), provider.lastError().c_str());
    const std::vector<DeviceInfo> devices = provider.devices();
    QCOMPARE(devices.size(), std::size_t{2});
    QCOMPARE(devices[0].name, std::string("AMD Radeon RX 7900 XTX"));
    QCOMPARE(devices[0].busId, std::string("0000:03:00.0"));
    QCOMPARE(devices[0].provider, std::string("amd-smi"));
    QCOMPARE(devices[1].name, std::string("AMD Instinct MI210"));
    QCOMPARE(devices[1].busId, std::string("0001:c3:00.1"));
  }

  void readsEveryMetricWithUnits() {
    AmdSmiProvider provider({kFake}, kPresentNode);
    QVERIFY(provider.init());
    Snapshot s;
    QVERIFY2(provider.refresh(s), provider.lastError().c_str());
    QCOMPARE(s.devices.size(), std::size_t{2});
    const DeviceReading& a = s.devices[0];
    QCOMPARE(a.vramTotalBytes.value(), std::uint64_t{25753026560});
    QCOMPARE(a.vramUsedBytes.value(), std::uint64_t{3072} * kMiB);
    QCOMPARE(a.visibleVramUsedBytes.value(), 16 * kMiB);
    QCOMPARE(a.gttTotalBytes.value(), std::uint64_t{33554432000});
    QCOMPARE(a.gttUsedBytes.value(), 16 * kMiB);
    QCOMPARE(a.busyPercent.value(), 97.0);
    QCOMPARE(a.memoryBusyPercent.value(), 41.0);
    QCOMPARE(a.temperatureCelsius.value(), 71.0);  // amd-smi reports whole degrees Celsius
    QCOMPARE(a.powerWatts.value(), 312.0);         // the average where no current value exists
    QCOMPARE(a.graphicsClockMhz.value(), 2498.0);
    QCOMPARE(a.memoryClockMhz.value(), 1249.0);
  }

  void leavesUnsupportedAndInconsistentValuesNa() {
    AmdSmiProvider provider({kFake}, kPresentNode);
    QVERIFY(provider.init());
    Snapshot s;
    QVERIFY(provider.refresh(s));
    const DeviceReading& b = s.devices.at(1);
    QCOMPARE(b.vramTotalBytes.value(), std::uint64_t{68702699520});
    QVERIFY(!b.gttUsedBytes.has_value());  // the call failed
    QVERIFY(!b.busyPercent.has_value());   // 0xffffffff: not supported
    QCOMPARE(b.memoryBusyPercent.value(), 0.0);
    QVERIFY(!b.powerWatts.has_value());        // neither current nor average reported
    QVERIFY(!b.graphicsClockMhz.has_value());  // current index beyond the supported count
  }

  void listsProcessesPerDevice() {
    AmdSmiProvider provider({kFake}, kPresentNode);
    QVERIFY(provider.init());
    Snapshot s;
    QVERIFY(provider.refresh(s));
    QCOMPARE(s.processes.size(), std::size_t{2});
    const ProcessReading& self = s.processes[0];
    QCOMPARE(self.pid, static_cast<std::uint32_t>(::getpid()));
    QCOMPARE(self.deviceIndex.value(), 0);
    QFile comm(QStringLiteral("/proc/self/comm"));
    QVERIFY(comm.open(QIODevice::ReadOnly));
    QCOMPARE(self.name, comm.readAll().trimmed().toStdString());  // /proc/<pid>/comm wins
    QCOMPARE(self.vramBytes.value(), 2048 * kMiB);
    QCOMPARE(self.gttBytes.value(), 8 * kMiB);
    QCOMPARE(self.sdmaTimeUs.value(), std::uint64_t{1500});
    QCOMPARE(self.cuOccupancyPercent.value(), 60.0);
    const ProcessReading& other = s.processes[1];
    QCOMPARE(other.name, std::string("python3"));  // not in /proc here: the library's name
    QCOMPARE(other.vramBytes.value(), 1024 * kMiB);
    QVERIFY(!other.cuOccupancyPercent.has_value());
  }

  void absentLibraryIsUnavailableNamingTheCandidates() {
    AmdSmiProvider provider({"libamd_smi-lorascope-absent.so.27"}, kPresentNode);
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("amd-smi unavailable") != std::string::npos);
    QVERIFY(provider.lastError().find("libamd_smi-lorascope-absent.so.27") != std::string::npos);
    Snapshot s;
    QVERIFY(!provider.refresh(s));
  }

  void wrongLibraryNamesTheMissingSymbol() {
    AmdSmiProvider provider({"libm.so.6"}, kPresentNode);
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("amdsmi_init") != std::string::npos);
  }

  void refusesALibraryVersionWhoseStructsWereNotChecked() {
    qputenv("LORASCOPE_FAKE_AMDSMI_MAJOR", "26");
    AmdSmiProvider provider({kFake}, kPresentNode);
    QVERIFY(!provider.init());
    QVERIFY2(provider.lastError().find("version 26.1") != std::string::npos,
             provider.lastError().c_str());
    QVERIFY(provider.devices().empty());
  }

  void noKfdNodeIsTheAnswerBeforeInit() {
    AmdSmiProvider provider({kFake}, "/nonexistent/lorascope/kfd");
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("/nonexistent/lorascope/kfd is absent") != std::string::npos);
  }

  void failingInitSaysWhyInWords() {
    qputenv("LORASCOPE_FAKE_AMDSMI_INIT", "8");
    AmdSmiProvider provider({kFake}, kPresentNode);
    QVERIFY(!provider.init());
    QVERIFY2(
        provider.lastError().find("amdsmi_init failed: AMDSMI_STATUS_NO_PERM") != std::string::npos,
        provider.lastError().c_str());
  }
};

QTEST_GUILESS_MAIN(TestTelemetryAmdSmi)
#include "test_telemetry_amdsmi.moc"
