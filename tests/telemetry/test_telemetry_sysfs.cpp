// test_telemetry_sysfs.cpp — amdgpu sysfs reading from fixture trees (Linux 6.8 layout and a tree
// of odd values): card discovery, every metric with its unit conversion, missing and malformed
// files left as n/a, processes attributed to the card by PCI slot.
#include <QtTest>

#include "TestPaths.h"
#include "telemetry/AmdgpuSysfsProvider.h"

using namespace lorascope::telemetry;

namespace {
const std::filesystem::path kData = lstest::sourcePath("tests/telemetry/data");
const std::filesystem::path kLinux68 = kData / "amdgpu-linux-6.8";
const std::filesystem::path kOdd = kData / "amdgpu-odd-values";
constexpr std::uint64_t kMiB = 1 << 20;
}  // namespace

class TestTelemetrySysfs : public QObject {
  Q_OBJECT

 private slots:
  void findsOnlyAmdgpuCardsAndSkipsConnectors() {
    const std::vector<AmdgpuCard> cards = findAmdgpuCards(kLinux68 / "sys/class/drm");
    QCOMPARE(cards.size(), std::size_t{1});  // card1 is i915, card0-DP-1 is a connector
    QCOMPARE(cards[0].cardName, std::string("card0"));
    QCOMPARE(cards[0].pciSlot, std::string("0000:03:00.0"));
    QCOMPARE(cards[0].pciId, std::string("1002:744C"));
  }

  void readsEveryMetricWithUnits() {
    const AmdgpuCard card = findAmdgpuCards(kLinux68 / "sys/class/drm").at(0);
    const DeviceReading r = readAmdgpuCard(card, 0);
    QCOMPARE(r.vramTotalBytes.value(), std::uint64_t{21458059264});
    QCOMPARE(r.vramUsedBytes.value(), std::uint64_t{1234567168});
    QCOMPARE(r.visibleVramTotalBytes.value(), 256 * kMiB);
    QCOMPARE(r.visibleVramUsedBytes.value(), 40 * kMiB);
    QCOMPARE(r.gttTotalBytes.value(), std::uint64_t{16694620160});
    QCOMPARE(r.gttUsedBytes.value(), 54 * kMiB);
    QCOMPARE(r.busyPercent.value(), 37.0);
    QCOMPARE(r.memoryBusyPercent.value(), 12.0);
    QCOMPARE(r.temperatureCelsius.value(), 45.0);  // temp1_input 45000 m°C (edge)
    QCOMPARE(r.powerWatts.value(), 48.0);          // power1_average 48000000 µW
    QCOMPARE(r.graphicsClockMhz.value(), 2165.0);  // freq1_input Hz
    QCOMPARE(r.memoryClockMhz.value(), 1249.0);
    QVERIFY(!r.vramReservedBytes);  // amdgpu has no such file: n/a, not zero
  }

  void apuWithPowerInputOnlyAndNoMemoryBusy() {
    const std::vector<AmdgpuCard> cards = findAmdgpuCards(kOdd / "sys/class/drm");
    QCOMPARE(cards.size(), std::size_t{2});
    QCOMPARE(cards[0].cardName, std::string("card0"));
    const DeviceReading apu = readAmdgpuCard(cards[0], 0);
    QCOMPARE(apu.gttTotalBytes.value(), std::uint64_t{96} << 30);
    QCOMPARE(apu.gttUsedBytes.value(), std::uint64_t{32} << 30);
    QCOMPARE(apu.powerWatts.value(), 27.5);  // from power1_input
    QCOMPARE(apu.temperatureCelsius.value(), 61.0);
    QVERIFY(!apu.memoryBusyPercent);
    QVERIFY(!apu.visibleVramTotalBytes);
    QVERIFY(!apu.graphicsClockMhz);
  }

  void malformedFilesStayNotAvailable() {
    const AmdgpuCard broken = findAmdgpuCards(kOdd / "sys/class/drm").at(1);
    QCOMPARE(broken.cardName, std::string("card2"));
    const DeviceReading r = readAmdgpuCard(broken, 1);
    QCOMPARE(r.vramTotalBytes.value(), std::uint64_t{17163091968});
    QVERIFY(!r.vramUsedBytes);          // "n/a"
    QVERIFY(!r.gttTotalBytes);          // empty file
    QVERIFY(!r.busyPercent);            // "-3"
    QVERIFY(!r.memoryBusyPercent);      // 250 is not a percentage
    QVERIFY(!r.visibleVramTotalBytes);  // beyond 64 bits
    QVERIFY(!r.temperatureCelsius);     // no hwmon directory
    QVERIFY(!r.powerWatts);
  }

  void providerAttributesProcessesToTheCardByPciSlot() {
    AmdgpuSysfsProvider provider({kLinux68 / "sys/class/drm", kLinux68 / "proc"});
    QVERIFY(provider.init());
    const std::vector<DeviceInfo> devices = provider.devices();
    QCOMPARE(devices.size(), std::size_t{1});
    QCOMPARE(devices[0].busId, std::string("0000:03:00.0"));
    QCOMPARE(devices[0].provider, std::string("amdgpu-sysfs"));
    Snapshot snapshot;
    QVERIFY(provider.refresh(snapshot));
    QCOMPARE(snapshot.devices.size(), std::size_t{1});
    QCOMPARE(snapshot.processes.size(), std::size_t{3});  // 1200, 1300, 1500
    for (const ProcessReading& p : snapshot.processes) {
      QCOMPARE(p.deviceIndex.value(), 0);
    }
    QCOMPARE(snapshot.processes[0].pid, std::uint32_t{1200});
    QCOMPARE(snapshot.processes[0].name, std::string("python3"));
    QCOMPARE(snapshot.processes[0].vramBytes.value(), 1536 * kMiB);
  }

  void missingTreeIsUnavailableWithReason() {
    AmdgpuSysfsProvider provider({kData / "no-such-tree", kData / "no-such-proc"});
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("no card bound to the amdgpu driver") != std::string::npos);
  }

  void oneBrokenCardDoesNotFailTheOthers() {
    // card2's used VRAM is unreadable: the refresh still succeeds on the APU's numbers and
    // leaves card2's n/a.
    AmdgpuSysfsProvider provider({kOdd / "sys/class/drm", kData / "no-such-proc"});
    QVERIFY(provider.init());
    Snapshot snapshot;
    QVERIFY(provider.refresh(snapshot));  // the APU's used VRAM is readable
    QCOMPARE(snapshot.devices.size(), std::size_t{2});
    QVERIFY(snapshot.devices[0].vramUsedBytes.has_value());
    QVERIFY(!snapshot.devices[1].vramUsedBytes.has_value());
    QVERIFY(snapshot.processes.empty());
  }
};

QTEST_GUILESS_MAIN(TestTelemetrySysfs)
#include "test_telemetry_sysfs.moc"
