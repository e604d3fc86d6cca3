// test_run_instruments.cpp — the instruments (job/RunInstruments.h) of a CPU run: no queue and no
// allocator to read, progress seen once per activity, and the step cycle's timing log line.
#include "StageFixture.h"

#include "job/DevicePlacement.h"
#include "job/RunInstruments.h"
#include "runtime/LaunchControl.h"

using namespace lorascope;

TEST_CASE(aCpuRunHasNoQueueNoAllocatorAndShowsProgressOnce) {
  lstest::setEnvironment("LORASCOPE_STEP_TIMING", "1");
  stagetest::DemoRun demo;
  job::DevicePlacement placement(std::move(demo.opened.backend), *demo.folder, demo.opened.settings,
                                 [](const std::string&) {});
  auto sampler = std::make_unique<telemetry::Sampler>(
      std::vector<std::shared_ptr<telemetry::Provider>>{});  // no telemetry: our readings only
  sampler->start();
  job::RunInstruments instruments(placement, std::move(sampler));
  VERIFY(!instruments.memory().has_value());  // nothing readable
  VERIFY(!instruments.snapshot().has_value());
  job::StepTiming timing;
  job::StepTiming::timed(timing.metricsMs, [] {});  // a stage ends: the run made progress
  engine::InstrumentEvents first = instruments.sample();
  VERIFY(!first.queue.has_value() && !first.hang.has_value());
  VERIFY(first.progressed);
  VERIFY(!instruments.sample().progressed);  // nothing since
  VERIFY(timing.metricsMs >= 0.0);

  stagetest::Sink sink;
  train::StepMetrics m;
  m.step = 7;
  m.seconds = 0.010;
  m.cycleSeconds = 0.012;
  timing.report(m, sink.sink());
  VERIFY2(lstest::Message{sink.logText()}.contains("step timing 7: cycle 12.00 ms = step 10.00 ms"),
          sink.logText().c_str());
}
