// test_group_job.cpp — the training job as a rank of a data-parallel group (job/EngineJob.h's
// "group"), on CPU backends joined by the in-process group (the real NCCL group needs GPUs:
// tests/group/gpu_group_nccl). Two ranks train the demo run: rank 0 writes the run (metrics,
// state mirror, checkpoints, final adapter) and announces its steps, rank 1 reads the run rank 0
// made and writes and announces nothing (Note [rank 0 writes] in group/RankPlan.h), and the
// group's curve is one engine's. With --batch-size auto the ranks run one plan, the smallest, that
// leaves every rank a micro-batch of each step, and the curve is one engine's at that micro-batch;
// an effective batch smaller than the group is refused. A malformed "group" is refused naming the
// field; a dead peer's collective ends a rank's step as a sticky error. A toggle that reaches the
// ranks before different steps applies on every rank at the same step boundary.
#include "TestRunner.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "ExpectError.h"
#include "TempDir.h"
#include "group/InProcessCollective.h"
#include "job/AutoBatch.h"
#include "job/EngineJob.h"

using namespace lorascope;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

json demoRun(const std::string& out) {
  return {{"demo", true},
          {"out", out},
          {"options",
           {{"steps", 4},
            {"batch-size", 2},
            {"grad-accum", 2},
            {"max-seq-len", 80},
            {"lora-r", 4},
            {"checkpoint-every", 2},
            {"lora-dropout", 0.1}}}};
}

json asRank(json config, int rank, int size) {
  config["group"] = {{"rank", rank}, {"size", size}, {"device", rank}, {"rendezvous", "unused"}};
  return config;
}

// What one engine's job did: the steps it announced (returned or through its sink), its log,
// its checkpoint event, and its error.
struct RankRun {
  std::vector<double> losses;
  std::vector<std::int64_t> announced;
  std::vector<std::int64_t> applied;  // the step of each toggle set true's confirmation
  std::vector<std::string> log;
  engine::CheckpointEvent checkpoint;
  std::string error;

  // The first line of the log that contains `words`; empty when none does.
  std::string line(const std::string& words) const {
    const auto found = std::ranges::find_if(
        log, [&](const std::string& l) { return l.find(words) != std::string::npos; });
    return found == log.end() ? std::string() : *found;
  }
};

// A toggle the engine hands a rank's job before the step after `afterStep`, as Engine::handle
// does: held by the job, or applied and confirmed at once.
struct ToggleAt {
  std::int64_t afterStep = 0;
  engine::Toggle toggle = engine::Toggle::Serialize;
  json value;
};

