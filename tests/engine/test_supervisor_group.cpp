// test_supervisor_group.cpp — the Supervisor forming a group of GPUs (engine/Supervisor.h) with
// stand-in engines and a manual clock: a start with --gpus waits for the engine's hello, is checked
// against its GPUs and collective library (refused with the reason), then starts one engine per
// GPU, each told its rank, the group's size, its GPU, the same fresh rendezvous file and the lock's
// holder; rank 0's steps are the run's, every rank's readings and snapshots carry its card, and a
// snapshot request reaches every rank; one rank's crash, sticky error or hang ends every rank and
// restarts them all from the newest state (no step lost, the ladder applied to all, a hung
// collective named); a lost GPU stops with the choice to go on with the others; rank 0's end ends
// the others; pause and micro-batch changes are refused.
#include "TestRunner.h"

#include <filesystem>

#include "StandInEngines.h"
#include "TempDir.h"
#include "common/Platform.h"  // defines: currentProcessId
#include "profiles/Builtins.h"

using namespace lorascope::engine;
using lorascope::runtime::RecoveryRung;
using lorascope::test::EngineRecord;
using lorascope::test::FakeLauncher;
using nlohmann::json;

namespace {

json groupRun(const std::string& out, const std::string& gpus) {
  return {{"out", out}, {"demo", true}, {"options", {{"gpus", gpus}, {"steps", 20}}}};
}

HelloEvent helloWith(int gpus, std::string noCollectiveReason = {}) {
  HelloEvent hello;
  hello.flavour = "hip-nvidia";
  for (int i = 0; i < gpus; ++i) {
    hello.devices.push_back({"NVIDIA H200", "sm_90", 141ull << 30});
  }
  if (noCollectiveReason.empty()) {
    hello.collectiveLibrary = "NCCL 2.28.9";
  } else {
    hello.noCollectiveReason = std::move(noCollectiveReason);
  }
  return hello;
}

struct Rig : lorascope::test::SupervisorRigBase {
  Rig()
      : supervisor(
            launcher, lorascope::profiles::defaultProfile(), SupervisorPolicy{},
            [this](const TimedEvent& e) { published.push_back(e); }, {}, [this] { return nowMs; }) {
    supervisor.start();
  }

  EngineRecord& engine(std::size_t i) { return *launcher.engines.at(i); }
  void report(std::size_t engine, Event event) {
    supervisor.engineEvent(launcher.engines.at(engine)->id, TimedEvent{nowMs, std::move(event)});
  }
  void exited(std::size_t engine, std::string signal) {
    EngineExit exit;
    exit.crashed = true;
    exit.signal = std::move(signal);
    supervisor.engineExited(launcher.engines.at(engine)->id, exit);
  }
  // A sticky error of `engine`, which then exits as an engine does after one.
  void failWith(std::size_t engine, std::string category, std::string op, std::string message) {
    report(engine, ErrorEvent{std::move(category), std::move(op), 0, std::move(message), "", true});
    exited(engine, "");
  }
  // Rank 0 announces step `n`, then rank `rank` (engine `rank`) fails with a sticky error and
  // rank 0, ended by the supervisor, exits.
  void peerFailsAfterStep(std::int64_t n, std::size_t rank, std::string category, std::string op,
                          std::string message) {
    step(0, n);
    failWith(rank, std::move(category), std::move(op), std::move(message));
    exited(0, "SIGKILL");
  }
  void step(std::size_t engine, std::int64_t n, bool replayed = false) {
    StepEvent s{n, 2.0 - 0.01 * static_cast<double>(n), 1e-4, 1.0, 10.0, 4, 1};
    s.replayed = replayed;
    report(engine, s);
  }
  // The group of `gpus` on a machine of `available` GPUs started and running: engines
  // [first, first + ranks) are its ranks.
  void startGroup(const std::string& out, const std::string& gpus, int available) {
    supervisor.send(StartCommand{groupRun(out, gpus)});
    report(0, helloWith(available));
    report(0, StateEvent{RunState::Starting, 0, ""});
    report(0, StateEvent{RunState::Running, 0, ""});
  }
  Supervisor supervisor;
};

// The last start command sent to `engine`'s record (a default one when none was sent).
json lastStart(const EngineRecord& engine) {
  for (auto c = engine.sent.rbegin(); c != engine.sent.rend(); ++c) {
    if (const auto* start = std::get_if<StartCommand>(&*c))
      return start->runConfig;
  }
  return json();
}

// The one incident `rig` published.
IncidentEvent onlyIncident(const Rig& rig) {
  const auto incidents = rig.all<IncidentEvent>();
  COMPARE(incidents.size(), std::size_t{1});
  return incidents.front();
}

void expectIn(const std::string& text, const std::string& fragment) {
  VERIFY2(lstest::Message{text}.contains(fragment),
          lstest::format("\"%s\" is not in: %s", fragment.c_str(), text.c_str()).c_str());
}

bool sentAny(const EngineRecord& engine, const std::function<bool(const Command&)>& match) {
  return std::any_of(engine.sent.begin(), engine.sent.end(), match);
}

}  // namespace

