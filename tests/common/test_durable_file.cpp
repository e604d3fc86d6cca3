// test_durable_file.cpp — common/DurableFile: a write replaces the file whole; a failing file
// sync leaves the old file and no temp file; a failing directory sync (after the rename) is an
// error naming the directory, except where the filesystem cannot sync directories at all; a
// streamed writer dropped uncommitted leaves nothing; replaceDirectory swaps a folder whole.
#include "TestRunner.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "ExpectError.h"
#include "TempDir.h"
#include "common/DurableFile.h"
#include "common/OsError.h"

namespace fs = std::filesystem;
using namespace lorascope::common;
using lorascope::test::throwsWith;

namespace {

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Fake syncs: fail for directories only, or for files only, with a chosen errno.
int gFailErrno = 0;
std::error_code failDirectorySync(bool isDirectory) {
  return isDirectory ? std::error_code(gFailErrno, std::generic_category()) : std::error_code();
}
std::error_code failFileSync(bool isDirectory) {
  return isDirectory ? std::error_code() : std::error_code(gFailErrno, std::generic_category());
}

// Installs a fake sync for one scope.
struct FakeFsync {
  FakeFsync(testing::SyncHook f, int error) {
    gFailErrno = error;
    testing::setSyncForTesting(f);
  }
  ~FakeFsync() { testing::setSyncForTesting(nullptr); }
};

// The names in `dir` other than `keep`.
std::vector<std::string> leftovers(const fs::path& dir, const std::string& keep) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename() != keep) {
      names.push_back(pathText(entry.path().filename()));
    }
  }
  return names;
}
const std::vector<std::string> kNothing;

}  // namespace

TEST_CASE(writeReplacesTheFileWholeAndLeavesNoTemp) {
  lstest::TempDir tmp;
  const fs::path file = tmp.path() / "state.json";
  writeFileDurably(file, std::string_view("first"));
  writeFileDurably(file, std::string_view("second, longer"));
  COMPARE(readAll(file), std::string("second, longer"));
  COMPARE(leftovers(file.parent_path(), "state.json"), kNothing);
}

TEST_CASE(failedFileSyncKeepsTheOldFileAndRemovesTheTemp) {
  lstest::TempDir tmp;
  const fs::path file = tmp.path() / "a.bin";
  writeFileDurably(file, std::string_view("old"));
  {
    FakeFsync fake(failFileSync, EIO);
    VERIFY(throwsWith<std::runtime_error>(
        [&] { writeFileDurably(file, std::string_view("new")); },
        {file.string() + tempSuffix(), "fsync failed", std::strerror(EIO)}));
  }
  COMPARE(readAll(file), std::string("old"));
  COMPARE(leftovers(file.parent_path(), "a.bin"), kNothing);
}

// The rename has happened, so the new contents are in place, but the write is not durable:
// it must not pass for saved.
TEST_CASE(failedDirectorySyncIsAnErrorNamingTheDirectory) {
  lstest::TempDir tmp;
  const fs::path dir = tmp.path();
  for (int error : {EIO, ENOSPC}) {
    FakeFsync fake(failDirectorySync, error);
    VERIFY(throwsWith<std::runtime_error>(
        [&] { writeFileDurably(dir / "b.json", std::string_view("{}")); },
        {dir.string() + ": directory sync failed", std::strerror(error)}));
    COMPARE(readAll(dir / "b.json"), std::string("{}"));
  }
}

// Filesystems that cannot sync a directory at all answer EINVAL (or ENOTSUP, EBADF).
TEST_CASE(directorySyncUnsupportedCountsAsSynced) {
  lstest::TempDir tmp;
  const fs::path dir = tmp.path();
  for (int error : {EINVAL, ENOTSUP, EBADF}) {
    FakeFsync fake(failDirectorySync, error);
    writeFileDurably(dir / "c.txt", std::string_view("ok"));
    COMPARE(readAll(dir / "c.txt"), std::string("ok"));
    syncDirectory(dir);
  }
}

TEST_CASE(syncOfAMissingDirectoryNamesIt) {
  VERIFY(throwsWith<std::runtime_error>([] { syncDirectory("/nonexistent/lorascope-dir"); },
                                        {"/nonexistent/lorascope-dir", "cannot open"}));
}

TEST_CASE(streamedWriterDroppedUncommittedLeavesNothing) {
  lstest::TempDir tmp;
  const fs::path dir = tmp.path();
  {
    DurableFileWriter out(dir / "big.safetensors");
    out.write(std::string_view("partial"));
  }
  COMPARE(leftovers(dir, ""), kNothing);
  DurableFileWriter out(dir / "big.safetensors");
  out.write(std::string_view("head,"));
  out.write(std::string_view("tail"));
  out.commit();
  COMPARE(readAll(dir / "big.safetensors"), std::string("head,tail"));
  VERIFY_THROWS_EXCEPTION(std::logic_error, out.write(std::string_view("late")));
}

TEST_CASE(replaceDirectorySwapsTheFolderWhole) {
  lstest::TempDir tmp;
  const fs::path root = tmp.path();
  fs::create_directory(root / "adapter");
  writeFileDurably(root / "adapter" / "old.txt", std::string_view("old"));
  fs::create_directory(root / ".adapter.tmp");
  writeFileDurably(root / ".adapter.tmp" / "new.txt", std::string_view("new"));
  replaceDirectory(root / ".adapter.tmp", root / "adapter");
  VERIFY(!fs::exists(root / "adapter" / "old.txt"));
  COMPARE(readAll(root / "adapter" / "new.txt"), std::string("new"));
  COMPARE(leftovers(root, "adapter"), kNothing);
}
