// test_fault_injection.cpp — the LORASCOPE_FAULTS spec, Nth-launch and step rules, seeded random
// faults, sticky illegal addresses, injected hangs, and the ledger that makes rules fire once per
// run across engine restarts.
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/FaultInjection.h"
#include "runtime/LaunchControl.h"

using namespace lorascope::runtime;

namespace {
// Runs `count` launches of `op`; returns the 1-based launches that threw.
std::vector<int> launchesThatFail(FaultInjector& injector, const char* op, int count) {
  std::vector<int> failed;
  for (int i = 1; i <= count; ++i) {
    try {
      injector.atLaunch(op);
    } catch (const InjectedFault&) {
      failed.push_back(i);
    }
  }
  return failed;
}
}  // namespace

class TestFaultInjection : public QObject {
  Q_OBJECT

 private slots:
  void parsesTheSpec() {
    const FaultConfig c = parseFaultSpec(
        "oom@matmul#3, hang@step#10,illegal_address@*#7,random=0.25,seed=9,random_kinds=blas|oom");
    QCOMPARE(c.rules.size(), std::size_t{3});
    QCOMPARE(c.rules[0].kind, FaultKind::OutOfMemory);
    QCOMPARE(QString::fromStdString(c.rules[0].op), QString("matmul"));
    QCOMPARE(c.rules[0].nth, std::uint64_t{3});
    QCOMPARE(c.rules[1].kind, FaultKind::Hang);
    QCOMPARE(QString::fromStdString(c.rules[1].op), QString("step"));
    QCOMPARE(c.rules[2].op, std::string("*"));
    QCOMPARE(c.randomRate, 0.25);
    QCOMPARE(c.seed, std::uint32_t{9});
    QCOMPARE(c.randomKinds.size(), std::size_t{2});
    QVERIFY(parseFaultSpec("").empty());
  }

  void rejectsBadSpecsClearly() {
    for (const char* bad : {"segfault@matmul#1", "oom@matmul", "oom@matmul#0", "oom@#2", "random=2",
                            "random=x", "colour=red", "oom@matmul#-1", "random_kinds=oom|nope"}) {
      try {
        parseFaultSpec(bad);
        QFAIL(bad);
      } catch (const FaultSpecError& error) {
        QVERIFY2(QString(error.what()).contains("LORASCOPE_FAULTS"), error.what());
      }
    }
  }

  void firesAtTheNthLaunchOfTheNamedOp() {
    FaultInjector injector(parseFaultSpec("blas@matmul#3"));
    injector.atLaunch("rmsnorm_forward");  // other ops do not count
    QCOMPARE(launchesThatFail(injector, "matmul", 6), std::vector<int>{3});
    const auto history = injector.history();
    QCOMPARE(history.size(), std::size_t{1});
    QCOMPARE(history[0].kind, FaultKind::BlasInternal);
    QCOMPARE(history[0].count, std::uint64_t{3});
    try {
      FaultInjector again(parseFaultSpec("oom@*#1"));
      again.atLaunch("swiglu");
      QFAIL("expected an injected fault");
    } catch (const InjectedFault& fault) {
      QCOMPARE(fault.kind(), FaultKind::OutOfMemory);
      QCOMPARE(fault.op(), std::string("swiglu"));
      QCOMPARE(fault.errorName(), std::string("hipErrorOutOfMemory"));
      QVERIFY(QString(fault.what()).contains("[injected oom at 'swiglu' #1]"));
    }
  }

  void firesAtTheNamedStep() {
    FaultInjector injector(parseFaultSpec("oom@step#5"));
    for (int step = 0; step < 5; ++step) {
      injector.atStep(step);
      injector.atLaunch("matmul");  // launches never trigger a step rule
    }
    QVERIFY_THROWS_EXCEPTION(InjectedFault, injector.atStep(5));
    injector.atStep(5);  // a rule fires once
  }

  void illegalAddressStaysSticky() {
    FaultInjector injector(parseFaultSpec("illegal_address@rope#2"));
    QCOMPARE(launchesThatFail(injector, "rope", 4), (std::vector<int>{2, 3, 4}));
    QVERIFY_THROWS_EXCEPTION(InjectedFault, injector.atLaunch("anything"));
    injector.configure({});  // a restarted engine starts clean
    injector.atLaunch("rope");
  }

