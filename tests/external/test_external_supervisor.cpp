// test_external_supervisor.cpp — external/ExternalSupervisor and LaunchPlan with a fake launcher
// and a manual clock: a GPU error line and an exit restart the command on the next rung's profile
// with the resume argument at the newest checkpoint; out of memory halves the batch through the
// template (and without one the run fails, saying why); a Python error is not restarted; silence
// past --hang-after kills and restarts; the probe numbers the steps (offset by the resumed
// checkpoint) and the output fills what it lacks, each step announced once; counted Trainer
// steps are offset too; other ranks give no progress, a rank killed by a signal restarts the
// group; a stop kills after the grace period; the ladder ends before the CPU.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <thread>

#include "external/ExternalSupervisor.h"
#include "profiles/Builtins.h"

using namespace lorascope;
using namespace lorascope::external;

namespace {

struct FakeRun : CommandRun {
  int* kills;
  int* terminates;
  explicit FakeRun(int* k, int* t) : kills(k), terminates(t) {}
  void terminate() override { ++*terminates; }
  void kill() override { ++*kills; }
  void requestSnapshot() override {}
};

struct FakeLauncher : CommandLauncher {
  std::vector<LaunchSpec> launches;
  int kills = 0;
  int terminates = 0;
  std::unique_ptr<CommandRun> launch(int, const LaunchSpec& spec) override {
    launches.push_back(spec);
    return std::make_unique<FakeRun>(&kills, &terminates);
  }
};

struct Harness {
  FakeLauncher launcher;
  std::int64_t now = 0;
  std::vector<engine::Event> events;
  std::unique_ptr<ExternalSupervisor> supervisor;
  explicit Harness(SupervisedCommand command,
                   profiles::Profile profile = profiles::defaultProfile()) {
    supervisor = std::make_unique<ExternalSupervisor>(
        launcher, std::move(command), std::move(profile),
        [this](const engine::TimedEvent& e) { events.push_back(e.event); }, [this] { return now; });
    supervisor->start();
  }
  template <typename T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& e : events)
      if (const auto* t = std::get_if<T>(&e))
        out.push_back(*t);
    return out;
  }
  bool hasArgument(std::size_t launch, const std::string& word) const {
    const auto& a = launcher.launches.at(launch).arguments;
    return std::find(a.begin(), a.end(), word) != a.end();
  }
};

SupervisedCommand command(const QTemporaryDir& dir) {
  SupervisedCommand c;
  c.program = "/usr/bin/python3";
  c.arguments = {"train.py"};
  c.resumeArgument = "--resume {checkpoint_dir}";
  c.checkpointGlob = dir.filePath("out/checkpoint-*").toStdString();
  return c;
}

// command(dir) whose batch (starting at `batch`) is passed through `argument`.
SupervisedCommand withBatch(const QTemporaryDir& dir, std::string argument, int batch) {
  SupervisedCommand c = command(dir);
  c.batchArgument = std::move(argument);
  c.batch = batch;
  return c;
}

void makeCheckpoint(const QTemporaryDir& dir, const std::string& name) {
  std::filesystem::create_directories(dir.filePath("out").toStdString() + "/" + name);
}

}  // namespace

