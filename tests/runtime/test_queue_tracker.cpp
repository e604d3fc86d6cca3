// test_queue_tracker.cpp — queue depth = submitted − completed per stream, completed events
// popped in order and pooled, failures surfaced, and the cpu flavour's "done at once".
#include <QtTest>

#include "FakeEvents.h"
#include "runtime/QueueTracker.h"

using namespace lorascope::runtime;
using lorascope::runtime::testing::FakeClock;
using lorascope::runtime::testing::FakeEvents;

class TestQueueTracker : public QObject {
  Q_OBJECT

 private slots:
  void depthIsSubmittedMinusCompleted() {
    auto events = std::make_shared<FakeEvents>();
    FakeClock clock;
    QueueTracker tracker(events, clock.fn());
    const char* ops[] = {"embed", "rmsnorm_forward", "matmul", "rope", "attention"};
    for (const char* op : ops) {
      tracker.onSubmit(7, op);
      clock.nowMs += 1;
    }
    QCOMPARE(tracker.depth(7), std::uint64_t{5});
    events->finishUpTo(7, 2);
    clock.nowMs = 2000;
    const auto samples = tracker.sample();
    QCOMPARE(samples.size(), std::size_t{1});
    QCOMPARE(samples[0].submitted, std::uint64_t{5});
    QCOMPARE(samples[0].completed, std::uint64_t{2});
    QCOMPARE(samples[0].depth, std::uint64_t{3});
    QVERIFY(samples[0].head.has_value());
    QCOMPARE(samples[0].head->op, std::string("matmul"));
    QCOMPARE(samples[0].head->sequence, std::uint64_t{3});
    QCOMPARE(samples[0].head->submittedAtMs, std::int64_t{1002});
    QCOMPARE(tracker.lastCompletionMs(), std::int64_t{2000});
    events->finishAll(7);
    QCOMPARE(tracker.sample()[0].depth, std::uint64_t{0});
    QVERIFY(!tracker.oldestPending().has_value());
  }

  // A step shorter than the reading period: it queues and drains between two readings, and only
  // the polls in between see it. The reading's peak is the most in flight at one poll; launches
  // that completed before a poll saw them are not counted as in flight at once.
  void peakIsTheMostInFlightAtAPollSinceTheLastReading() {
    auto events = std::make_shared<FakeEvents>();
    QueueTracker tracker(events);
    tracker.onSubmit(3, "warmup");
    events->finishAll(3);
    QCOMPARE(tracker.sample()[0].peak, std::uint64_t{0});
    for (int i = 0; i < 120; ++i) {
      tracker.onSubmit(3, "matmul");
    }
    events->finishUpTo(3, 40);  // the GPU is 40 launches in (1 warmup + 39 of the step)
    tracker.poll();
    QCOMPARE(tracker.depth(3), std::uint64_t{81});
    for (int i = 0; i < 20; ++i) {
      tracker.onSubmit(3, "matmul");
    }
    events->finishUpTo(3, 139);
    tracker.poll();  // 2 in flight now; the peak stays 81
    events->finishAll(3);
    const auto reading = tracker.sample();
    QCOMPARE(reading[0].depth, std::uint64_t{0});
    QCOMPARE(reading[0].peak, std::uint64_t{81});
    // The next reading starts from the depth at this one: an idle interval reads 0.
    QCOMPARE(tracker.sample()[0].peak, std::uint64_t{0});
    // Host-bound: each launch completes before the next poll sees it, so one is in flight at a
    // time however many ran in between.
    for (int i = 0; i < 50; ++i) {
      tracker.onSubmit(3, "tiny");
      events->finishAll(3);
      tracker.poll();
    }
    QCOMPARE(tracker.sample()[0].peak, std::uint64_t{0});
  }

  void completionIsAPrefixOfTheStream() {
    auto events = std::make_shared<FakeEvents>();
    QueueTracker tracker(events);
    tracker.onSubmit(1, "a");
    tracker.onSubmit(1, "b");
    events->finishUpTo(1, 0);  // the first is still running: nothing after it counts as done
    QCOMPARE(tracker.sample()[0].depth, std::uint64_t{2});
  }