TEST_CASE(aStartOnTwoGpusWaitsForHelloThenStartsOneEnginePerGpu) {
  lstest::TempDir dir;
  Rig rig;
  rig.launcher.lockRuns = true;
  const std::string out = dir.filePath("run");
  rig.supervisor.send(StartCommand{groupRun(out, "0,1")});
  COMPARE(rig.launcher.engines.size(), std::size_t{1});
  VERIFY(lastStart(rig.engine(0)).is_null());  // the GPUs are not known yet
  rig.report(0, helloWith(2));

  COMPARE(rig.launcher.engines.size(), std::size_t{2});
  const json rank0 = lastStart(rig.engine(0)), rank1 = lastStart(rig.engine(1));
  COMPARE(rank0["group"]["rank"], json(0));
  COMPARE(rank0["group"]["size"], json(2));
  COMPARE(rank0["group"]["device"], json(0));
  COMPARE(rank1["group"]["rank"], json(1));
  COMPARE(rank1["group"]["size"], json(2));
  COMPARE(rank1["group"]["device"], json(1));
  VERIFY(rank0["group"]["rendezvous"].is_string());
  COMPARE(rank1["group"]["rendezvous"], rank0["group"]["rendezvous"]);
  VERIFY(!std::filesystem::exists(rank0["group"]["rendezvous"].get<std::string>()));
  // The supervisor holds the run's lock for both, as it does for one engine.
  const json holder = json(lorascope::common::currentProcessId());
  COMPARE(rank0["run_lock_holder"], holder);
  COMPARE(rank1["run_lock_holder"], holder);
  COMPARE(rig.supervisor.groupDevices(), (std::vector<int>{0, 1}));
  // Everything else of the start is the same for both.
  json a = rank0, b = rank1;
  a.erase("group");
  b.erase("group");
  COMPARE(a, b);
}

TEST_CASE(ranksFollowTheListsOrder) {
  // The "group" of each engine's start, for `gpus` on a machine of `available` GPUs.
  const auto groupsOf = [](int available, const std::string& gpus) {
    Rig rig;
    rig.report(0, helloWith(available));
    rig.supervisor.send(StartCommand{groupRun("/runs/x", gpus)});
    std::vector<json> groups;
    for (const auto& engine : rig.launcher.engines) {
      groups.push_back(lastStart(*engine)["group"]);
    }
    return groups;
  };
  const std::vector<json> twoZero = groupsOf(3, "2,0");
  COMPARE(twoZero.size(), std::size_t{2});
  COMPARE(twoZero[0]["device"], json(2));
  COMPARE(twoZero[1]["device"], json(0));
  const std::vector<json> every = groupsOf(3, "all");
  COMPARE(every.size(), std::size_t{3});
  COMPARE(every[2]["rank"], json(2));
  COMPARE(every[2]["size"], json(3));
  // One GPU named: one engine on it, no rendezvous.
  COMPARE(groupsOf(2, "1"), std::vector<json>{json({{"rank", 0}, {"size", 1}, {"device", 1}})});
}

