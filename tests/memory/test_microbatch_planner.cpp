// test_microbatch_planner.cpp — auto micro-batch: largest fitting divisor, accumulation keeps the
// effective batch, the safety margin, stepping down after an out-of-memory, bad input.
#include <QtTest>

#include "memory/MicroBatchPlanner.h"

using namespace lorascope::memory;

namespace {
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// 10 GiB fixed; 1 MiB per token at 1024 tokens = 1 GiB of activations per sequence.
PlanRequest request(std::uint64_t freeBytes, std::int64_t effectiveBatch) {
  PlanRequest r;
  r.model = {10 * kGiB, std::uint64_t{1} << 20};
  r.sequenceLength = 1024;
  r.effectiveBatch = effectiveBatch;
  r.freeBytes = freeBytes;
  return r;
}
}  // namespace

class TestMicroBatchPlanner : public QObject {
  Q_OBJECT

 private slots:
  void picksTheLargestMicroBatchThatFits() {
    // Budget 16 GiB * 0.9 = 14.4 GiB: 10 + 4 fits, 10 + 5 does not.
    const MicroBatchPlan plan = planMicroBatch(request(16 * kGiB, 16));
    QVERIFY(plan.fits);
    QCOMPARE(plan.largestFittingMicroBatch, std::int64_t{4});
    QCOMPARE(plan.microBatch, std::int64_t{4});
    QCOMPARE(plan.gradientAccumulation, std::int64_t{4});
    QCOMPARE(plan.effectiveBatch, std::int64_t{16});
    QCOMPARE(plan.plannedPeakBytes, 14 * kGiB);
    QCOMPARE(plan.arenaBytes, 4 * kGiB);
    QVERIFY2(plan.summary.find("micro-batch 4 x 4 accumulation = effective batch 16") !=
                 std::string::npos,
             plan.summary.c_str());
  }

  void keepsTheEffectiveBatchExact() {
    // 4 fits, but 6 sequences per step split evenly only as 3 x 2.
    const MicroBatchPlan plan = planMicroBatch(request(16 * kGiB, 6));
    QCOMPARE(plan.largestFittingMicroBatch, std::int64_t{4});
    QCOMPARE(plan.microBatch, std::int64_t{3});
    QCOMPARE(plan.gradientAccumulation, std::int64_t{2});
  }

  void appliesTheSafetyMargin() {
    PlanRequest r = request(15 * kGiB, 8);
    r.safetyMargin = 0.0;
    QCOMPARE(planMicroBatch(r).microBatch, std::int64_t{4});  // 14 GiB <= 15 GiB
    r.safetyMargin = 0.10;  // budget 13.5 GiB: 3 would fit, but 8 divides only as 2 x 4
    const MicroBatchPlan plan = planMicroBatch(r);
    QCOMPARE(plan.largestFittingMicroBatch, std::int64_t{3});
    QCOMPARE(plan.microBatch, std::int64_t{2});
    QCOMPARE(plan.budgetBytes, static_cast<std::uint64_t>(15.0 * 0.9 * kGiB));
  }

  void respectsTheUsersUpperBound() {
    PlanRequest r = request(64 * kGiB, 16);
    r.maxMicroBatch = 2;
    QCOMPARE(planMicroBatch(r).microBatch, std::int64_t{2});
  }

  void saysWhenNothingFits() {
    const MicroBatchPlan plan = planMicroBatch(request(10 * kGiB, 4));
    QVERIFY(!plan.fits);
    QCOMPARE(plan.microBatch, std::int64_t{0});
    QCOMPARE(plan.plannedPeakBytes, 11 * kGiB);
    QVERIFY(plan.summary.find("activation checkpointing") != std::string::npos);
  }

  void stepsDownAfterAnOutOfMemory() {
    const PlanRequest r = request(64 * kGiB, 16);
    const MicroBatchPlan first = planMicroBatch(r);
    QCOMPARE(first.microBatch, std::int64_t{16});
    const MicroBatchPlan second = stepDownAfterOom(r, first);
    QCOMPARE(second.microBatch, std::int64_t{8});
    QCOMPARE(second.gradientAccumulation, std::int64_t{2});
    QVERIFY(second.summary.find("out of memory at micro-batch 16") != std::string::npos);
    MicroBatchPlan last = second;
    while (last.microBatch > 1) {
      last = stepDownAfterOom(r, last);
    }
    QCOMPARE(last.gradientAccumulation, std::int64_t{16});
    const MicroBatchPlan none = stepDownAfterOom(r, last);
    QVERIFY(!none.fits);
  }

  void rejectsBadRequests() {
    PlanRequest r = request(16 * kGiB, 0);
    QVERIFY_THROWS_EXCEPTION(PlanError, planMicroBatch(r));
    r = request(16 * kGiB, 4);
    r.safetyMargin = 1.0;
    QVERIFY_THROWS_EXCEPTION(PlanError, planMicroBatch(r));
    r = request(16 * kGiB, 4);
    r.sequenceLength = -1;
    QVERIFY_THROWS_EXCEPTION(PlanError, planMicroBatch(r));
  }

  void saturatesInsteadOfOverflowing() {
    const MemoryModel huge{1, std::uint64_t{1} << 62};
    QCOMPARE(plannedPeakBytes(huge, 1 << 20, 1 << 20), std::numeric_limits<std::uint64_t>::max());
  }
};

QTEST_APPLESS_MAIN(TestMicroBatchPlanner)
#include "test_microbatch_planner.moc"