class TestExternalSupervisor : public QObject {
  Q_OBJECT
 private slots:
  void blasErrorRestartsWithTheNextProfileAndTheNewestCheckpoint() {
    QTemporaryDir dir;
    makeCheckpoint(dir, "checkpoint-500");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    makeCheckpoint(dir, "checkpoint-1000");  // newer, and lexically smaller
    Harness h(command(dir));
    QCOMPARE(h.launcher.launches.size(), std::size_t{1});
    QVERIFY(!h.hasArgument(0, "--resume"));
    h.supervisor->outputLine(1, false, "{'loss': 1.5, 'step': 1040}");
    h.supervisor->outputLine(1, true,
                             "RuntimeError: HIPBLAS_STATUS_INTERNAL_ERROR in hipblasLtMatmul");
    h.supervisor->exited(1, CommandExit{false, 1, ""});
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    const LaunchSpec& second = h.launcher.launches[1];
    QCOMPARE(second.profileName, std::string("Built-in GEMM"));
    QCOMPARE(second.environment.at("TORCH_BLAS_PREFER_HIPBLASLT"), std::string("0"));
    QVERIFY(h.hasArgument(1, "--resume"));
    QVERIFY(h.hasArgument(1, dir.filePath("out/checkpoint-1000").toStdString()));
    const auto errors = h.all<engine::ErrorEvent>();
    QCOMPARE(errors.size(), std::size_t{1});
    QCOMPARE(errors[0].category, std::string("blas_failure"));
    const auto incidents = h.all<engine::IncidentEvent>();
    QCOMPARE(incidents.size(), std::size_t{1});
    QVERIFY(incidents[0].action.find("checkpoint-1000") != std::string::npos);
    QCOMPARE(incidents[0].step, std::int64_t{1040});
    // The resumed attempt redoes steps up to 1040: announced once only; a redrawn step too.
    h.supervisor->outputLine(2, false, "{'loss': 1.7, 'step': 1001}");
    h.supervisor->outputLine(2, false, "{'loss': 1.4, 'step': 1041}");
    h.supervisor->outputLine(2, false, "{'loss': 1.4, 'step': 1041}");
    const auto steps = h.all<engine::StepEvent>();
    QCOMPARE(steps.size(), std::size_t{2});
    QCOMPARE(steps[1].step, std::int64_t{1041});
    // The second attempt finishes: the run is done.
    h.supervisor->exited(2, CommandExit{false, 0, ""});
    QCOMPARE(*h.supervisor->outcome(), 0);
  }
  void outOfMemoryHalvesTheBatchThroughTheTemplate() {
    QTemporaryDir dir;
    Harness h(withBatch(dir, "--per_device_train_batch_size {batch}", 8));
    QVERIFY(h.hasArgument(0, "8"));
    h.supervisor->outputLine(
        1, true, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
    h.supervisor->exited(1, CommandExit{false, 1, ""});
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    QVERIFY(h.hasArgument(1, "4"));
    QCOMPARE(h.launcher.launches[1].profileName, std::string("Low VRAM"));
    QVERIFY(h.all<engine::IncidentEvent>()[0].action.find("no checkpoint matches") !=
            std::string::npos);  // no checkpoint yet: from the beginning
    // Again: 2, then 1; then out of memory at batch 1 ends the run.
    for (int attempt = 2; attempt <= 3; ++attempt) {
      h.supervisor->outputLine(attempt, true, "HIP out of memory. Tried to allocate 1.00 GiB");
      h.supervisor->exited(attempt, CommandExit{false, 1, ""});
    }
    QVERIFY(h.hasArgument(3, "1"));
    h.supervisor->outputLine(4, true, "HIP out of memory. Tried to allocate 1.00 GiB");
    h.supervisor->exited(4, CommandExit{false, 1, ""});
    QCOMPARE(h.launcher.launches.size(), std::size_t{4});
    QCOMPARE(*h.supervisor->outcome(), 1);
    QVERIFY(h.all<engine::IncidentEvent>().back().action.find("already 1") != std::string::npos);
  }
  // A signal from outside (the kernel's out-of-memory killer, a user) is no GPU error: the same
  // profile and batch again, where an out of memory on the smaller-batch rung halves it.
  void aKillFromOutsideRestartsOnTheSameRungAndBatch() {
    QTemporaryDir dir;
    Harness h(withBatch(dir, "--bs {batch}", 8));
    h.supervisor->exited(1, CommandExit{true, 0, "SIGKILL"});
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    QCOMPARE(h.launcher.launches[1].profileName, h.launcher.launches[0].profileName);
    QVERIFY(h.hasArgument(1, "8"));
    const engine::IncidentEvent killed = h.all<engine::IncidentEvent>().at(0);
    QVERIFY2(killed.what.find("killed by SIGKILL after step 0 (killed)") != std::string::npos,
             killed.what.c_str());
    QVERIFY2(killed.action.find("out-of-memory killer") != std::string::npos,
             killed.action.c_str());
    h.supervisor->outputLine(2, true, "torch.OutOfMemoryError: CUDA out of memory.");
    h.supervisor->exited(2, CommandExit{false, 1, ""});
    QVERIFY(h.hasArgument(2, "4"));
    h.supervisor->exited(3, CommandExit{true, 0, "SIGTERM"});
    QCOMPARE(h.launcher.launches.size(), std::size_t{4});
    QCOMPARE(h.launcher.launches[3].profileName, std::string("Low VRAM"));
    QVERIFY(h.hasArgument(3, "4"));
    QCOMPARE(h.supervisor->batch(), 4);
  }
  // With the host's memory read (CommandHost's telemetry), a SIGKILL's advice weighs it: nearly
  // full names the out-of-memory killer, roomy rules it out.
  void aSigkillIsReadAgainstTheHostsMemory() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->noteHostMemory({std::uint64_t{300} << 20, std::uint64_t{32} << 30});
    h.supervisor->exited(1, CommandExit{true, 0, "SIGKILL"});
    const std::string oom = h.all<engine::IncidentEvent>().at(0).action;
    QVERIFY2(oom.find("Most likely the kernel's out-of-memory killer: host memory was 99% used "
                      "(300 MiB available)") != std::string::npos,
             oom.c_str());
    QVERIFY2(oom.find("lower the command's batch") != std::string::npos, oom.c_str());
    h.supervisor->noteHostMemory({std::uint64_t{16} << 30, std::uint64_t{32} << 30});
    h.supervisor->exited(2, CommandExit{true, 0, "SIGKILL"});
    const std::string roomy = h.all<engine::IncidentEvent>().at(1).action;
    QVERIFY2(roomy.find("so not the out-of-memory killer") != std::string::npos, roomy.c_str());
  }
  void outOfMemoryWithoutATemplateSaysWhy() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->outputLine(1, true, "CUDA out of memory. Tried to allocate 20.00 MiB");
    h.supervisor->exited(1, CommandExit{false, 1, ""});
    QCOMPARE(h.launcher.launches.size(), std::size_t{1});
    QCOMPARE(*h.supervisor->outcome(), 1);
    QVERIFY(h.all<engine::IncidentEvent>()[0].action.find("--batch-arg") != std::string::npos);
  }
  void aScriptErrorIsNotRestarted() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->outputLine(1, true, "FileNotFoundError: data.json");
    h.supervisor->exited(1, CommandExit{false, 1, ""});
    QCOMPARE(h.launcher.launches.size(), std::size_t{1});
    QCOMPARE(*h.supervisor->outcome(), 1);
    QVERIFY(h.all<engine::ErrorEvent>().empty());
  }
  void aCaughtErrorInARunThatFinishesIsNoIncident() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->outputLine(1, true, "CUDA out of memory; retrying with a smaller batch");
    h.supervisor->exited(1, CommandExit{false, 0, ""});
    QCOMPARE(h.launcher.launches.size(), std::size_t{1});
    QCOMPARE(*h.supervisor->outcome(), 0);
    QVERIFY(h.all<engine::IncidentEvent>().empty());
  }
  void aSignalIsRestartedOneRungUp() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->exited(1, CommandExit{true, 0, "SIGSEGV"});
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    QVERIFY(h.all<engine::IncidentEvent>()[0].what.find("SIGSEGV") != std::string::npos);
  }
  void silencePastTheHangLimitKillsAndRestartsSerialized() {
    QTemporaryDir dir;
    SupervisedCommand c = command(dir);
    c.hangAfterSeconds = 30;
    Harness h(c);
    h.now = 20'000;
    h.supervisor->outputLine(1, false, "loading");  // output moves the deadline
    h.now = 45'000;
    h.supervisor->checkDeadlines();
    QCOMPARE(h.launcher.kills, 0);
    h.now = 50'001;
    h.supervisor->checkDeadlines();
    QCOMPARE(h.launcher.kills, 1);
    h.supervisor->exited(1, CommandExit{true, 0, "SIGKILL"});
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    const LaunchSpec& second = h.launcher.launches[1];
    QCOMPARE(second.profileName, std::string("Debug: serialize + blocking"));
    QCOMPARE(second.environment.at("AMD_SERIALIZE_KERNEL"), std::string("3"));
    QCOMPARE(second.environment.at("CUDA_LAUNCH_BLOCKING"), std::string("1"));
    QVERIFY(h.all<engine::IncidentEvent>()[0].what.find("(hang)") != std::string::npos);
  }
  void theLadderEndsBeforeTheCpu() {
    QTemporaryDir dir;
    SupervisedCommand c = command(dir);
    Harness h(c);
    for (int attempt = 1; attempt <= 3; ++attempt) {
      h.supervisor->outputLine(attempt, true, "an illegal memory access was encountered");
      h.supervisor->exited(attempt, CommandExit{false, 1, ""});
    }
    // serialize, then smaller batch (no template: skipped), then the CPU: exhausted.
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    QCOMPARE(*h.supervisor->outcome(), 1);
    QVERIFY(h.all<engine::IncidentEvent>().back().action.find("exhausted") != std::string::npos);
  }
  void theProbeNumbersTheStepsAndTheOutputFillsWhatItLacks() {
    QTemporaryDir dir;
    makeCheckpoint(dir, "checkpoint-40");
    Harness h(command(dir));
    auto probeStep = [](int step, double loss, int batch = 8) {
      engine::StepEvent event;
      event.step = step;
      event.loss = loss;
      event.microBatch = batch;
      event.accumulation = 1;
      return engine::encodeEvent({5, event});
    };
    h.supervisor->outputLine(1, true, " 0%|          | 0/60 [00:00<?, ?it/s]");
    h.supervisor->probeLine(1, probeStep(1, 1.25));
    h.supervisor->outputLine(1, false, "{'loss': '1.3', 'learning_rate': '0.001'}");  // step 1
    h.supervisor->outputLine(1, true, "Memory access fault by GPU node-1");
    h.supervisor->exited(1, CommandExit{true, 0, "SIGABRT"});
    h.supervisor->probeLine(2, probeStep(1, 1.1));  // the resumed process counts from 1 again
    auto steps = h.all<engine::StepEvent>();
    QCOMPARE(steps.size(), std::size_t{2});  // once each: the probe's, not the output's too
    QCOMPARE(steps[0].step, std::int64_t{1});
    QCOMPARE(steps[0].loss, 1.25);                    // the probe's exact loss, not the printed 1.3
    QCOMPARE(steps[0].microBatch, 8);                 // the batch the data loader gave
    QCOMPARE(steps[0].totalSteps, std::int64_t{60});  // the bar's total fills the probe's
    QCOMPARE(steps[1].step, std::int64_t{41});
    // A probe step without a loss waits for the output's loss of that step.
    h.supervisor->probeLine(2, probeStep(2, std::nan("")));
    QCOMPARE(h.all<engine::StepEvent>().size(), std::size_t{2});
    h.supervisor->outputLine(2, false, "{'loss': '1.1', 'learning_rate': '0.001'}");  // 41
    h.supervisor->outputLine(2, false, "{'loss': '0.9', 'learning_rate': '0.001'}");  // 42
    steps = h.all<engine::StepEvent>();
    QCOMPARE(steps.size(), std::size_t{3});
    QCOMPARE(steps[2].step, std::int64_t{42});
    QCOMPARE(steps[2].loss, 0.9);
    // A probe line that is not the protocol is an error event, not a crash.
    h.supervisor->probeLine(2, "{\"v\": 1, \"type\": \"memory\", \"allocated_bytes\": \"lots\"}");
    QVERIFY(h.all<engine::ErrorEvent>().back().category == "protocol");
  }
  void withoutTheProbeTheBatchIsUnknownUnlessTheTemplateSetsIt() {
    QTemporaryDir dir;
    Harness plain(command(dir));
    plain.supervisor->outputLine(1, false, "{'loss': '9.037', 'grad_norm': '0.15'}");
    QCOMPARE(plain.all<engine::StepEvent>().at(0).microBatch, 0);
    QCOMPARE(plain.all<engine::StepEvent>().at(0).gradNorm, 0.15);
    Harness templated(withBatch(dir, "--bs {batch}", 16));
    templated.supervisor->outputLine(1, false, "{'loss': '9.037'}");
    QCOMPARE(templated.all<engine::StepEvent>().at(0).microBatch, 16);
  }
  void evaluationsFollowTheirStep() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->outputLine(1, false, "{'loss': '9.04', 'epoch': '0.25'}");
    h.supervisor->outputLine(1, false, "{'eval_loss': '9.025', 'eval_runtime': '0.01'}");
    h.supervisor->outputLine(1, false, "{'loss': '9.03', 'epoch': '0.5'}");
    h.supervisor->outputLine(1, false, "{'eval_loss': '9.03', 'eval_runtime': '0.01'}");
    const auto evals = h.all<engine::EvalEvent>();
    QCOMPARE(evals.size(), std::size_t{2});
    QCOMPARE(evals[0].step, std::int64_t{1});
    QCOMPARE(evals[1].step, std::int64_t{2});
    QCOMPARE(evals[1].bestLoss, 9.025);
    QCOMPARE(evals[1].bestStep, std::int64_t{1});
    QCOMPARE(h.all<engine::StepEvent>().size(), std::size_t{2});
  }
  void otherRanksGiveNoProgressButTheirErrorsClassify() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->outputLine(1, false, "[rank1]:{'loss': 5.0, 'step': 1}");
    h.supervisor->outputLine(1, false, "[rank0]:{'loss': 1.0, 'step': 1}");
    h.supervisor->outputLine(1, false, "{'loss': 1.0, 'step': 1}");  // the same step again
    const auto steps = h.all<engine::StepEvent>();
    QCOMPARE(steps.size(), std::size_t{1});
    QCOMPARE(steps[0].loss, 1.0);
    h.supervisor->outputLine(1, true, "[rank1]: torch.OutOfMemoryError: CUDA out of memory.");
    QCOMPARE(h.all<engine::ErrorEvent>().at(0).category, std::string("out_of_memory"));
  }
  void aRankKilledByASignalRestartsTheGroup() {
    QTemporaryDir dir;
    makeCheckpoint(dir, "checkpoint-4");
    Harness h(command(dir));
    h.supervisor->outputLine(1, false, "[default0]:{'loss': 1.0, 'step': 5}");
    h.supervisor->outputLine(1, true, "  exitcode  : -9 (pid: 4242)");
    h.supervisor->outputLine(1, true, "  traceback : Signal 9 (SIGKILL) received by PID 4242");
    h.supervisor->exited(1, CommandExit{false, 1, ""});  // torchrun's own exit
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    QVERIFY(h.hasArgument(1, dir.filePath("out/checkpoint-4").toStdString()));
    QVERIFY(h.all<engine::IncidentEvent>().at(0).what.find("killed by SIGKILL") !=
            std::string::npos);
  }
  // torchrun lists the worker it ended itself (SIGTERM) before the root cause, the worker that
  // died first (SIGKILL, as recorded on two H200s): the incident names the root cause's signal.
  void aRankKilledNamesTheRootCauseNotThePeerTorchrunEnded() {
    QTemporaryDir dir;
    makeCheckpoint(dir, "checkpoint-6");
    Harness h(command(dir));
    for (const char* line :
         {"Failures:", "[1]:", "  rank      : 0 (local_rank: 0)", "  exitcode  : -15 (pid: 24237)",
          "  traceback : Signal 15 (SIGTERM) received by PID 24237",
          "Root Cause (first observed failure):", "[0]:", "  rank      : 1 (local_rank: 1)",
          "  exitcode  : -9 (pid: 24238)",
          "  traceback : Signal 9 (SIGKILL) received by PID 24238"}) {
      h.supervisor->outputLine(1, true, line);
    }
    h.supervisor->exited(1, CommandExit{false, 1, ""});
    const std::string what = h.all<engine::IncidentEvent>().at(0).what;
    QVERIFY2(what.find("killed by SIGKILL") != std::string::npos, what.c_str());
  }
  void aResumedBarCountingFromItsStartIsOffset() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->outputLine(1, false, "{'loss': 1.0, 'step': 1}");
    h.supervisor->outputLine(1, false, "{'loss': 1.0, 'step': 2}");
    h.supervisor->outputLine(1, false, "{'loss': 1.0, 'step': 3}");
    makeCheckpoint(dir, "checkpoint-2");
    h.supervisor->exited(1, CommandExit{true, 0, "SIGSEGV"});
    // kohya's resumed bar starts again at 1: steps 3, 4 of the run.
    h.supervisor->outputLine(2, false, "{'loss': 0.5, 'step': 1}");
    h.supervisor->outputLine(2, false, "{'loss': 0.4, 'step': 2}");
    const auto steps = h.all<engine::StepEvent>();
    QCOMPARE(steps.size(), std::size_t{4});
    QCOMPARE(steps[3].step, std::int64_t{4});
    QCOMPARE(steps[3].loss, 0.4);
  }
  void countedHfStepsAreOffsetByTheResumedCheckpoint() {
    QTemporaryDir dir;
    makeCheckpoint(dir, "checkpoint-2");
    Harness h(command(dir));
    // Trainer's log dicts without a bar or a 'step' key: the parser counts them.
    h.supervisor->outputLine(1, false, "{'loss': 2.0, 'learning_rate': 0.0001, 'epoch': 0.1}");
    h.supervisor->outputLine(1, false, "{'loss': 1.9, 'learning_rate': 0.0001, 'epoch': 0.2}");
    h.supervisor->outputLine(1, true, "RuntimeError: HIP error: an illegal memory access");
    h.supervisor->exited(1, CommandExit{false, 1, ""});
    QCOMPARE(h.launcher.launches.size(), std::size_t{2});
    // The resumed process counts from 1 again: its dicts are steps 3 and 4 of the run.
    h.supervisor->outputLine(2, false, "{'loss': 1.8, 'learning_rate': 0.0001, 'epoch': 0.3}");
    h.supervisor->outputLine(2, false, "{'loss': 1.7, 'learning_rate': 0.0001, 'epoch': 0.4}");
    const auto steps = h.all<engine::StepEvent>();
    QCOMPARE(steps.size(), std::size_t{4});
    QCOMPARE(steps[2].step, std::int64_t{3});
    QCOMPARE(steps[2].loss, 1.8);
    QCOMPARE(steps[3].step, std::int64_t{4});
  }
  // The attempt's command line is one a shell reads back as the same words.
  void theLoggedCommandLineIsQuotedForAShell() {
    QTemporaryDir dir;
    SupervisedCommand c = command(dir);
    c.arguments = {"-c", "print({'loss': 1.5})", "out dir", ""};
    Harness h(c);
    const auto logs = h.all<engine::LogEvent>();
    QVERIFY(!logs.empty());
    QCOMPARE(logs[0].text, std::string("attempt 1 with profile 'Balanced': /usr/bin/python3 -c "
                                       "'print({'\\''loss'\\'': 1.5})' 'out dir' ''"));
  }
  void stopEndsTheRunWithoutARestart() {
    QTemporaryDir dir;
    Harness h(command(dir));
    h.supervisor->send(engine::StopCommand{});
    QCOMPARE(h.launcher.terminates, 1);
    // A command that ignores SIGTERM is killed once the grace period has passed.
    QCOMPARE(*h.supervisor->nextDeadlineMs(), std::int64_t{10'000});
    h.now = 9'999;
    h.supervisor->checkDeadlines();
    QCOMPARE(h.launcher.kills, 0);
    h.now = 10'000;
    h.supervisor->checkDeadlines();
    QCOMPARE(h.launcher.kills, 1);
    h.supervisor->exited(1, CommandExit{true, 0, "SIGTERM"});
    QCOMPARE(h.launcher.launches.size(), std::size_t{1});
    QCOMPARE(*h.supervisor->outcome(), 130);
  }
  void profilesAreMappedForExternalTrainers() {
    const profiles::Profile* stable = nullptr;
    for (const auto& p : profiles::builtinProfiles())
      if (p.name == "ROCm stable")
        stable = &p;
    QVERIFY(stable != nullptr);
    const ExternalEnvironment env = mapProfileForExternal(*stable);
    QCOMPARE(env.variables.at("GPU_MAX_HW_QUEUES"), std::string("2"));
    QCOMPARE(env.variables.at("PYTORCH_HIP_ALLOC_CONF"), std::string("max_split_size_mb:512"));
    QVERIFY(env.notes.empty());
    // Low VRAM's arena, activation checkpointing and micro-batch are LoRAscope's own: noted.
    const ExternalEnvironment low =
        mapProfileForExternal(*profileForRung(runtime::RecoveryRung::SmallerMicroBatch));
    QCOMPARE(low.notes.size(), std::size_t{3});
    QVERIFY(low.variables.empty());
  }
  void templatesAndCheckpointSteps() {
    QCOMPARE(splitTemplate("--resume '{checkpoint_dir}' -x"),
             (std::vector<std::string>{"--resume", "{checkpoint_dir}", "-x"}));
    QCOMPARE(fillTemplate({"--bs={batch}"}, "{batch}", "4"), std::vector<std::string>{"--bs=4"});
    QCOMPARE(checkpointStep("out/checkpoint-500"), std::int64_t{500});
    QCOMPARE(checkpointStep("out/at-step00000120"), std::int64_t{120});
    QCOMPARE(checkpointStep("out/last"), std::int64_t{0});
    QVERIFY(!newestCheckpoint("/nonexistent/checkpoint-*"));
  }
};

QTEST_GUILESS_MAIN(TestExternalSupervisor)
#include "test_external_supervisor.moc"