TEST_CASE(aListTheMachineCannotRunIsRefusedWithTheReason) {
  const auto refusal = [](const std::string& gpus, const HelloEvent& hello) {
    Rig rig;
    rig.report(0, hello);
    rig.supervisor.send(StartCommand{groupRun("/runs/x", gpus)});
    VERIFY(lastStart(rig.engine(0)).is_null());  // no engine got it
    COMPARE(rig.launcher.engines.size(), std::size_t{1});
    const auto failed = rig.all<StateEvent>();
    VERIFY(!failed.empty() && failed.back().state == RunState::Failed);
    const auto errors = rig.all<ErrorEvent>();
    VERIFY(errors.size() == 1 && errors.front().category == "input" && !errors.front().sticky);
    COMPARE(failed.back().detail, errors.front().message);
    return errors.front().message;
  };
  COMPARE(refusal("0,0", helloWith(2)),
          std::string("--gpus \"0,0\": GPU 0 is named twice; each GPU runs one rank"));
  COMPARE(refusal("0,2", helloWith(2)),
          std::string("--gpus \"0,2\": GPU 2 does not exist; this machine has 2 GPUs (0-1)"));
  const std::string noNccl =
      "training on several GPUs is Linux only: NCCL and RCCL have no Windows build";
  COMPARE(refusal("0,1", helloWith(2, noNccl)), "--gpus \"0,1\": " + noNccl);
  const std::string cpuFlavour = "this lorascope-train is the cpu flavour (no GPU code)";
  COMPARE(refusal("0", helloWith(0, cpuFlavour)),
          "--gpus \"0\": no GPU was found, so no GPU can be used; " + cpuFlavour);
}

TEST_CASE(rankZerosStepsAreTheRunsAndEveryReadingNamesItsCard) {
  Rig rig;
  rig.startGroup("/runs/x", "1,0", 2);
  rig.step(0, 1);
  rig.step(1, 1);  // rank 1's: not the run's
  COMPARE(rig.all<StepEvent>().size(), std::size_t{1});
  MemoryEvent reading;
  reading.allocatedBytes = 7;
  rig.report(1, reading);
  reading.allocatedBytes = 9;
  rig.report(0, reading);
  rig.report(1, QueueEvent{{{"compute", 3}}});
  const auto memory = rig.all<MemoryEvent>();
  COMPARE(memory.size(), std::size_t{2});
  COMPARE(memory[0].card, std::optional<int>(0));  // rank 1 runs on GPU 0
  COMPARE(memory[1].card, std::optional<int>(1));
  COMPARE(rig.all<QueueEvent>().at(0).card, std::optional<int>(0));
  rig.report(1, LogEvent{LogLevel::Info, "run x: 40 examples"});  // rank 0 says it too
  rig.report(1, LogEvent{LogLevel::Warning, "3 examples truncated"});
  const auto logs = rig.all<LogEvent>();
  COMPARE(logs.size(), std::size_t{1});
  COMPARE(logs[0].text, std::string("rank 1 (GPU 0): 3 examples truncated"));
}

// The memory map of every card: a snapshot request reaches every rank, and each rank's answer is
// passed on tagged with its GPU; a run on one engine keeps its snapshots untagged.
TEST_CASE(aSnapshotRequestReachesEveryRankAndEachAnswerNamesItsCard) {
  Rig rig;
  rig.startGroup("/runs/x", "1,0", 2);
  rig.supervisor.send(RequestSnapshotCommand{});
  for (std::size_t e : {std::size_t{0}, std::size_t{1}}) {
    VERIFY(sentAny(rig.engine(e), [](const Command& c) {
      return std::holds_alternative<RequestSnapshotCommand>(c);
    }));
  }
  rig.report(1, SnapshotEvent{{{"segments", json::array({{{"total_size", 1}}})}}});
  rig.report(0, SnapshotEvent{{{"segments", json::array()}}});
  const auto snapshots = rig.all<SnapshotEvent>();
  COMPARE(snapshots.size(), std::size_t{2});
  COMPARE(snapshots[0].card, std::optional<int>(0));  // rank 1 runs on GPU 0
  COMPARE(snapshots[0].snapshot["segments"].size(), std::size_t{1});
  COMPARE(snapshots[1].card, std::optional<int>(1));
  COMPARE(snapshots[1].snapshot["segments"].size(), std::size_t{0});

  Rig one;
  one.supervisor.send(StartCommand{{{"out", "/runs/y"}, {"demo", true}}});
  one.report(0, StateEvent{RunState::Running, 0, ""});
  one.supervisor.send(RequestSnapshotCommand{});
  COMPARE(one.launcher.engines.size(), std::size_t{1});
  one.report(0, SnapshotEvent{{{"segments", json::array()}}});
  COMPARE(one.all<SnapshotEvent>().at(0).card, std::optional<int>());
}

