// test_run_writer.cpp — a writer whose supervisor holds the run's lock for it
// (train/RunDirectory.h: an engine told "run_lock_holder") outlives that supervisor (the window or
// `train` killed): the system drops the supervisor's lock, so the writer's next write takes the
// lock over; when another process took the folder first, the write is refused naming it and nothing
// is written. With this program as the supervisor (a child that holds the lock) and the engine (its
// child), POSIX only: the supervisor is killed alone and its child lives on.
#include "TestRunner.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "TempDir.h"
#include "common/BoundedFile.h"
#include "common/ChildProcess.h"
#include "common/FileLock.h"
#include "common/OsError.h"  // defines: pathFromUtf8
#include "common/Platform.h"
#include "train/CheckpointError.h"
#include "train/RunDirectory.h"

namespace fs = std::filesystem;
namespace common = lorascope::common;
namespace train = lorascope::train;

namespace {

std::string readAll(const fs::path& path) {
  return common::readBoundedFile(path, {1 << 20, "a test file"});
}

// Waits up to a minute for `ready`; false when it never came.
template <typename Ready>
bool waitFor(Ready ready) {
  for (int i = 0; i < 3000 && !ready(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return ready();
}

// The engine's side: opens the run for writing with its parent `supervisor` as the lock's
// holder, says so, waits until that parent has ended and the test has written "go", then writes
// one metrics line and leaves what came of it in engine.said.
int engineChild(const fs::path& dir, std::uint32_t supervisor) {
  const train::RunDirectory run =
      train::RunDirectory::open(dir, train::RunDirectory::Access::Write, supervisor);
  std::cout << "opened" << std::endl;
  waitFor([&] { return !common::parentRuns(supervisor) && fs::exists(dir / "go"); });
  std::string said;
  try {
    train::StepMetrics step;
    step.step = 1;
    step.loss = 2.5;
    run.appendMetrics(step);
    said = "wrote";
  } catch (const train::CheckpointError& e) {
    said = std::string("refused: ") + e.what();
  }
  std::ofstream(dir / "engine.said.tmp") << said;
  fs::rename(dir / "engine.said.tmp", dir / "engine.said");
  return 0;
}

// The supervisor's side: holds the run's lock, starts the engine with its own id as the holder,
// and says "ready ENGINE_PID" once the engine has opened the run; then waits to be killed.
int supervisorChild(const char* dir) {
  const common::FileLock lock(common::pathFromUtf8(dir) / common::kRunLockFile);
  common::ChildProcess engine({common::currentExecutablePath(),
                               {"--engine", dir, std::to_string(common::currentProcessId())},
                               {}});
  std::string said;
  char buffer[64];
  while (said.find("opened") == std::string::npos) {
    const std::size_t n = engine.readOutput(buffer);
    if (n == 0)
      return 1;
    said.append(buffer, n);
  }
  std::cout << "ready " << engine.id() << std::endl;
  std::this_thread::sleep_for(std::chrono::minutes(5));
  return 0;
}

struct Rig {
  Rig() {
    fs::create_directories(tmp.path() / "model");
    std::ofstream(tmp.path() / "model" / "config.json") << "{}";
    train::RunDirectory::create(
        dir, {{"model_path", lstest::utf8Text(tmp.path() / "model")}, {"training", {}}});
  }

  // Starts the supervisor and its engine; the engine's process id.
  std::int64_t start() {
    supervisor.emplace(common::ChildOptions{
        common::currentExecutablePath(), {"--supervise", lstest::utf8Text(dir)}, {}});
    std::string said;
    char buffer[64];
    while (said.find('\n') == std::string::npos) {
      const std::size_t n = supervisor->readOutput(buffer);
      if (n == 0)
        return 0;
      said.append(buffer, n);
    }
    return std::stoll(said.substr(said.find(' ') + 1));
  }

  std::uint32_t lockHolder() const {
    try {
      const common::FileLock probe(dir / common::kRunLockFile);
      return 0;
    } catch (const common::LockBusy& e) {
      return e.holder().pid;
    }
  }

  // Kills the supervisor alone; its engine lives on.
  void killSupervisor() {
    supervisor->kill();
    supervisor->wait();
  }

  std::string engineSaid() {
    VERIFY2(waitFor([&] { return fs::exists(dir / "engine.said"); }), "the engine never wrote");
    return readAll(dir / "engine.said");
  }

  lstest::TempDir tmp;
  fs::path dir = tmp.path() / "run";
  std::optional<common::ChildProcess> supervisor;
};

}  // namespace

TEST_CASE(theWriterTakesTheLockOverWhenItsSupervisorEnds) {
  Rig rig;
  const std::int64_t engine = rig.start();
  VERIFY2(engine > 0, "the engine opened the run under its supervisor");
  COMPARE(static_cast<std::int64_t>(rig.lockHolder()), rig.supervisor->id());
  const std::int64_t supervisorPid = rig.supervisor->id();
  rig.killSupervisor();
  std::ofstream(rig.dir / "go") << "";
  COMPARE(rig.engineSaid(), std::string("wrote"));
  // The record names the engine: it took the lock once its supervisor's was gone.
  const common::LockHolder record = common::parseLockHolder(readAll(rig.dir / "run.lock"));
  VERIFY2(static_cast<std::int64_t>(record.pid) == engine,
          "run.lock names pid " + std::to_string(record.pid) + ", not the engine " +
              std::to_string(engine) + " (its supervisor was " + std::to_string(supervisorPid) +
              ")");
  VERIFY(readAll(rig.dir / "metrics.jsonl").find("\"step\":1") != std::string::npos);
}

TEST_CASE(aRunTakenWhileItsSupervisorIsGoneIsNotWrittenInto) {
  Rig rig;
  VERIFY(rig.start() > 0);
  const std::int64_t supervisorPid = rig.supervisor->id();
  rig.killSupervisor();
  const common::FileLock second(rig.dir / common::kRunLockFile);  // a second trainer, first
  std::ofstream(rig.dir / "go") << "";
  const lstest::Message said{rig.engineSaid()};
  VERIFY2(said.contains("refused: ") &&
              said.contains("is in use: pid " + std::to_string(common::currentProcessId())) &&
              said.contains("took this run when this engine's supervisor (pid " +
                            std::to_string(supervisorPid) + ") ended"),
          said.text);
  VERIFY(!fs::exists(rig.dir / "metrics.jsonl") || readAll(rig.dir / "metrics.jsonl").empty());
}

int main(int argc, char** argv) {
  if (argc > 3 && std::string(argv[1]) == "--engine") {
    return engineChild(common::pathFromUtf8(argv[2]),
                       static_cast<std::uint32_t>(std::stoul(argv[3])));
  }
  if (argc > 2 && std::string(argv[1]) == "--supervise") {
    return supervisorChild(argv[2]);
  }
  return lstest::runTests(argc, argv);
}
