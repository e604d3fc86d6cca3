// test_telemetry_fdinfo.cpp — DRM fdinfo parsing (amdgpu's Linux 6.8 keys and the generic 6.11+
// keys, units, malformed lines) and the /proc walk: dedupe by drm-client-id, other drivers
// ignored, unreadable processes counted.
#include <QtTest>

#include "TestPaths.h"
#include "telemetry/DrmFdinfo.h"

using namespace lorascope::telemetry;

namespace {
const std::filesystem::path kProc =
    std::filesystem::path(lstest::sourcePath("tests/telemetry/data")) / "amdgpu-linux-6.8" / "proc";
constexpr std::uint64_t kMiB = 1 << 20;
}  // namespace

class TestTelemetryFdinfo : public QObject {
  Q_OBJECT

 private slots:
  void parsesLegacyAmdgpuKeys() {
    const auto usage = parseDrmFdinfo(
        "pos:\t0\ndrm-driver:\tamdgpu\ndrm-client-id:\t42\ndrm-pdev:\t0000:03:00.0\n"
        "drm-memory-vram:\t2048 KiB\ndrm-memory-gtt: \t3 MiB\ndrm-memory-cpu: \t0 KiB\n"
        "amd-memory-visible-vram:\t999 KiB\ndrm-engine-gfx:\t12 ns\n");
    QVERIFY(usage.has_value());
    QCOMPARE(usage->driver, std::string("amdgpu"));
    QCOMPARE(usage->clientId, std::uint64_t{42});
    QCOMPARE(usage->pdev, std::string("0000:03:00.0"));
    QCOMPARE(usage->vramBytes.value(), 2 * kMiB);
    QCOMPARE(usage->gttBytes.value(), 3 * kMiB);
  }

  void prefersResidentOverTotalInGenericKeys() {
    const auto usage = parseDrmFdinfo(
        "drm-driver:\tamdgpu\ndrm-client-id:\t5\ndrm-total-vram:\t300 MiB\n"
        "drm-shared-vram:\t0\ndrm-resident-vram:\t256 MiB\ndrm-total-gtt:\t4096\n");
    QVERIFY(usage.has_value());
    QCOMPARE(usage->vramBytes.value(), 256 * kMiB);
    QCOMPARE(usage->gttBytes.value(), std::uint64_t{4096});  // no unit = bytes
  }

  void notADrmClientWithoutDriverOrClientId() {
    QVERIFY(!parseDrmFdinfo("pos:\t0\nflags:\t02\nmnt_id:\t25\n").has_value());
    QVERIFY(!parseDrmFdinfo("drm-driver:\tamdgpu\ndrm-memory-vram:\t1 KiB\n").has_value());
    QVERIFY(!parseDrmFdinfo("drm-driver:\tamdgpu\ndrm-client-id:\tseven\n").has_value());
    QVERIFY(!parseDrmFdinfo("").has_value());
  }

  void malformedSizesStayNotAvailable() {
    const auto usage = parseDrmFdinfo(
        "drm-driver:\tamdgpu\ndrm-client-id:\t1\ndrm-memory-vram:\tlots KiB\n"
        "drm-memory-gtt:\t12 parsecs\nno colon here\n");
    QVERIFY(usage.has_value());
    QVERIFY(!usage->vramBytes);
    QVERIFY(!usage->gttBytes);
  }

  void scanDedupesClientsAndIgnoresOtherDrivers() {
    const DrmScanResult scan = scanDrmClients(kProc, "amdgpu");
    QCOMPARE(scan.processes.size(), std::size_t{3});
    const DrmProcessUsage& python = scan.processes[0];
    QCOMPARE(python.pid, std::uint32_t{1200});
    QCOMPARE(python.name, std::string("python3"));
    QCOMPARE(python.pdev, std::string("0000:03:00.0"));
    // client 7 on fds 3 and 4 counted once (1 GiB) + client 9 (512 MiB)
    QCOMPARE(python.vramBytes.value(), 1536 * kMiB);
    QCOMPARE(python.gttBytes.value(), 2 * kMiB);
    QCOMPARE(scan.processes[1].pid, std::uint32_t{1300});
    QCOMPARE(scan.processes[1].vramBytes.value(), 64 * kMiB);
    // 1400 shares client 7 with its parent and gets no row; 1500 uses the generic keys
    QCOMPARE(scan.processes[2].pid, std::uint32_t{1500});
    QCOMPARE(scan.processes[2].name, std::string("llama-server"));
    QCOMPARE(scan.processes[2].vramBytes.value(), 256 * kMiB);
    QCOMPARE(scan.unreadableProcesses, 1);  // 1700
  }

  void scanOfOtherDriverFindsItsClientsOnly() {
    const DrmScanResult scan = scanDrmClients(kProc, "i915");
    QCOMPARE(scan.processes.size(), std::size_t{1});
    QCOMPARE(scan.processes[0].pid, std::uint32_t{1600});
    QCOMPARE(scan.processes[0].gttBytes.value(), 8 * kMiB);
  }

  void missingProcRootGivesNothing() {
    const DrmScanResult scan = scanDrmClients(kProc / "does-not-exist", "amdgpu");
    QVERIFY(scan.processes.empty());
    QCOMPARE(scan.unreadableProcesses, 0);
  }
};

QTEST_GUILESS_MAIN(TestTelemetryFdinfo)
#include "test_telemetry_fdinfo.moc"