TEST_CASE(oneRankDyingEndsAndRestartsEveryRankWithNoLostStep) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  for (int n = 1; n <= 3; ++n)
    rig.step(0, n);
  const std::string rendezvous = lastStart(rig.engine(0))["group"]["rendezvous"];
  rig.exited(1, "SIGSEGV");      // rank 1 crashed
  VERIFY(rig.engine(0).killed);  // rank 0 is ended (it would wait in its collective)
  COMPARE(rig.launcher.engines.size(), std::size_t{2});  // nothing restarts before it exits
  rig.exited(0, "SIGKILL");

  COMPARE(rig.launcher.engines.size(), std::size_t{4});
  const json rank0 = lastStart(rig.engine(2)), rank1 = lastStart(rig.engine(3));
  COMPARE(rank0["group"]["rank"], json(0));
  COMPARE(rank1["group"]["rank"], json(1));
  COMPARE(rank1["group"]["device"], json(1));
  VERIFY(rank0["group"]["rendezvous"] != json(rendezvous));  // a fresh rendezvous file
  COMPARE(rank1["group"]["rendezvous"], rank0["group"]["rendezvous"]);
  for (const json& start : {rank0, rank1}) {
    COMPARE(start["resume_from_mirror"], json(true));
    COMPARE(start["announced_through"], json(3));
  }
  COMPARE(rig.supervisor.restarts(), 1);
  const IncidentEvent incident = onlyIncident(rig);
  expectIn(incident.what, "(rank 1, GPU 1) after step 3");
  expectIn(incident.what, "all 2 ranks restart");
  // The restarted rank 0 replays step 3 (dropped: passed on before) and goes on.
  rig.step(2, 3, true);
  rig.step(2, 4);
  std::vector<std::int64_t> steps;
  for (const StepEvent& s : rig.all<StepEvent>())
    steps.push_back(s.step);
  COMPARE(steps, (std::vector<std::int64_t>{1, 2, 3, 4}));
}

TEST_CASE(aStickyErrorClimbsTheLadderForEveryRank) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  rig.step(0, 1);
  rig.failWith(0, "illegal_address", "matmul", "an illegal memory access");
  VERIFY(rig.engine(1).killed);
  const RecoveryRung expected = *lorascope::runtime::nextRung(
      RecoveryRung::VendorBlas,
      lorascope::runtime::classifyError("illegal_address", "an illegal memory access", "matmul"));
  VERIFY(expected != RecoveryRung::VendorBlas);
  COMPARE(rig.supervisor.rung(), expected);
  COMPARE(rig.launcher.engines.size(), std::size_t{4});
  // Both new ranks get the rung's toggles.
  for (std::size_t e : {std::size_t{2}, std::size_t{3}}) {
    VERIFY(sentAny(rig.engine(e),
                   [](const Command& c) { return std::holds_alternative<SetToggleCommand>(c); }));
  }
}

// Rank 0 makes no progress: the watchdog ends it, and its peer's failed collective, reported
// before rank 0's exit, is a consequence: the hang decides, every rank restarts.
TEST_CASE(aHungRankZeroDecidesThoughItsPeerFailsFirst) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  rig.step(0, 2);
  rig.nowMs += SupervisorPolicy{}.hangTimeoutMs + 1;
  rig.supervisor.checkHang();
  VERIFY(rig.engine(0).killed);
  rig.failWith(1, "collective", "all_reduce", "rank 0 left the group");
  COMPARE(rig.launcher.engines.size(), std::size_t{2});  // rank 0 has not exited yet
  rig.exited(0, "SIGKILL");
  const IncidentEvent incident = onlyIncident(rig);
  expectIn(incident.what, "(hang) after step 2");
  expectIn(incident.what, "rank 0 (GPU 0): hang");
  COMPARE(rig.launcher.engines.size(), std::size_t{4});
  COMPARE(lastStart(rig.engine(3))["group"]["rank"], json(1));
}

