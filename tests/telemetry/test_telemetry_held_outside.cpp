// test_telemetry_held_outside.cpp — "who holds my VRAM": driver used − our reserved, attributed
// to the listed processes; our own runtime overhead; the plain "nobody listed" answer with advice
// per platform; unknown readings stay unknown.
#include <QtTest>

#include "telemetry/HeldOutside.h"

using namespace lorascope::telemetry;

namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
constexpr std::uint32_t kOurPid = 4242;

HeldOutsideInput input(std::optional<std::uint64_t> usedBytes, std::uint64_t reservedBytes,
                       std::string provider = "rocm-smi") {
  HeldOutsideInput in;
  in.device.index = 0;
  in.device.vramTotalBytes = 20 * kGiB;
  in.device.vramUsedBytes = usedBytes;
  in.ourReservedBytes = reservedBytes;
  in.ourPids = {kOurPid};
  in.provider = std::move(provider);
  return in;
}

ProcessReading process(std::uint32_t pid, std::string name, std::optional<std::uint64_t> bytes,
                       std::optional<int> device = 0) {
  ProcessReading p;
  p.pid = pid;
  p.name = std::move(name);
  p.vramBytes = bytes;
  p.deviceIndex = device;
  return p;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

class TestTelemetryHeldOutside : public QObject {
  Q_OBJECT

 private slots:
  void listedProcessesExplainTheDifference() {
    HeldOutsideInput in = input(14 * kGiB, 4 * kGiB);
    in.processes = {process(kOurPid, "lorascope-train", 4 * kGiB + 300 * kMiB),
                    process(1300, "Xorg", 300 * kMiB), process(1200, "python3", 9 * kGiB),
                    process(1900, "other-gpu", 5 * kGiB, 1)};  // device 1: not counted
    const HeldOutsideReport r = diagnoseHeldOutside(in);
    QCOMPARE(r.heldOutsideBytes.value(), 10 * kGiB);
    QCOMPARE(r.ourRuntimeOverheadBytes.value(), 300 * kMiB);
    QCOMPARE(r.otherProcesses.size(), std::size_t{2});
    QCOMPARE(r.otherProcesses[0].pid, std::uint32_t{1200});  // largest first
    QCOMPARE(r.unattributedBytes.value(), 10 * kGiB - 9 * kGiB - 300 * kMiB - 300 * kMiB);
    QVERIFY(!r.nobodyElseListed);
    QVERIFY(r.advice.empty());
    QVERIFY(contains(r.summary, "PID 1200 python3, 9.00 GiB"));
  }

  void nobodyListedSaysSoWithAdvice() {
    // The user's note: rocm-smi shows 99% used, PyTorch almost nothing, no process found.
    const HeldOutsideReport r = diagnoseHeldOutside(input(19800 * kMiB, 200 * kMiB));
    QCOMPARE(r.heldOutsideBytes.value(), 19600 * kMiB);
    QCOMPARE(r.unattributedBytes.value(), 19600 * kMiB);
    QVERIFY(r.nobodyElseListed);
    QVERIFY(contains(r.summary, "no other process is listed"));
    QVERIFY(contains(r.summary, "another container"));
    QVERIFY(r.advice.size() >= 2);
    QVERIFY(contains(r.advice[0], "rocm-smi --showpids"));
  }

  void nvidiaAdviceNamesNvidiaTools() {
    const HeldOutsideReport r = diagnoseHeldOutside(input(30 * kGiB, 0, "nvml"));
    QVERIFY(!r.advice.empty());
    QVERIFY(contains(r.advice[0], "nvidia-smi --query-compute-apps"));
  }

  void driverOverheadAloneNeedsNoAdvice() {
    const HeldOutsideReport r = diagnoseHeldOutside(input(2 * kGiB + 100 * kMiB, 2 * kGiB));
    QCOMPARE(r.heldOutsideBytes.value(), 100 * kMiB);
    QVERIFY(r.advice.empty());
    QVERIFY(contains(r.summary, "within what the driver usually keeps"));
  }

  void unknownUsedStaysUnknown() {
    const HeldOutsideReport r = diagnoseHeldOutside(input(std::nullopt, kGiB));
    QVERIFY(!r.heldOutsideBytes);
    QVERIFY(!r.unattributedBytes);
    QVERIFY(contains(r.summary, "n/a"));
  }

  void reservedAboveUsedClampsAndSaysWhy() {
    const HeldOutsideReport r = diagnoseHeldOutside(input(kGiB, 2 * kGiB));
    QCOMPARE(r.heldOutsideBytes.value(), std::uint64_t{0});
    QVERIFY(contains(r.summary, "reserves more than the driver shows used"));
  }

  void listedWithoutNumbersCountsAsListed() {
    HeldOutsideInput in = input(12 * kGiB, 0, "nvml");
    in.processes = {process(777, "", std::nullopt)};
    const HeldOutsideReport r = diagnoseHeldOutside(in);
    QVERIFY(!r.nobodyElseListed);
    QVERIFY(!r.otherProcesses[0].bytes);
    QVERIFY(contains(r.summary, "not explained by the processes listed"));
    QVERIFY(!r.advice.empty());
  }
};

QTEST_GUILESS_MAIN(TestTelemetryHeldOutside)
#include "test_telemetry_held_outside.moc"
