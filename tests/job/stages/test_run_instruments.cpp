// test_run_instruments.cpp — the instruments (job/RunInstruments.h) of a CPU run: no queue and no
// allocator to read, progress seen once per activity, and the step cycle's timing log lines.
#include "StageFixture.h"

#include "job/DevicePlacement.h"
#include "job/RunInstruments.h"
#include "runtime/LaunchControl.h"

using namespace lorascope;

TEST_CASE(aCpuRunHasNoQueueShowsProgressOnceAndLogsItsTiming) {
  lstest::setEnvironment("LORASCOPE_STEP_TIMING", "1");
  lstest::setEnvironment("LORASCOPE_OP_TIMING", "1");
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
  // Op timing starts at the first report; the next step's line has the ops since (a CPU run
  // launches none).
  VERIFY2(!lstest::Message{sink.logText()}.contains("op timing"), sink.logText().c_str());
  m.step = 8;
  timing.report(m, sink.sink());
  VERIFY2(lstest::Message{sink.logText()}.contains(
              "op timing 8: 0.00 ms in ops, the step 10.00 ms (no device ops)"),
          sink.logText().c_str());
}

namespace {

// Two GPUs with their used VRAM: 100 MiB on GPU 0, 300 MiB on GPU 1.
class TwoGpus : public telemetry::Provider {
 public:
  std::string name() const override { return "two-gpus"; }
  bool init() override { return true; }
  std::vector<telemetry::DeviceInfo> devices() const override {
    return {{0, "gpu0", "", "two-gpus"}, {1, "gpu1", "", "two-gpus"}};
  }
  std::string lastError() const override { return ""; }
  bool refresh(telemetry::Snapshot& out) override {
    out.devices.resize(2);
    for (int i = 0; i < 2; ++i) {
      out.devices[static_cast<std::size_t>(i)].index = i;
      out.devices[static_cast<std::size_t>(i)].vramUsedBytes = (100ull + 200ull * i) << 20;
    }
    return true;
  }
};

}  // namespace

// A rank of a group reports its own card's driver readings (job/RunInstruments.h: readCard);
// one engine alone, the first GPU's.
TEST_CASE(aRankReadsItsOwnCard) {
  stagetest::DemoRun demo;
  job::DevicePlacement placement(std::move(demo.opened.backend), *demo.folder, demo.opened.settings,
                                 [](const std::string&) {});
  const auto readingOf = [&](std::optional<int> card) {
    auto sampler = std::make_unique<telemetry::Sampler>(
        std::vector<std::shared_ptr<telemetry::Provider>>{std::make_shared<TwoGpus>()});
    sampler->start();
    VERIFY(sampler->waitForSamples(1, std::chrono::seconds(30)));
    job::RunInstruments instruments(placement, std::move(sampler));
    if (card) {
      instruments.readCard(*card);
    }
    const std::optional<engine::MemoryEvent> memory = instruments.memory();
    return memory ? memory->driverUsedBytes : std::nullopt;
  };
  COMPARE(readingOf(std::nullopt), std::optional<std::uint64_t>(100ull << 20));
  COMPARE(readingOf(1), std::optional<std::uint64_t>(300ull << 20));
  COMPARE(readingOf(5), std::optional<std::uint64_t>());  // not listed: no driver reading
}