// Note [the CPU rung of a group]: the ladder's last rung restarts the run as one engine on the CPU.
TEST_CASE(theCpuRungIsOneEngineOnTheCpu) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  std::size_t rank0 = 0;
  while (rig.supervisor.rung() != RecoveryRung::Cpu && rig.supervisor.restarts() < 6) {
    rig.exited(rank0 + 1, "SIGSEGV");  // rank 1 crashes, with nothing its runtime said
    rig.exited(rank0, "SIGKILL");      // rank 0, ended by the supervisor, exits
    rank0 += 2;
  }
  COMPARE(rig.supervisor.rung(), RecoveryRung::Cpu);
  COMPARE(rig.launcher.engines.size(), rank0 + 1);  // one engine, no other rank
  const json start = lastStart(rig.engine(rank0));
  VERIFY(!start.contains("group"));
  COMPARE(start["device"], json("cpu"));
  VERIFY(rig.supervisor.groupDevices().empty());
  VERIFY(sentAny(rig.engine(rank0), [](const Command& c) {
    const auto* set = std::get_if<SetToggleCommand>(&c);
    return set && set->toggle == Toggle::CpuFallback && set->value == true;
  }));
}

TEST_CASE(aHungCollectiveIsAHangNamingIt) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  rig.peerFailsAfterStep(1, 1, "hang", "all_reduce", "all_reduce timed out after 90 s");
  const IncidentEvent incident = onlyIncident(rig);
  expectIn(incident.what, "rank 1 (GPU 1): hang");
  expectIn(incident.action, "the collective all_reduce of rank 1 hung");
}

TEST_CASE(aLostGpuStopsWithTheChoiceOfTheOthers) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1,2", 3);
  rig.peerFailsAfterStep(5, 2, "no_device", "hipMalloc",
                         "hipErrorNoDevice: no ROCm-capable device is detected");
  COMPARE(rig.supervisor.restarts(), 0);
  const auto failed = rig.all<StateEvent>();
  COMPARE(failed.back().state, RunState::Failed);
  expectIn(onlyIncident(rig).action, "lorascope-train train --resume /runs/x --gpus 0,1");
  // An engine is ready, alone, for what the user chooses.
  COMPARE(rig.launcher.engines.size(), std::size_t{4});
  VERIFY(rig.supervisor.groupDevices().empty());
}

TEST_CASE(rankZerosEndEndsTheOtherRanks) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  rig.step(0, 1);
  rig.supervisor.send(StopCommand{});
  VERIFY(std::holds_alternative<StopCommand>(rig.engine(0).sent.back()));
  VERIFY(!sentAny(rig.engine(1), [](const Command& c) {
    return std::holds_alternative<StopCommand>(c);  // rank 0 alone checkpoints
  }));
  rig.report(0, StateEvent{RunState::Finished, 1, kStoppedByUser});
  VERIFY(rig.engine(1).killed);
  rig.exited(1, "SIGKILL");  // its end is no fault
  COMPARE(rig.all<IncidentEvent>().size(), std::size_t{0});
  COMPARE(rig.launcher.engines.size(), std::size_t{2});
}

// Out of memory on one rank: every rank restarts on the smaller micro-batch rung with the half
// micro-batch; undoing that rung during the run is refused (it would change the micro-batch).
TEST_CASE(outOfMemoryHalvesEveryRanksMicroBatchAndItsUndoWaits) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  rig.peerFailsAfterStep(3, 1, "out_of_memory", "allocate", "hipErrorOutOfMemory: out of memory");
  COMPARE(rig.supervisor.rung(), RecoveryRung::SmallerMicroBatch);
  for (std::size_t e : {std::size_t{2}, std::size_t{3}}) {
    VERIFY(sentAny(rig.engine(e), [](const Command& c) {
      const auto* set = std::get_if<SetToggleCommand>(&c);
      return set && set->toggle == Toggle::MicroBatch && set->value == 2;  // half of 4
    }));
  }
  rig.report(2, StateEvent{RunState::Running, 3, ""});
  const std::size_t sent = rig.engine(2).sent.size();
  rig.supervisor.send(UndoRungCommand{});
  COMPARE(rig.engine(2).sent.size(), sent);
  COMPARE(rig.supervisor.rung(), RecoveryRung::SmallerMicroBatch);
  expectIn(rig.all<ErrorEvent>().back().message, "'undo_rung' refused: a run on several GPUs");
}

