// test_platform.cpp — the platform layer (common/Platform.h, OsFile.h, MappedFile.h,
// SharedLibrary.h) on this system: this process exists and a free id does not; the peak resident
// set grows when memory is touched; an interrupt is counted, not fatal; a file appended to keeps
// what it had; a read-only mapping shows the file's bytes and a shared one writes them back; a
// missing library is an answer, not a crash; paths with non-ASCII names work end to end. Qt-free
// (a plain main), so the same test runs where the Windows build runs.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/DurableFile.h"
#include "common/MappedFile.h"
#include "common/OsError.h"
#include "common/OsFile.h"
#include "common/Platform.h"
#include "common/SharedLibrary.h"

namespace fs = std::filesystem;
namespace common = lorascope::common;

namespace {

int gFailures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++gFailures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

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

void processIds() {
  const std::uint32_t self = common::currentProcessId();
  check(self != 0, "this process has an id");
  check(common::processExists(self), "this process exists");
  // Above every pid limit (Linux: 2^22; Windows ids are multiples of 4 below 2^26 in practice).
  check(!common::processExists(0x7ffffff0u), "no process has the id 0x7ffffff0");
}

void peakResidentSetGrowsWithTouchedMemory() {
  const auto before = common::peakResidentBytes();
  check(before.has_value() && *before > 0, "the peak resident set is known");
  constexpr std::size_t kBytes = 256u << 20;  // 256 MiB, far above the test's own size
  std::vector<char> block(kBytes);
  std::memset(block.data(), 1, block.size());
  const auto after = common::peakResidentBytes();
  check(after.has_value() && *after >= kBytes,
        "the peak resident set covers 256 MiB just touched (" +
            std::to_string(after.value_or(0) >> 20) + " MiB)");
  check(block[kBytes / 2] == 1, "the block was written");
}

void interruptsAreCountedNotFatal() {
  if (common::kOsFamily != common::OsFamily::Posix) {
    return;  // raise(SIGINT) is a POSIX signal; Windows' console events reach the whole console
  }
  {
    const common::InterruptCounter counter;
    check(counter.count() == 0, "a new counter starts at 0");
    std::raise(SIGINT);
    std::raise(SIGTERM);
    check(counter.count() == 2, "Ctrl-C and SIGTERM are counted, and the process lives");
  }
}

void appendKeepsWhatTheFileHad() {
  const fs::path dir = freshFolder("append");
  const fs::path file = dir / common::pathFromUtf8("m\xc3\xa9trics.jsonl");
  for (const char* line : {"one\n", "two\n"}) {
    common::OutputFile out(file, common::OutputFile::Mode::Append);
    out.write(std::string_view(line));
    out.close();
  }
  check(readAll(file) == "one\ntwo\n", "two appends follow each other");
  common::writeFileDurably(file, std::string_view("replaced"));
  check(readAll(file) == "replaced", "a durable write under a non-ASCII name replaces the file");
  fs::remove_all(dir);
}

void mappingsShowAndWriteTheFile() {
  const fs::path dir = freshFolder("map");
  const fs::path file = dir / common::pathFromUtf8("gewichte-\xc3\xbc.bin");
  common::writeFileDurably(file, std::string_view("weights!"));
  {
    const auto mapped = common::MappedFile::openReadOnly(file);
    const auto bytes = mapped->bytes();
    check(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == "weights!",
          "a read-only mapping shows the file's bytes");
  }
  common::writeFileDurably(dir / "empty", std::string_view());
  check(common::MappedFile::openReadOnly(dir / "empty")->bytes().empty(),
        "an empty file maps to no bytes");
  try {
    common::MappedFile::openReadOnly(dir / "missing");
    check(false, "mapping a missing file throws");
  } catch (const common::OsError& e) {
    check(std::string(e.what()).find("missing: cannot open") != std::string::npos,
          std::string("the error names the file and the step: ") + e.what());
  }
  const fs::path shared = dir / "mirror";
  bool resized = false;
  {
    auto mapping = common::MappedFile::openShared(shared, 4096, &resized);
    check(resized, "a new shared mapping sizes its file");
    std::memcpy(mapping->writableBytes().data() + 100, "state", 5);
    mapping->flush(100, 5, "sync");
  }
  check(fs::file_size(shared) == 4096, "the shared file has the size asked for");
  check(readAll(shared).substr(100, 5) == "state", "a shared mapping's bytes reach the file");
  {
    auto again = common::MappedFile::openShared(shared, 4096, &resized);
    check(!resized, "reopening at the same size keeps the file");
    check(std::memcmp(again->bytes().data() + 100, "state", 5) == 0, "and its contents");
  }
  fs::remove_all(dir);
}

void aMissingLibraryIsAnAnswer() {
  std::string error;
  const auto library = common::SharedLibrary::open("lorascope-no-such-library-1.so", &error);
  check(library == nullptr, "a missing library opens as nullptr");
  check(!error.empty(), "with the system's reason");
}

void userFoldersAreKnown() {
  check(!common::userConfigDirectory().empty(), "the settings folder is known");
  check(common::userConfigDirectory().filename() == "LoRAscope",
        "the settings folder is LoRAscope's");
}

}  // namespace

int main() {
  processIds();
  peakResidentSetGrowsWithTouchedMemory();
  interruptsAreCountedNotFatal();
  appendKeepsWhatTheFileHad();
  mappingsShowAndWriteTheFile();
  aMissingLibraryIsAnAnswer();
  userFoldersAreKnown();
  std::printf("%s: %d failure(s)\n", gFailures == 0 ? "PASS" : "FAIL", gFailures);
  return gFailures == 0 ? 0 : 1;
}
