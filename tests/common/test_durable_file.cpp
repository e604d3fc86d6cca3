// test_durable_file.cpp — common/DurableFile: a write replaces the file whole; a failing file
// sync leaves the old file and no temp file; a failing directory sync (after the rename) is an
// error naming the directory, except where the filesystem cannot sync directories at all; a
// streamed writer dropped uncommitted leaves nothing; replaceDirectory swaps a folder whole.
#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ExpectError.h"
#include "common/DurableFile.h"

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
QStringList leftovers(const fs::path& dir, const std::string& keep) {
  QStringList names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename() != keep) {
      names << QString::fromStdString(entry.path().filename().string());
    }
  }
  return names;
}

}  // namespace

class TestDurableFile : public QObject {
  Q_OBJECT

 private slots:
  void writeReplacesTheFileWholeAndLeavesNoTemp() {
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "state.json";
    writeFileDurably(file, std::string_view("first"));
    writeFileDurably(file, std::string_view("second, longer"));
    QCOMPARE(readAll(file), std::string("second, longer"));
    QCOMPARE(leftovers(file.parent_path(), "state.json"), QStringList{});
  }

  void failedFileSyncKeepsTheOldFileAndRemovesTheTemp() {
    QTemporaryDir tmp;
    const fs::path file = fs::path(tmp.path().toStdString()) / "a.bin";
    writeFileDurably(file, std::string_view("old"));
    {
      FakeFsync fake(failFileSync, EIO);
      QVERIFY(throwsWith<std::runtime_error>(
          [&] { writeFileDurably(file, std::string_view("new")); },
          {file.string() + tempSuffix(), "fsync failed", std::strerror(EIO)}));
    }
    QCOMPARE(readAll(file), std::string("old"));
    QCOMPARE(leftovers(file.parent_path(), "a.bin"), QStringList{});
  }

  // The rename has happened, so the new contents are in place, but the write is not durable:
  // it must not pass for saved.
  void failedDirectorySyncIsAnErrorNamingTheDirectory() {
    QTemporaryDir tmp;
    const fs::path dir = tmp.path().toStdString();
    for (int error : {EIO, ENOSPC}) {
      FakeFsync fake(failDirectorySync, error);
      QVERIFY(throwsWith<std::runtime_error>(
          [&] { writeFileDurably(dir / "b.json", std::string_view("{}")); },
          {dir.string() + ": directory sync failed", std::strerror(error)}));
      QCOMPARE(readAll(dir / "b.json"), std::string("{}"));
    }
  }

  // Filesystems that cannot sync a directory at all answer EINVAL (or ENOTSUP, EBADF).
  void directorySyncUnsupportedCountsAsSynced() {
    QTemporaryDir tmp;
    const fs::path dir = tmp.path().toStdString();
    for (int error : {EINVAL, ENOTSUP, EBADF}) {
      FakeFsync fake(failDirectorySync, error);
      writeFileDurably(dir / "c.txt", std::string_view("ok"));
      QCOMPARE(readAll(dir / "c.txt"), std::string("ok"));
      syncDirectory(dir);
    }
  }

  void syncOfAMissingDirectoryNamesIt() {
    QVERIFY(throwsWith<std::runtime_error>([] { syncDirectory("/nonexistent/lorascope-dir"); },
                                           {"/nonexistent/lorascope-dir", "cannot open"}));
  }

  void streamedWriterDroppedUncommittedLeavesNothing() {
    QTemporaryDir tmp;
    const fs::path dir = tmp.path().toStdString();
    {
      DurableFileWriter out(dir / "big.safetensors");
      out.write(std::string_view("partial"));
    }
    QCOMPARE(leftovers(dir, ""), QStringList{});
    DurableFileWriter out(dir / "big.safetensors");
    out.write(std::string_view("head,"));
    out.write(std::string_view("tail"));
    out.commit();
    QCOMPARE(readAll(dir / "big.safetensors"), std::string("head,tail"));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, out.write(std::string_view("late")));
  }

  void replaceDirectorySwapsTheFolderWhole() {
    QTemporaryDir tmp;
    const fs::path root = tmp.path().toStdString();
    fs::create_directory(root / "adapter");
    writeFileDurably(root / "adapter" / "old.txt", std::string_view("old"));
    fs::create_directory(root / ".adapter.tmp");
    writeFileDurably(root / ".adapter.tmp" / "new.txt", std::string_view("new"));
    replaceDirectory(root / ".adapter.tmp", root / "adapter");
    QVERIFY(!fs::exists(root / "adapter" / "old.txt"));
    QCOMPARE(readAll(root / "adapter" / "new.txt"), std::string("new"));
    QCOMPARE(leftovers(root, "adapter"), QStringList{});
  }
};

QTEST_APPLESS_MAIN(TestDurableFile)
#include "test_durable_file.moc"
