// test_fragmentation_scenario.cpp — the qualitative result of the fragmentation scenario
// (scenario_fragmentation prints the numbers): on a contiguous 20 GiB device with sequence lengths
// of 256-4096 tokens, plain caching loses steps to out-of-memory that max_split_size avoids, and
// the planned arena allocates nothing in steady state with the least fragmentation and reserve.
#include <QtTest>

#include "FragmentationScenario.h"

using namespace lorascope::memory;
using namespace lorascope::memory::scenario;

class TestFragmentationScenario : public QObject {
  Q_OBJECT

 private slots:
  void comparesPlainSplitAndArena() {
    const ScenarioShape shape;
    AllocatorPolicy split;
    split.maxSplitBytes = std::size_t{64} << 20;
    const ScenarioResult plain = runScenario(shape, AllocatorPolicy{});
    const ScenarioResult limited = runScenario(shape, split);
    const ScenarioResult arena = runScenario(shape, arenaPolicyFor(shape));

    // Fragmentation makes plain caching run out although the tensors need < 17 GiB of 20.
    QVERIFY(plain.ooms > 0);
    QVERIFY(plain.peakAllocatedBytes < shape.deviceBytes * 85 / 100);
    QCOMPARE(limited.ooms, std::uint64_t{0});
    QVERIFY(limited.meanFragmentationAtPeak < plain.meanFragmentationAtPeak);
    // ... at the price of device allocations every step.
    QVERIFY(limited.steadyStateDeviceAllocs > 0);

    QCOMPARE(arena.ooms, std::uint64_t{0});
    QCOMPARE(arena.arenaOverflows, std::uint64_t{0});
    QCOMPARE(arena.steadyStateDeviceAllocs, std::uint64_t{0});
    QCOMPARE(arena.stepsCompleted, shape.steps);
    QVERIFY(arena.meanFragmentationAtPeak < limited.meanFragmentationAtPeak / 4);
    QVERIFY(arena.peakReservedBytes < plain.peakReservedBytes);
  }

  void scenarioIsDeterministic() {
    ScenarioShape shape;
    shape.steps = 40;
    const ScenarioResult a = runScenario(shape, AllocatorPolicy{});
    const ScenarioResult b = runScenario(shape, AllocatorPolicy{});
    QCOMPARE(a.deviceAllocs, b.deviceAllocs);
    QCOMPARE(a.meanFragmentationAtPeak, b.meanFragmentationAtPeak);
  }
};

QTEST_APPLESS_MAIN(TestFragmentationScenario)
#include "test_fragmentation_scenario.moc"
