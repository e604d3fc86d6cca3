// test_platform.cpp — the platform layer (common/Platform.h, OsFile.h, MappedFile.h,
// SharedLibrary.h) on this system: this process exists and a free id does not; the peak resident
// set grows when memory is touched; an interrupt is counted, not fatal; a file appended to keeps
// what it had; a read-only mapping shows the file's bytes and a shared one writes them back; a
// missing library is an answer, not a crash; paths with non-ASCII names work end to end; a system
// file whose read fails is nothing, not an exception. On the
// Qt-free runner, so the same test runs where the Windows build runs.
#include "TestRunner.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/BoundedFile.h"
#include "common/DurableFile.h"
#include "common/MappedFile.h"
#include "common/OsError.h"
#include "common/OsFile.h"
#include "common/Platform.h"
#include "common/SharedLibrary.h"

namespace fs = std::filesystem;
namespace common = lorascope::common;

namespace {

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh folder under the system's temp folder, with a non-ASCII name ("Zoë-日本").
fs::path freshFolder(const char* name) {
  const fs::path dir = fs::temp_directory_path() /
                       common::pathFromUtf8(std::string("lorascope-") + name + "-Zo\xc3\xab-" +
                                            "\xe6\x97\xa5\xe6\x9c\xac-" +
                                            std::to_string(common::currentProcessId()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST_CASE(processIds) {
  const std::uint32_t self = common::currentProcessId();
  VERIFY2(self != 0, "this process has an id");
  VERIFY2(common::processExists(self), "this process exists");
  // Above every pid limit (Linux: 2^22; Windows ids are multiples of 4 below 2^26 in practice).
  VERIFY2(!common::processExists(0x7ffffff0u), "no process has the id 0x7ffffff0");
}

TEST_CASE(peakResidentSetGrowsWithTouchedMemory) {
  const auto before = common::peakResidentBytes();
  VERIFY2(before.has_value() && *before > 0, "the peak resident set is known");
  constexpr std::size_t kBytes = 256u << 20;  // 256 MiB, far above the test's own size
  std::vector<char> block(kBytes);
  std::memset(block.data(), 1, block.size());
  const auto after = common::peakResidentBytes();
  VERIFY2(after.has_value() && *after >= kBytes,
          "the peak resident set covers 256 MiB just touched (" +
              std::to_string(after.value_or(0) >> 20) + " MiB)");
  VERIFY2(block[kBytes / 2] == 1, "the block was written");
}

TEST_CASE(interruptsAreCountedNotFatal) {
  if (common::kOsFamily != common::OsFamily::Posix) {
    SKIP("raise(SIGINT) is a POSIX signal; Windows' console events reach the whole console");
  }
  {
    const common::InterruptCounter counter;
    VERIFY2(counter.count() == 0, "a new counter starts at 0");
    std::raise(SIGINT);
    std::raise(SIGTERM);
    VERIFY2(counter.count() == 2, "Ctrl-C and SIGTERM are counted, and the process lives");
  }
}

TEST_CASE(appendKeepsWhatTheFileHad) {
  const fs::path dir = freshFolder("append");
  const fs::path file = dir / common::pathFromUtf8("m\xc3\xa9trics.jsonl");
  for (const char* line : {"one\n", "two\n"}) {
    common::OutputFile out(file, common::OutputFile::Mode::Append);
    out.write(std::string_view(line));
    out.close();
  }
  VERIFY2(readAll(file) == "one\ntwo\n", "two appends follow each other");
  common::writeFileDurably(file, std::string_view("replaced"));
  VERIFY2(readAll(file) == "replaced", "a durable write under a non-ASCII name replaces the file");
  fs::remove_all(dir);
}

TEST_CASE(mappingsShowAndWriteTheFile) {
  const fs::path dir = freshFolder("map");
  const fs::path file = dir / common::pathFromUtf8("gewichte-\xc3\xbc.bin");
  common::writeFileDurably(file, std::string_view("weights!"));
  {
    const auto mapped = common::MappedFile::openReadOnly(file);
    const auto bytes = mapped->bytes();
    VERIFY2(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == "weights!",
            "a read-only mapping shows the file's bytes");
  }
  common::writeFileDurably(dir / "empty", std::string_view());
  VERIFY2(common::MappedFile::openReadOnly(dir / "empty")->bytes().empty(),
          "an empty file maps to no bytes");
  try {
    common::MappedFile::openReadOnly(dir / "missing");
    FAIL("mapping a missing file throws");
  } catch (const common::OsError& e) {
    VERIFY2(std::string(e.what()).find("missing: cannot open") != std::string::npos,
            std::string("the error names the file and the step: ") + e.what());
  }
  const fs::path shared = dir / "mirror";
  bool resized = false;
  {
    auto mapping = common::MappedFile::openShared(shared, 4096, &resized);
    VERIFY2(resized, "a new shared mapping sizes its file");
    std::memcpy(mapping->writableBytes().data() + 100, "state", 5);
    mapping->flush(100, 5, "sync");
  }
  VERIFY2(fs::file_size(shared) == 4096, "the shared file has the size asked for");
  VERIFY2(readAll(shared).substr(100, 5) == "state", "a shared mapping's bytes reach the file");
  {
    auto again = common::MappedFile::openShared(shared, 4096, &resized);
    VERIFY2(!resized, "reopening at the same size keeps the file");
    VERIFY2(std::memcmp(again->bytes().data() + 100, "state", 5) == 0, "and its contents");
  }
  fs::remove_all(dir);
}

// readSystemFile: a file's text; nothing for a missing file, and nothing, not an exception, when
// the read fails after the open (a directory opens and then fails its read, as /proc/<pid>/stat
// does with ESRCH once its process has ended: that exception had terminated the window).
TEST_CASE(aSystemFileWhoseReadFailsIsNothing) {
  const fs::path dir = fs::temp_directory_path() / "lorascope-system-file-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "stat");
    out << "1 (init) S 0";
  }
  COMPARE(common::readSystemFile(dir / "stat").value_or(""), std::string("1 (init) S 0"));
  VERIFY(!common::readSystemFile(dir / "missing").has_value());
#if !defined(_WIN32)
  VERIFY(!common::readSystemFile(dir).has_value());
#endif
  fs::remove_all(dir);
}

TEST_CASE(aMissingLibraryIsAnAnswer) {
  std::string error;
  const auto library = common::SharedLibrary::open("lorascope-no-such-library-1.so", &error);
  VERIFY2(library == nullptr, "a missing library opens as nullptr");
  VERIFY2(!error.empty(), "with the system's reason");
}

TEST_CASE(userFoldersAreKnown) {
  VERIFY2(!common::userConfigDirectory().empty(), "the settings folder is known");
  VERIFY2(common::userConfigDirectory().filename() == "LoRAscope",
          "the settings folder is LoRAscope's");
}

}  // namespace
