// test_watchdog.cpp — the hang rule on an injected clock: quiet before the limit, a report naming
// the head-of-queue op (or the host's op) after it, progress and completions resetting it.
#include <QtTest>

#include "FakeEvents.h"
#include "runtime/LaunchControl.h"
#include "runtime/Watchdog.h"

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

  void launchControlFeedsTheWatchdogFromItsQueues() {
    auto events = std::make_shared<FakeEvents>();
    FakeClock clock;
    LaunchControl control(events, {}, clock.fn());
    control.watchdog().setConfig({3'000});
    control.enterOp("matmul");
    control.queues().onSubmit(9, "matmul");
    control.watchdog().noteProgress();
    clock.nowMs += 2'000;
    events->finishAll(9);
    control.queues().sample();  // completes at t+2 s
    control.enterOp("rope");
    control.queues().onSubmit(9, "rope");
    clock.nowMs += 2'999;
    QVERIFY(!control.checkHang().has_value());
    clock.nowMs += 1;
    const auto report = control.checkHang();
    QVERIFY(report.has_value());
    QCOMPARE(report->op, std::string("rope"));
    QCOMPARE(report->waitingMs, std::int64_t{3'000});
  }
};

QTEST_APPLESS_MAIN(TestWatchdog)
#include "test_watchdog.moc"
