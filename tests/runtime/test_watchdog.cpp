// test_watchdog.cpp — the hang rule on an injected clock: quiet before the budget, a report naming
// the head-of-queue op (or the host's op), its stream and the queues after it, progress and
// completions resetting it; budgets of the op's longest time + grace, longer for the first steps;
// the CPU backend's ops reach the watchdog and the fault injector.
#include <QtTest>

#include "FakeEvents.h"
#include "compute/Backend.h"
#include "runtime/LaunchControl.h"
#include "runtime/Watchdog.h"

#include <thread>

using namespace lorascope::runtime;
using lorascope::runtime::testing::FakeClock;
using lorascope::runtime::testing::FakeEvents;

class TestWatchdog : public QObject {
  Q_OBJECT

 private slots:
  void reportsTheOpAtTheHeadOfTheQueue() {
    FakeClock clock;
    Watchdog watchdog({10'000}, clock.fn());
    const PendingOp head{"attention_backward", 41, clock.nowMs + 500};
    clock.nowMs += 9'999;
    QVERIFY(!watchdog.check(1000, head).has_value());
    clock.nowMs += 1;
    const auto report = watchdog.check(1000, head);
    QVERIFY(report.has_value());
    QCOMPARE(report->op, std::string("attention_backward"));
    QVERIFY(report->opIsQueued);
    QCOMPARE(report->idleMs, std::int64_t{10'000});
    QCOMPARE(report->waitingMs, std::int64_t{9'500});
    QCOMPARE(report->error.category, ErrorCategory::Hang);
    QVERIFY2(report->message.find("'attention_backward' (submission #41, waiting 9.5 s)") !=
                 std::string::npos,
             report->message.c_str());
  }

  void progressAndCompletionsResetTheClock() {
    FakeClock clock;
    Watchdog watchdog({10'000}, clock.fn());
    clock.nowMs += 8'000;
    watchdog.noteProgress();
    clock.nowMs += 8'000;
    QVERIFY(!watchdog.check(0, std::nullopt).has_value());
    // A completion more recent than the last progress counts too.
    const std::int64_t completion = clock.nowMs;
    clock.nowMs += 9'000;
    QVERIFY(!watchdog.check(completion, std::nullopt).has_value());
    clock.nowMs += 1'000;
    QVERIFY(watchdog.check(completion, std::nullopt).has_value());
  }

  void namesTheHostOpWhenNothingIsQueued() {
    FakeClock clock;
    Watchdog watchdog({5'000}, clock.fn());
    watchdog.noteHostOp("adamw");
    clock.nowMs += 6'000;
    const auto report = watchdog.check(0, std::nullopt);
    QVERIFY(report.has_value());
    QCOMPARE(report->op, std::string("adamw"));
    QVERIFY(!report->opIsQueued);
    QVERIFY(report->message.find("the host is in 'adamw'") != std::string::npos);
  }

  void rejectsANonPositiveLimit() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Watchdog({0}));
  }

  void aHostOpGetsItsLongestTimePlusTheGrace() {
    FakeClock clock;
    Watchdog watchdog({10'000}, clock.fn());
    watchdog.noteHostOp("matmul");
    clock.nowMs += 3'000;
    watchdog.noteProgress();  // matmul took 3 s
    watchdog.noteHostOp("matmul");
    clock.nowMs += 12'999;
    QVERIFY(!watchdog.check(0, std::nullopt).has_value());
    clock.nowMs += 1;
    const auto report = watchdog.check(0, std::nullopt);
    QVERIFY(report.has_value());
    QCOMPARE(report->expectedMs, std::int64_t{3'000});
    QCOMPARE(report->budgetMs, std::int64_t{13'000});
    QCOMPARE(report->idleMs, std::int64_t{13'000});
    QCOMPARE(report->stream, std::string("host"));
    QVERIFY2(
        report->message.find("the longest it took before, 3.0 s, + 10.0 s") != std::string::npos,
        report->message.c_str());
  }

  // The recorded H100 hang (hang@adamw#5): the host stuck in an op that had always returned at
  // once, nothing queued. The report says the GPU is idle and waits for the host, and gives the
  // budget without a "longest it took before, 0.0 s" that reads as a measurement.
  void aHostHangWithNothingQueuedBlamesTheHost() {
    FakeClock clock;
    Watchdog watchdog({10'000, 120'000, 2}, clock.fn());
    for (std::int64_t step = 1; step <= 5; ++step) {
      watchdog.noteStepBegun(step);
      watchdog.noteHostOp("adamw", 7);
      watchdog.noteProgress();  // an asynchronous launch: it returns at once
    }
    watchdog.noteHostOp("adamw", 7);
    clock.nowMs += 10'400;
    QueueView view;
    view.hostStream = "compute";
    view.state = "compute 0 in flight";
    const auto report = watchdog.check(view);
    QVERIFY(report.has_value());
    QCOMPARE(report->step, std::int64_t{5});
    const std::string& m = report->message;
    QVERIFY2(m.find("hang in step 5: no progress for 10.4 s") != std::string::npos, m.c_str());
    QVERIFY2(
        m.find("no GPU work is queued, so the GPU is idle: the host is in 'adamw' (which "
               "launches on stream compute) and has not returned for 10.4 s") != std::string::npos,
        m.c_str());
    QVERIFY2(m.find("over its budget of 10.0 s (the grace alone: it has not taken 0.1 s before)") !=
                 std::string::npos,
             m.c_str());
    QVERIFY2(m.find("before, 0.0 s") == std::string::npos, m.c_str());
    QVERIFY2(m.find("The GPU made no progress") == std::string::npos, m.c_str());
    // The way out when the op was only slow: the variable, with today's budgets to raise.
    QVERIFY2(
        m.ends_with(" If the op is only slow, LORASCOPE_WATCHDOG=10,120 (GRACE_S,FIRST_STEPS_S, "
                    "today's budgets) with larger values, in the profile's environment or "
                    "LoRAscope's, gives it longer."),
        m.c_str());
  }

  void theFirstStepsGetTheLongerBudget() {
    FakeClock clock;
    Watchdog watchdog({10'000, 120'000, 2}, clock.fn());
    watchdog.noteStepBegun(1);
    watchdog.noteHostOp("matmul");
    clock.nowMs += 119'999;
    QVERIFY(!watchdog.check(0, std::nullopt).has_value());  // autotuning, compiling
    clock.nowMs += 1;
    const auto first = watchdog.check(0, std::nullopt);
    QVERIFY(first.has_value());
    QCOMPARE(first->step, std::int64_t{1});
    QVERIFY2(first->message.find("hang in step 1") != std::string::npos &&
                 first->message.find("the first 2 steps' budget of 120.0 s") != std::string::npos,
             first->message.c_str());
    watchdog.noteStepBegun(2);
    watchdog.noteStepBegun(3);  // past the first steps: the op's own budget
    watchdog.noteHostOp("rope");
    clock.nowMs += 10'000;
    QVERIFY(watchdog.check(0, std::nullopt).has_value());
  }

  void launchControlFeedsTheWatchdogFromItsQueues() {
    auto events = std::make_shared<FakeEvents>();
    FakeClock clock;
    LaunchControl control(events, {}, clock.fn());
    control.watchdog().setConfig({3'000, 60'000, 0});
    control.queues().nameStream(9, "compute");
    control.beginStep(40);
    control.enterOp("matmul", 9);
    control.queues().onSubmit(9, "matmul");
    control.watchdog().noteProgress();
    clock.nowMs += 2'000;
    events->finishAll(9);
    control.queues().sample();  // matmul completes at t+2 s: its longest time is 2 s
    control.enterOp("rope", 9);
    control.queues().onSubmit(9, "rope");
    control.watchdog().noteProgress();
    clock.nowMs += 2'999;
    QVERIFY(!control.checkHang().has_value());
    clock.nowMs += 1;
    const auto report = control.checkHang();
    QVERIFY(report.has_value());
    QCOMPARE(report->op, std::string("rope"));
    QCOMPARE(report->stream, std::string("compute"));
    QCOMPARE(report->waitingMs, std::int64_t{3'000});
    QCOMPARE(report->queues, std::string("compute 1 in flight"));
    QCOMPARE(report->step, std::int64_t{40});
    QVERIFY2(
        report->message.find("on stream compute; queues: compute 1 in flight") != std::string::npos,
        report->message.c_str());
    // A queued matmul gets the 2 s it took before on top of the grace.
    events->finishAll(9);
    control.queues().sample();
    control.queues().onSubmit(9, "matmul");
    clock.nowMs += 4'999;
    QVERIFY(!control.checkHang().has_value());
    clock.nowMs += 1;
    QCOMPARE(control.checkHang()->budgetMs, std::int64_t{5'000});
    // Between steps nothing is a hang (checkpoints, commands, a paused run).
    control.endStep();
    clock.nowMs += 60'000;
    QVERIFY(!control.checkHang().has_value());
    QCOMPARE(control.sample().queues.at(0).depth, std::uint64_t{1});
  }

  void aHangAtTheStepBoundaryNamesIt() {
    FakeClock clock;
    LaunchControl control(nullptr, parseFaultSpec("hang@step#3"), clock.fn());
    control.watchdog().setConfig({10'000, 60'000, 0});
    std::thread stepper([&] {
      try {
        control.beginStep(3);
      } catch (const InjectedFault&) {
      }
    });
    while (!control.faults().hanging()) {
      std::this_thread::yield();
    }
    clock.nowMs += 10'000;
    const auto report = control.checkHang();
    control.faults().releaseHangs();
    stepper.join();
    QVERIFY(report.has_value());
    QCOMPARE(report->op, std::string("step_begin"));
    QCOMPARE(report->stream, std::string("host"));
  }

  // A generation is watched from beginGeneration() to endStep(), with the first steps' budget for
  // an engine's first generations, and its report names no step and advises on generating.
  void aGenerationIsWatchedLikeAStep() {
    FakeClock clock;
    LaunchControl control(nullptr, {}, clock.fn(), {2'000, 5'000, 1});
    control.enterOp("attention_cached");
    clock.nowMs += 60'000;
    QVERIFY(!control.checkHang().has_value());  // no generation, no step: nothing is checked
    control.beginGeneration();
    control.enterOp("attention_cached");
    clock.nowMs += 4'999;
    QVERIFY(!control.checkHang().has_value());  // the first generation: the 5 s budget
    clock.nowMs += 1;
    const auto report = control.checkHang();
    QVERIFY(report.has_value());
    QCOMPARE(report->op, std::string("attention_cached"));
    QCOMPARE(report->step, std::int64_t{0});
    QVERIFY2(report->message.starts_with("hang: no progress for 5.0 s, over the first 1 "
                                         "generations' budget of 5.0 s"),
             report->message.c_str());
    // Its advice speaks of generating, not of a run's micro-batches.
    QVERIFY2(report->message.find("generate again") != std::string::npos &&
                 report->message.find("micro-batch") == std::string::npos,
             report->message.c_str());
    control.endStep();
    QVERIFY(!control.checkHang().has_value());
    control.beginGeneration();  // the second: the op's longest time (the 5 s above) + the grace
    control.enterOp("attention_cached");
    clock.nowMs += 6'999;
    QVERIFY(!control.checkHang().has_value());
    clock.nowMs += 1;
    QCOMPARE(control.checkHang()->budgetMs, std::int64_t{7'000});
  }

  // LORASCOPE_WATCHDOG's GRACE_S[,FIRST_STEPS_S]; a bad value names the variable.
  void theBudgetsParseFromTheirSpec() {
    QCOMPARE(parseWatchdogSpec("2").graceMs, std::int64_t{2'000});
    QCOMPARE(parseWatchdogSpec("2").firstStepsMs, WatchdogConfig{}.firstStepsMs);
    const WatchdogConfig both = parseWatchdogSpec("0.5,30");
    QCOMPARE(both.graceMs, std::int64_t{500});
    QCOMPARE(both.firstStepsMs, std::int64_t{30'000});
    for (const char* bad : {"", "x", "0", "-1", "2,", "2,x", "1s", "2,3,4"}) {
      try {
        parseWatchdogSpec(bad);
        QFAIL(bad);
      } catch (const std::invalid_argument& e) {
        QVERIFY2(std::string(e.what()).starts_with("LORASCOPE_WATCHDOG: '"), e.what());
      }
    }
  }

  // The CPU backend's ops go through the process-wide LaunchControl like GPU launches: the
  // watchdog sees them and fault rules fire on them.
  void cpuBackendOpsReachTheWatchdogAndTheFaultInjector() {
    LaunchControl& control = launchControl();
    control.faults().configure(parseFaultSpec("oom@matmul#2"));
    const auto cpu = lorascope::compute::createCpuBackend();
    using lorascope::compute::DType;
    lorascope::compute::Tensor a = cpu->upload(std::vector<float>(4, 1.0f), DType::F32, {2, 2});
    lorascope::compute::Tensor c = cpu->empty(DType::F32, {2, 2});
    cpu->matmul(a, false, a, false, c, 1.0f, 0.0f);
    QVERIFY_THROWS_EXCEPTION(InjectedFault, cpu->matmul(a, false, a, false, c, 1.0f, 0.0f));
    QCOMPARE(control.faults().history().at(0).op, std::string("matmul"));
    control.faults().configure({});
    control.beginStep(1);
    cpu->addInPlace(c, a);
    control.endStep();
    QCOMPARE(control.sample().hang.has_value(), false);
  }
};

QTEST_APPLESS_MAIN(TestWatchdog)
#include "test_watchdog.moc"