  void randomFaultsAreReproducibleWithTheSeed() {
    FaultInjector a(parseFaultSpec("random=0.05,seed=42,random_kinds=oom"));
    FaultInjector b(parseFaultSpec("random=0.05,seed=42,random_kinds=oom"));
    FaultInjector c(parseFaultSpec("random=0.05,seed=43,random_kinds=oom"));
    const std::vector<int> fa = launchesThatFail(a, "op", 2000);
    QCOMPARE(launchesThatFail(b, "op", 2000), fa);
    QVERIFY(launchesThatFail(c, "op", 2000) != fa);
    // 5% of 2000 launches: expect about 100; binomial sd is about 10.
    QVERIFY2(fa.size() > 50 && fa.size() < 150, std::to_string(fa.size()).c_str());
  }

  void hangBlocksUntilReleased() {
    FaultInjector injector(parseFaultSpec("hang@attention#1"));
    std::atomic<bool> threw{false};
    std::thread worker([&] {
      try {
        injector.atLaunch("attention");
      } catch (const InjectedFault& fault) {
        threw = fault.kind() == FaultKind::Hang;
      }
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!injector.hanging() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    QVERIFY(injector.hanging());
    QVERIFY(!threw.load());
    injector.releaseHangs();
    worker.join();
    QVERIFY(threw.load());
    QVERIFY(!injector.hanging());
  }

  void readsTheEnvironment() {
    qputenv(kFaultEnvVar, "oom@matmul#2");
    const FaultConfig c = faultConfigFromEnvironment();
    QCOMPARE(c.rules.size(), std::size_t{1});
    qputenv(kFaultEnvVar, "nonsense");
    QVERIFY_THROWS_EXCEPTION(FaultSpecError, faultConfigFromEnvironment());
    qunsetenv(kFaultEnvVar);
    QVERIFY(faultConfigFromEnvironment().empty());
  }

  void launchControlRunsFaultsOnCpuOps() {
    LaunchControl control(nullptr, parseFaultSpec("oom@matmul#2"));
    control.enterOp("matmul");
    QVERIFY_THROWS_EXCEPTION(InjectedFault, control.enterOp("matmul"));
    LaunchControl stepped(nullptr, parseFaultSpec("illegal_address@step#4"));
    for (int step = 0; step < 4; ++step) {
      stepped.beginStep(step);
    }
    QVERIFY_THROWS_EXCEPTION(InjectedFault, stepped.beginStep(4));
    QVERIFY_THROWS_EXCEPTION(InjectedFault, stepped.enterOp("rope"));  // sticky afterwards
    control.setPolicy({true, false});
    QCOMPARE(control.policy(), (LaunchPolicy{true, false}));
  }

  void aLedgerMakesEachRuleFireOncePerRun() {
    QTemporaryDir dir;
    const std::filesystem::path file = dir.filePath("faults.ledger").toStdString();
    const FaultLedger ledger(file);
    const char* spec = "oom@step#3,blas@step#3,oom@step#3,random=0.01,seed=5";
    // The first engine: every rule, the spec's seed; what fires is recorded before it acts.
    FaultConfig first = ledger.begin(parseFaultSpec(spec));
    QCOMPARE(first.rules.size(), std::size_t{3});
    QCOMPARE(first.seed, std::uint32_t{5});
    FaultInjector injector(first);
    std::vector<std::string> seen;
    injector.setObserver([&](const FiredFault& fault) {
      ledger.record(fault);
      seen.push_back(fault.rule);
    });
    QVERIFY_THROWS_EXCEPTION(InjectedFault, injector.atStep(3));
    QCOMPARE(seen, std::vector<std::string>{"oom@step#3"});
    // The restarted engine: the fired copy of the repeated rule is left out, draws use seed + 1.
    FaultConfig second = ledger.begin(parseFaultSpec(spec));
    QCOMPARE(second.rules.size(), std::size_t{2});
    QCOMPARE(toSpec(second.rules[0]), std::string("blas@step#3"));
    QCOMPARE(toSpec(second.rules[1]), std::string("oom@step#3"));
    QCOMPARE(second.seed, std::uint32_t{6});
    // A record torn by a SIGKILL (no newline) never happened, and does not swallow the next one.
    std::ofstream(file, std::ios::app) << "fired blas@st";
    FaultConfig third = ledger.begin(parseFaultSpec(spec));
    QCOMPARE(third.rules.size(), std::size_t{2});
    QCOMPARE(third.seed, std::uint32_t{7});
    QCOMPARE(ledger.begin(parseFaultSpec(spec)).seed, std::uint32_t{8});
    // No faults configured: no ledger is written.
    const FaultLedger unused(dir.filePath("unused").toStdString());
    QVERIFY(unused.begin(FaultConfig{}).empty());
    QVERIFY(!std::filesystem::exists(dir.filePath("unused").toStdString()));
  }
};

QTEST_APPLESS_MAIN(TestFaultInjection)
#include "test_fault_injection.moc"