  void streamsAreCountedApart() {
    auto events = std::make_shared<FakeEvents>();
    FakeClock clock;
    QueueTracker tracker(events, clock.fn());
    tracker.onSubmit(1, "compute");
    clock.nowMs += 5;
    tracker.onSubmit(2, "copy");
    tracker.onSubmit(2, "copy");
    events->finishAll(1);
    tracker.sample();
    QCOMPARE(tracker.depth(1), std::uint64_t{0});
    QCOMPARE(tracker.depth(2), std::uint64_t{2});
    QCOMPARE(tracker.oldestPending()->op, std::string("copy"));
  }

  void reusesPooledEvents() {
    auto events = std::make_shared<FakeEvents>();
    {
      QueueTracker tracker(events);
      for (int round = 0; round < 10; ++round) {
        for (int i = 0; i < 4; ++i) {
          tracker.onSubmit(1, "op");
        }
        events->finishAll(1);
        tracker.sample();
      }
      QCOMPARE(tracker.pooledEventCount(), std::size_t{4});
      QCOMPARE(events->created, 4);
    }
    QCOMPARE(events->destroyed, 4);  // the pool is returned on destruction
  }

  void reportsFailedEvents() {
    auto events = std::make_shared<FakeEvents>();
    QueueTracker tracker(events);
    tracker.onSubmit(1, "matmul");
    events->failing = true;
    const auto samples = tracker.sample();
    QCOMPARE(samples[0].depth, std::uint64_t{1});
    QVERIFY(samples[0].error.find("hipErrorIllegalAddress") != std::string::npos);
  }

  void streamsAreNamedAndForgotten() {
    auto events = std::make_shared<FakeEvents>();
    QueueTracker tracker(events);
    tracker.onSubmit(4, "matmul");
    tracker.nameStream(5, "compute");
    tracker.onSubmit(5, "rope");
    auto samples = tracker.sample();
    QCOMPARE(samples.at(0).name, std::string("stream 1"));
    QCOMPARE(samples.at(1).name, std::string("compute"));
    tracker.forgetStream(5);  // its backend is gone: no more samples, its event back in the pool
    samples = tracker.sample();
    QCOMPARE(samples.size(), std::size_t{1});
    tracker.onSubmit(6, "rope");
    QCOMPARE(events->created, 2);
    QCOMPARE(tracker.sample().at(1).name, std::string("stream 3"));
  }

  void serviceTimeIsFromSubmissionOrThePreviousCompletion() {
    auto events = std::make_shared<FakeEvents>();
    FakeClock clock;
    QueueTracker tracker(events, clock.fn());
    tracker.onSubmit(1, "matmul");
    tracker.onSubmit(1, "rope");
    clock.nowMs += 3'000;
    events->finishUpTo(1, 1);
    tracker.sample();  // matmul seen done 3 s after its submission
    clock.nowMs += 500;
    events->finishAll(1);
    tracker.sample();  // rope 0.5 s after matmul completed, though queued 3.5 s
    QCOMPARE(tracker.longestServiceMs("matmul"), std::int64_t{3'000});
    QCOMPARE(tracker.longestServiceMs("rope"), std::int64_t{500});
    QCOMPARE(tracker.longestServiceMs("adamw"), std::int64_t{0});
  }

  void withoutEventsEverySubmissionIsDone() {
    QueueTracker tracker(nullptr);
    tracker.onSubmit(0, "rmsnorm_forward");
    tracker.onSubmit(0, "rmsnorm_forward");
    const auto samples = tracker.sample();
    QCOMPARE(samples[0].submitted, std::uint64_t{2});
    QCOMPARE(samples[0].depth, std::uint64_t{0});
  }
};

QTEST_APPLESS_MAIN(TestQueueTracker)
#include "test_queue_tracker.moc"