// A rank whose engine cannot start the run (its GPU, the collective library) fails the run: rank 0
// would wait for it to join. A rank's failed step without a sticky error is rank 0's to report.
TEST_CASE(aRankThatCannotStartFailsTheRun) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  rig.report(1, ErrorEvent{"training", "step", 0, "non-finite loss", "", false});
  rig.report(1, StateEvent{RunState::Failed, 0, "non-finite loss"});
  VERIFY(!rig.engine(0).killed);

  Rig refused;
  refused.startGroup("/runs/x", "0,1", 2);
  refused.report(1,
                 ErrorEvent{"input", "start", 0, "GPU 1 is not usable: out of memory", "", false});
  refused.report(1, StateEvent{RunState::Failed, 0, "GPU 1 is not usable: out of memory"});
  VERIFY(refused.engine(0).killed);
  VERIFY(refused.engine(1).killed);
  const auto states = refused.all<StateEvent>();
  COMPARE(states.back().state, RunState::Failed);
  COMPARE(states.back().detail, std::string("rank 1 (GPU 1): GPU 1 is not usable: out of memory"));
  refused.exited(0, "SIGKILL");
  COMPARE(refused.supervisor.restarts(), 0);
  COMPARE(refused.all<IncidentEvent>().size(), std::size_t{0});
  COMPARE(refused.launcher.engines.size(), std::size_t{3});  // a fresh engine, ready, alone
  VERIFY(lastStart(refused.engine(2)).is_null());
}

// A start on several GPUs while a run goes on is refused here: the engine would answer it only
// once the run ended, and it would reach rank 0 alone.
TEST_CASE(aGroupStartDuringARunIsRefused) {
  Rig rig;
  rig.report(0, helloWith(2));
  rig.supervisor.send(StartCommand{{{"out", "/runs/a"}, {"demo", true}}});
  rig.report(0, StateEvent{RunState::Running, 0, ""});
  rig.supervisor.send(StartCommand{groupRun("/runs/b", "0,1")});
  COMPARE(rig.launcher.engines.size(), std::size_t{1});
  COMPARE(lastStart(rig.engine(0))["out"], json("/runs/a"));
  expectIn(rig.all<ErrorEvent>().back().message, "a run is already in progress");
}

TEST_CASE(aGroupTakesTogglesOnEveryRankAndRefusesPauseAndMicroBatch) {
  Rig rig;
  rig.startGroup("/runs/x", "0,1", 2);
  rig.supervisor.send(SetToggleCommand{Toggle::Serialize, true});
  for (std::size_t e : {std::size_t{0}, std::size_t{1}}) {
    VERIFY(sentAny(rig.engine(e), [](const Command& c) {
      const auto* set = std::get_if<SetToggleCommand>(&c);
      return set && set->toggle == Toggle::Serialize && set->value == true;
    }));
  }
  rig.supervisor.send(SetToggleCommand{Toggle::MicroBatch, 2});
  COMPARE(rig.all<ToggleRefusedEvent>().size(), std::size_t{1});
  rig.supervisor.send(PauseCommand{});
  VERIFY(!sentAny(rig.engine(0), [](const Command& c) {
    return std::holds_alternative<PauseCommand>(c) ||
           (std::holds_alternative<SetToggleCommand>(c) &&
            std::get<SetToggleCommand>(c).toggle == Toggle::MicroBatch);
  }));
  const auto errors = rig.all<ErrorEvent>();
  COMPARE(errors.size(), std::size_t{1});
  VERIFY(lstest::Message{errors[0].message}.contains("'pause' refused: a run on several GPUs"));
}
