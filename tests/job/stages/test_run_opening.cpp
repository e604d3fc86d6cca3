// test_run_opening.cpp — the opening stage (job/RunOpening.h): the start command read strictly, a
// new run made, a resumed one opened with its state and its metrics cut back to it.
#include "StageFixture.h"

#include "job/CliArgs.h"  // defines: UsageError
#include "train/RunDirectory.h"

using namespace lorascope;

namespace {

std::string refusalOf(const nlohmann::json& start) {
  try {
    job::StartRequest::of(start);
    job::openRun(start, [](const std::string&) {});
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(aMalformedStartCommandIsRefusedNamingTheField) {
  COMPARE(refusalOf({{"demo", true}}), std::string("start: \"out\" (a path) is required"));
  COMPARE(refusalOf({{"out", "x"}, {"demo", "yes"}}),
          std::string("start: \"demo\" must be true or false, got \"yes\""));
  COMPARE(refusalOf({{"out", "x"}, {"resume", true}, {"checkpoint", "last"}}),
          std::string("start: \"checkpoint\" must be a step number"));
  COMPARE(refusalOf({{"out", "x"}, {"resume_from_mirror", true}, {"announced_through", -1}}),
          std::string("start: \"announced_through\" must be a whole number of at least 0, got -1"));
  // A fresh run ignores what only a resume reads.
  const job::StartRequest fresh = job::StartRequest::of({{"checkpoint", "last"}});
  VERIFY(!fresh.resumes() && !fresh.checkpoint);
}

TEST_CASE(aNewRunIsMadeAndAResumedOneContinuesFromItsCheckpoint) {
  stagetest::PlacedRun run;
  stagetest::DemoRun& demo = run.demo;
  const std::filesystem::path dir = demo.opened.run.dir();
  VERIFY(std::filesystem::exists(dir / "config.json"));
  COMPARE(demo.opened.settings.train.maxSteps, std::int64_t{6});
  VERIFY(!demo.examples.empty());
  VERIFY(!job::resumeState(job::StartRequest{}, demo.opened, demo.events.sink()).has_value());
  // Two steps, a checkpoint at step 1, and a metrics line for each.
  const std::unique_ptr<train::TrainLoop>& loop = run.loop;
  const train::StepMetrics first = loop->step();
  demo.opened.run.appendMetrics(first);
  demo.opened.run.saveCheckpoint(loop->state(), 0);
  demo.opened.run.appendMetrics(loop->step());
  const nlohmann::json resume = {{"out", common::pathText(dir)}, {"resume", true}};
  const job::StartRequest request = job::StartRequest::of(resume);
  {
    const train::RunDirectory released = std::move(demo.opened.run);  // its lock goes with it
  }
  const job::OpenedRun reopened = job::openRun(resume, [](const std::string&) {});
  COMPARE(reopened.settings.train.maxSteps, std::int64_t{6});
  const std::optional<train::TrainerState> state =
      job::resumeState(request, reopened, demo.events.sink());
  VERIFY(state.has_value());
  COMPARE(state->step, std::int64_t{1});
  COMPARE(runs::readStepRecords(dir / runs::kMetricsFile).size(), std::size_t{1});  // cut back
}