RankRun runJob(const json& config, const job::RankOpener& opener,
               const std::vector<ToggleAt>& toggles = {}) {
  RankRun run;
  std::mutex mutex;
  const engine::EventSink sink = [&](const engine::TimedEvent& timed) {
    if (const auto* step = std::get_if<engine::StepEvent>(&timed.event)) {
      const std::lock_guard lock(mutex);
      run.announced.push_back(step->step);
      run.losses.push_back(step->loss);
    } else if (const auto* log = std::get_if<engine::LogEvent>(&timed.event)) {
      const std::lock_guard lock(mutex);
      run.log.push_back(log->text);
    } else if (const auto* applied = std::get_if<engine::ToggleAppliedEvent>(&timed.event);
               applied && applied->toggle != engine::Toggle::CpuFallback &&
               applied->value == true) {  // the test's toggles, not the run's starting values
      const std::lock_guard lock(mutex);
      run.applied.push_back(applied->step);
    }
  };
  try {
    std::unique_ptr<engine::EngineJob> job = job::createRankJob(config, sink, opener);
    engine::CancelFlag cancel;
    while (!job->finished()) {
      for (const ToggleAt& t : toggles) {
        if (t.afterStep == job->completedSteps() && !job->holdsToggle(t.toggle, t.value)) {
          job->applyToggle(t.toggle, t.value);
          sink(engine::TimedEvent{
              0, engine::ToggleAppliedEvent{t.toggle, t.value, job->completedSteps()}});
        }
      }
      if (std::optional<engine::StepEvent> step = job->runStep(cancel)) {
        sink(engine::TimedEvent{0, *step});
      }
    }
    run.checkpoint = job->checkpoint();
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  return run;
}

// CPU backends and an in-process group of `size` for the ranks' openers.
struct CpuGroup {
  explicit CpuGroup(int size) : members(group::makeInProcessGroup(size, 120'000)) {}
  job::RankOpener opener() {
    return {[](const job::RankSpec&) { return compute::createCpuBackend(); },
            [this](const job::RankSpec& spec) {
              return std::move(members.at(static_cast<std::size_t>(spec.rank)));
            }};
  }
  std::vector<std::unique_ptr<group::Collective>> members;
};

std::size_t linesOf(const fs::path& file) {
  std::ifstream in(file);
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) {
    lines += line.empty() ? 0 : 1;
  }
  return lines;
}

// The names of a folder's entries; TensorBoard's event file without its time and host.
std::vector<std::string> namesIn(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    names.push_back(name.starts_with("events.out.tfevents.") ? "events.out.tfevents" : name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Rank 0's announced losses are one engine's, step by step, to the sum's rounding.
void verifySameCurve(const RankRun& group, const RankRun& one) {
  COMPARE(group.losses.size(), one.losses.size());
  for (std::size_t i = 0; i < one.losses.size(); ++i) {
    VERIFY2(
        std::fabs(group.losses[i] - one.losses[i]) <= 1e-4 * std::fabs(one.losses[i]),
        lstest::format("step %zu: group %.8f, alone %.8f", i + 1, group.losses[i], one.losses[i])
            .c_str());
  }
}

lstest::TempDir& cache() {
  static lstest::TempDir dir;
  return dir;
}

void useDemoCache() {
  VERIFY(cache().isValid());
  lstest::setEnvironment("LORASCOPE_CACHE_DIR", lstest::utf8Text(cache().path()));
}

}  // namespace

TEST_CASE(rankZeroWritesTheRunAndRankOneOnlyTrains) {
  useDemoCache();
  lstest::TempDir dir;
  const std::string alone = dir.filePath("alone"), grouped = dir.filePath("grouped");
  const RankRun one = runJob(demoRun(alone), job::defaultRankOpener());
  VERIFY2(one.error.empty(), one.error.c_str());

  CpuGroup cpus(2);
  const job::RankOpener opener = cpus.opener();
  RankRun ranks[2];
  std::thread peer([&] { ranks[1] = runJob(asRank(demoRun(grouped), 1, 2), opener); });
  ranks[0] = runJob(asRank(demoRun(grouped), 0, 2), opener);
  peer.join();
  VERIFY2(ranks[0].error.empty(), ranks[0].error.c_str());
  VERIFY2(ranks[1].error.empty(), ranks[1].error.c_str());

  // Rank 0 announces every step once; rank 1 none, and it names no checkpoint.
  COMPARE(ranks[0].announced, (std::vector<std::int64_t>{1, 2, 3, 4}));
  VERIFY(ranks[1].announced.empty());
  VERIFY(!ranks[0].checkpoint.path.empty());
  COMPARE(ranks[1].checkpoint.path, std::string());
  COMPARE(ranks[1].checkpoint.step, std::int64_t{4});
  // One writer: a metrics line per step, the checkpoints and files one engine leaves.
  COMPARE(linesOf(fs::path(grouped) / "metrics.jsonl"), std::size_t{4});
  COMPARE(namesIn(fs::path(grouped) / "checkpoints"), namesIn(fs::path(alone) / "checkpoints"));
  COMPARE(namesIn(grouped), namesIn(alone));
  // The group's curve is one engine's (the micro-batches split between the ranks, dropout on).
  verifySameCurve(ranks[0], one);
}

// The demo run as two ranks, each handed its toggles as the engine hands them; the steps of each
// rank's confirmations of the toggles set true.
std::vector<std::vector<std::int64_t>> togglesConfirmed(const std::vector<ToggleAt>& rank0,
                                                        const std::vector<ToggleAt>& rank1) {
  lstest::TempDir dir;
  CpuGroup cpus(2);
  const job::RankOpener opener = cpus.opener();
  const json config = demoRun(dir.filePath("run"));
  RankRun ranks[2];
  std::thread peer([&] { ranks[1] = runJob(asRank(config, 1, 2), opener, rank1); });
  ranks[0] = runJob(asRank(config, 0, 2), opener, rank0);
  peer.join();
  VERIFY2(ranks[0].error.empty(), ranks[0].error.c_str());
  VERIFY2(ranks[1].error.empty(), ranks[1].error.c_str());
  return {ranks[0].applied, ranks[1].applied};
}

// Note [toggles at one boundary]: the supervisor's toggle reaches rank 0 before step 2 and rank
// 1 only before step 3; both apply it at the same boundary, after step 3, the first step whose sum
// found it received by every rank. A toggle before the first step applies at once, on each rank.
TEST_CASE(aToggleAppliesOnEveryRankAtTheSameBoundary) {
  useDemoCache();
  const ToggleAt first{0, engine::Toggle::Blocking, true};
  COMPARE(togglesConfirmed({first, ToggleAt{1, engine::Toggle::Serialize, true}},
                           {first, ToggleAt{2, engine::Toggle::Serialize, true}}),
          (std::vector<std::vector<std::int64_t>>{{0, 3}, {0, 3}}));
}

// A toggle that rank 0 read before the first step (applied at once) and rank 1 after it (held)
// still counts on both, so the next toggle, read before step 3 by both, applies at one boundary.
TEST_CASE(aToggleAppliedAtOnceOnOneRankKeepsTheNextInStep) {
  useDemoCache();
  const ToggleAt serialize{2, engine::Toggle::Serialize, true};
  COMPARE(togglesConfirmed({ToggleAt{0, engine::Toggle::Blocking, true}, serialize},
                           {ToggleAt{1, engine::Toggle::Blocking, true}, serialize}),
          (std::vector<std::vector<std::int64_t>>{{0, 3}, {2, 3}}));
}

TEST_CASE(aMalformedGroupIsRefusedNamingTheField) {
  useDemoCache();
  lstest::TempDir dir;
  json config = demoRun(dir.filePath("run"));
  config["group"] = {{"rank", 2}, {"size", 2}, {"device", 0}, {"rendezvous", "x"}};
  COMPARE(runJob(config, job::defaultRankOpener()).error,
          std::string("start: \"group\": rank 2 is outside a group of 2"));
  config["group"] = {{"rank", 0}, {"size", 2}, {"device", 0}};
  COMPARE(runJob(config, job::defaultRankOpener()).error,
          std::string("start: \"group\" of 2 ranks needs \"rendezvous\", the path of its "
                      "rendezvous file"));
  config["group"] = {{"rank", "0"}, {"size", 2}, {"device", 0}, {"rendezvous", "x"}};
  VERIFY(lstest::Message{runJob(config, job::defaultRankOpener()).error}.contains(
      "\"group\" needs \"rank\""));
}

TEST_CASE(autoMicroBatchInAGroupGivesEveryRankAShareAndOneEnginesCurve) {
  useDemoCache();
  lstest::TempDir dir;
  // --batch-size auto keeps the effective batch, the demo's micro-batch 8 x 2 accumulation. Alone
  // the plan would be all 16 at once (tens of MiB); two ranks plan at most 8, one micro-batch each.
  json autoRun = demoRun(dir.filePath("auto"));
  autoRun["options"]["batch-size"] = "auto";
  autoRun["options"]["gpus"] = "0,1";
  CpuGroup cpus(2);
  const job::RankOpener opener = cpus.opener();
  RankRun ranks[2];
  std::thread peer([&] { ranks[1] = runJob(asRank(autoRun, 1, 2), opener); });
  ranks[0] = runJob(asRank(autoRun, 0, 2), opener);
  peer.join();
  VERIFY2(ranks[0].error.empty(), ranks[0].error.c_str());
  VERIFY2(ranks[1].error.empty(), ranks[1].error.c_str());

  for (const RankRun& rank : ranks) {
    const std::string agreed = rank.line("batch-size auto on 2 GPUs: ");
    VERIFY2(lstest::Message{agreed}.contains("plans 8, rank 1") &&
                lstest::Message{agreed}.contains(" plans 8; the group runs micro-batch 8 x 2 "),
            agreed.c_str());
    // Each rank's loop runs it: 2 micro-batches a step, one for each rank.
    VERIFY(!rank.line("LoRA parameters, micro-batch 8 x 2, ").empty());
  }
  json alone = demoRun(dir.filePath("alone"));
  alone["options"]["batch-size"] = 8;
  const RankRun one = runJob(alone, job::defaultRankOpener());
  VERIFY2(one.error.empty(), one.error.c_str());
  verifySameCurve(ranks[0], one);
}

TEST_CASE(autoMicroBatchIsRefusedForAGroupLargerThanItsEffectiveBatch) {
  useDemoCache();
  lstest::TempDir dir;
  json config = demoRun(dir.filePath("run"));
  config["options"]["batch-size"] = "auto";
  config["options"]["grad-accum"] = 1;
  const RankRun refused = runJob(asRank(config, 0, 16), job::defaultRankOpener());
  COMPARE(refused.error,
          std::string("--batch-size auto on 16 GPUs needs an effective batch of at least 16 "
                      "sequences, one micro-batch per GPU; it is 8 (micro-batch 8 x 1 "
                      "accumulation): raise --grad-accum, or use fewer GPUs"));
  VERIFY(!fs::exists(dir.path() / "run"));  // refused before the folder is made
}

TEST_CASE(theGroupRunsTheSmallestOfItsRanksPlans) {
  std::vector<std::unique_ptr<group::Collective>> members = group::makeInProcessGroup(3, 60'000);
  const std::int64_t planned[3] = {16, 4, 8};
  job::GroupMicroBatch agreed[3];
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      const std::unique_ptr<compute::Backend> cpu = compute::createCpuBackend();
      agreed[r] =
          job::agreeOnMicroBatch(*members.at(static_cast<std::size_t>(r)), *cpu, planned[r]);
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  for (const job::GroupMicroBatch& rank : agreed) {
    COMPARE(rank.planned, (std::vector<std::int64_t>{16, 4, 8}));
    COMPARE(rank.microBatch, std::int64_t{4});
  }
}

TEST_CASE(aDeadPeerEndsTheStepAsAStickyCollectiveError) {
  useDemoCache();
  lstest::TempDir dir;
  const std::string out = dir.filePath("run");
  CpuGroup cpus(2);
  group::Collective* peer = cpus.members[1].get();
  const job::RankOpener opener = cpus.opener();
  std::string sticky;
  std::thread rank1([&] {
    // Rank 1 joins, then dies before the first step's sum.
    std::unique_ptr<group::Collective> own = opener.join({1, 2, 1, "unused"});
    own->barrier();
    group::failInProcessRank(*peer, 1, "killed by SIGKILL");
  });
  try {
    std::unique_ptr<engine::EngineJob> job = job::createRankJob(
        asRank(demoRun(out), 0, 2), [](const engine::TimedEvent&) {}, opener);
    engine::CancelFlag cancel;
    job->runStep(cancel);
  } catch (const engine::StickyDeviceError& e) {
    sticky = e.event().category + " " + e.event().op + ": " + e.what();
  }
  rank1.join();
  VERIFY2(lstest::Message{sticky}.contains("collective all_reduce: "), sticky.c_str());
  VERIFY2(lstest::Message{sticky}.contains("killed by SIGKILL"), sticky.c_str());
}
