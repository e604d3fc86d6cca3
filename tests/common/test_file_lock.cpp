// test_file_lock.cpp — common/FileLock on this system (issue 31 item 3: two trainers wrote one
// run folder): a second lock of the same file is refused, in this process and from another one,
// and the refusal names the holder's process id and start time; a lock whose holder was killed
// is taken over by the next one, which rewrites the record; a record of a process that is gone,
// with no lock held, is no obstacle; a lock file its holder removed is no lock. A child's parent
// is this process (the engine's check of the supervisor that holds its run's lock). With this
// program as its own child (the holder to kill), on the Qt-free runner, so that the Windows build
// runs the LockFileEx side under Wine.
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

namespace fs = std::filesystem;
namespace common = lorascope::common;

namespace {

std::string readAll(const fs::path& path) {
  return common::readBoundedFile(path, {1 << 20, "a lock file"});
}

// The child's side: takes the lock of argv[2], says so, and waits to be killed.
int holdingChild(const char* path) {
  const common::FileLock lock(common::pathFromUtf8(path));
  std::cout << "held" << std::endl;
  std::this_thread::sleep_for(std::chrono::minutes(5));
  return 0;
}

}  // namespace

TEST_CASE(aSecondLockIsRefusedNamingTheHolder) {
  lstest::TempDir tmp;
  const fs::path path = tmp.path() / "run.lock";
  std::optional<common::FileLock> first(std::in_place, path);
  const common::LockHolder recorded = common::parseLockHolder(readAll(path));
  COMPARE(recorded.pid, common::currentProcessId());
  VERIFY2(recorded.started.size() == 20 && recorded.started.back() == 'Z',
          "the start time is recorded in UTC: " + recorded.started);
  try {
    common::FileLock second(path);
    FAIL("a second lock of the same file in the same process is refused");
  } catch (const common::LockBusy& e) {
    COMPARE(e.holder().pid, common::currentProcessId());
    const lstest::Message message{e.what()};
    VERIFY2(message.contains("run.lock") &&
                message.contains("pid " + std::to_string(common::currentProcessId())) &&
                message.contains(recorded.started),
            e.what());
  }
  first.reset();
  const common::FileLock again(path);  // released with its holder
  COMPARE(common::parseLockHolder(readAll(path)).pid, common::currentProcessId());
}

TEST_CASE(aKilledHoldersLockIsTakenOver) {
  lstest::TempDir tmp;
  const fs::path path = tmp.path() / "run.lock";
  common::ChildProcess child(
      {common::currentExecutablePath(), {"--hold", lstest::utf8Text(path)}, {}});
  char buffer[16];
  std::string said;
  while (said.find("held") == std::string::npos) {
    const std::size_t n = child.readOutput(buffer);
    VERIFY2(n > 0, "the child took the lock (it said: '" + said + "')");
    said.append(buffer, n);
  }
  try {
    common::FileLock mine(path);
    FAIL("the lock another process holds is refused");
  } catch (const common::LockBusy& e) {
    COMPARE(static_cast<std::int64_t>(e.holder().pid), child.id());
    VERIFY2(lstest::Message{e.what()}.contains("pid " + std::to_string(child.id()) + ", since "),
            e.what());
  }
  child.kill();
  child.wait();
  // The record still names the dead process; the system dropped its lock.
  COMPARE(static_cast<std::int64_t>(common::parseLockHolder(readAll(path)).pid), child.id());
  const common::FileLock mine(path);
  COMPARE(common::parseLockHolder(readAll(path)).pid, common::currentProcessId());
}

// A holder that gives up a folder it made removes the lock file while it still holds it
// (RunFolderLock): on POSIX the path is then free at once, and one that had opened the old file
// before and locks it after the release locks the path's new file instead, not the removed one.
// Windows deletes a file when its last handle closes: until the holder lets go the name stays
// (delete pending, which no one can open), and the file goes with the release.
TEST_CASE(aRemovedLockFileIsNoLock) {
  lstest::TempDir tmp;
  const fs::path path = tmp.path() / "run.lock";
  std::optional<common::FileLock> leaving(std::in_place, path);
  VERIFY(leaving->removeFile());
  if (common::kOsFamily == common::OsFamily::Windows) {
    leaving.reset();
    VERIFY(!fs::exists(path));
    const common::FileLock next(path);  // a new file at the path
    COMPARE(common::parseLockHolder(readAll(path)).pid, common::currentProcessId());
    return;
  }
  VERIFY(!fs::exists(path));
  const common::FileLock next(path);  // a new file at the path
  COMPARE(common::parseLockHolder(readAll(path)).pid, common::currentProcessId());
  leaving.reset();
  try {
    common::FileLock third(path);
    FAIL("the new file's lock is held");
  } catch (const common::LockBusy& e) {
    COMPARE(e.holder().pid, common::currentProcessId());
  }
}

// The engine's check of its supervisor: a child's parent is this process.
TEST_CASE(aChildsParentIsThisProcess) {
  common::ChildProcess child({common::currentExecutablePath(), {"--parent"}, {}});
  std::string said;
  char buffer[64];
  for (std::size_t n; (n = child.readOutput(buffer)) > 0;)
    said.append(buffer, n);
  COMPARE(child.wait().exitCode, 0);
  // Digits, then a line end ("\r\n" in a Windows console's text mode).
  COMPARE(said.substr(0, said.find_first_of("\r\n")), std::to_string(common::currentProcessId()));
}

TEST_CASE(aStaleRecordWithoutALockIsNoObstacle) {
  lstest::TempDir tmp;
  const fs::path path = tmp.path() / "run.lock";
  std::ofstream(path) << "pid=999999999\nstarted=2020-01-01T00:00:00Z\nsome longer leftover text\n";
  const common::FileLock lock(path);
  const std::string record = readAll(path);
  COMPARE(common::parseLockHolder(record).pid, common::currentProcessId());
  VERIFY2(record.find("leftover") == std::string::npos && record.find("2020") == std::string::npos,
          "the old record is replaced whole: " + record);
}

TEST_CASE(theRecordIsReadDefensively) {
  // A record is shown in messages: nothing but digits and a time stamp is taken from it.
  const common::LockHolder odd =
      common::parseLockHolder("pid=12x\nstarted=2026\n\x1b[31m\nstarted=now\n");
  COMPARE(odd.pid, std::uint32_t{0});
  COMPARE(odd.started, std::string("2026"));
  COMPARE(odd.describe(), std::string("a process whose id is not recorded yet"));
  COMPARE(common::parseLockHolder("pid=42\nstarted=2026-11-28T23:50:00Z").describe(),
          std::string("pid 42, since 2026-11-28T23:50:00Z"));
}

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "--hold") {
    return holdingChild(argv[2]);
  }
  if (argc > 1 && std::string(argv[1]) == "--parent") {
    std::cout << common::parentProcessId() << std::endl;
    return 0;
  }
  return lstest::runTests(argc, argv);
}
