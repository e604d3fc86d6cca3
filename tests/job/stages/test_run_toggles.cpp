// test_run_toggles.cpp — the toggles of a run (job/RunToggles.h): applied to the loop at a step
// boundary, and every toggle's state confirmed with what does not apply on a CPU run.
#include "StageFixture.h"

#include "job/DevicePlacement.h"
#include "job/RunToggles.h"

using namespace lorascope;

TEST_CASE(theRunStartsWithEveryToggleConfirmedAndTakesLiveChanges) {
  stagetest::PlacedRun run;
  job::DevicePlacement& placement = *run.placement;
  stagetest::DemoRun& demo = run.demo;
  const std::unique_ptr<train::TrainLoop>& loop = run.loop;
  stagetest::Sink sink;
  job::RunToggles toggles(*loop, placement, demo.opened.settings, sink.sink());
  toggles.reportStart();
  const std::vector<engine::ToggleAppliedEvent> confirmed = sink.all<engine::ToggleAppliedEvent>();
  COMPARE(confirmed.size(), std::size_t{8});
  COMPARE(confirmed[0].toggle, engine::Toggle::MicroBatch);
  COMPARE(confirmed[0].value.get<int>(), 2);
  COMPARE(confirmed[2].toggle, engine::Toggle::CpuFallback);
  COMPARE(confirmed[2].value.get<bool>(), true);  // a CPU run
  for (const engine::ToggleAppliedEvent& e : confirmed) {
    // The GPU's settings do nothing on a CPU run; the CPU fallback, where no GPU can take it.
    const bool inapplicable =
        e.toggle == engine::Toggle::Serialize || e.toggle == engine::Toggle::Blocking ||
        e.toggle == engine::Toggle::GemmBackend || e.toggle == engine::Toggle::AllocatorPolicy ||
        e.toggle == engine::Toggle::Graph ||
        (e.toggle == engine::Toggle::CpuFallback && !placement.gpuUnavailable().empty());
    VERIFY2(inapplicable == !e.notApplicable.empty(), engine::toString(e.toggle));
  }
  COMPARE(toggles.apply(engine::Toggle::MicroBatch, 1), std::string());
  COMPARE(loop->microBatchSize(), std::int64_t{1});
  COMPARE(loop->accumulation(), std::int64_t{2});  // the same effective batch
  VERIFY(lstest::Message{toggles.apply(engine::Toggle::ActivationCheckpointing, true)}.contains(
      "activations recomputed in backward from step 1"));
  VERIFY(demo.opened.settings.train.activationCheckpointing);
  COMPARE(toggles.apply(engine::Toggle::ActivationCheckpointing, true), std::string());  // as is
}
