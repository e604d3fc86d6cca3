// test_state_mirror.cpp — the state mirror keeps the newest complete state through reopen, a torn
// write in any slot, and damage to the file; writes that do not wait for the disk never touch the
// last durable state, made durable before the write returns or in the background, and a failed
// sync is thrown; it refuses states larger than its capacity.
#include "TempDir.h"
#include "TestRunner.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/Checksum.h"
#include "common/OsFile.h"  // defines: testing::setSyncForTesting
#include "engine/StateMirror.h"

using namespace lorascope::engine;

namespace {

std::vector<std::byte> bytesOf(const std::string& text) {
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

std::string textOf(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Flips one byte of the file at `offset` (simulating a write torn by a crash).
void corruptByte(const std::string& path, std::streamoff offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x5a));
}

constexpr std::streamoff kSlot0Payload = 64 + 32;  // file header, then slot 0's header

// Where slot `slot`'s payload starts in a mirror of `capacity` bytes a slot.
std::streamoff payloadOffset(int slot, std::streamoff capacity) {
  return 64 + slot * (32 + capacity) + 32;
}

// `bytes` bytes of the file at `offset`.
std::string fileBytes(const std::string& path, std::streamoff offset, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::string out(bytes, '\0');
  in.read(out.data(), static_cast<std::streamsize>(bytes));
  return out;
}

}  // namespace

TEST_CASE(newFileHasNoState) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  StateMirror mirror(path, 1024);
  VERIFY(!StateMirror::readLatest(path).has_value());
}

TEST_CASE(readerSeesTheNewestWrite) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  StateMirror mirror(path, 1024);
  for (int step = 1; step <= 5; ++step) {
    mirror.write(bytesOf("step " + std::to_string(step)));
    const auto latest = StateMirror::readLatest(path);
    VERIFY(latest.has_value());
    COMPARE(textOf(latest->payload), "step " + std::to_string(step));
    COMPARE(latest->sequence, std::uint64_t(step));
  }
}

TEST_CASE(aTornSlotFallsBackToThePreviousState) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  {
    StateMirror mirror(path, 256);
    mirror.write(bytesOf("step 1"));  // slot 0
    mirror.write(bytesOf("step 2"));  // slot 1
    mirror.write(bytesOf("step 3"));  // slot 2
    mirror.write(bytesOf("step 4"));  // slot 0 again
  }
  corruptByte(path, kSlot0Payload + 2);  // step 4's payload no longer matches its CRC
  const auto latest = StateMirror::readLatest(path);
  VERIFY(latest.has_value());
  COMPARE(textOf(latest->payload), std::string("step 3"));
}

TEST_CASE(reopeningContinuesTheSequenceWithoutOverwritingTheNewest) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  {
    StateMirror mirror(path, 256);
    mirror.write(bytesOf("a"));
    mirror.write(bytesOf("b"));
  }
  StateMirror reopened(path, 256);
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("b"));
  reopened.write(bytesOf("c"));
  const auto latest = StateMirror::readLatest(path);
  COMPARE(textOf(latest->payload), std::string("c"));
  COMPARE(latest->sequence, std::uint64_t{3});
  corruptByte(path, payloadOffset(2, 256));  // "c" went to slot 2; "b" in slot 1 must survive
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("b"));
}

// Writes between durable ones (setDurableEvery) go to the two other slots in turn: the newest
// state survives an engine that dies in the next write, and the last durable state, left alone,
// a machine that goes down before the page cache reached the disk.
TEST_CASE(writesThatDoNotWaitForTheDiskNeverTouchTheLastDurableState) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  StateMirror mirror(path, 64);
  mirror.setDurableEvery(std::chrono::hours(1));
  mirror.write(bytesOf("durable"));  // the first write is made durable: slot 0
  for (int step = 1; step <= 5; ++step) {
    const std::string text = "step " + std::to_string(step);
    mirror.write(bytesOf(text));
    COMPARE(fileBytes(path, payloadOffset(0, 64), 7), std::string("durable"));
    COMPARE(textOf(StateMirror::readLatest(path)->payload), text);
  }
  // Step 5 is in slot 1 (1, 3, 5 there; 2, 4 in slot 2). A write that dies in it leaves step 4.
  corruptByte(path, payloadOffset(1, 64));
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("step 4"));
  // Neither non-durable slot reached the disk whole: the durable state is what is left.
  corruptByte(path, payloadOffset(2, 64));
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("durable"));
}

// With an interval a write is made durable in the background (Note [durable in the background]):
// until its msync returns its slot is not written again, nor, once it has, until the next durable
// state is on the disk; whenever the sync finishes, the writes after it leave that state alone.
TEST_CASE(aStateMadeDurableInTheBackgroundIsKeptByTheWritesAfterIt) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  {
    StateMirror mirror(path, 64);
    mirror.setDurableEvery(std::chrono::milliseconds(20));
    mirror.write(bytesOf("first"));   // durable in the background: slot 0
    mirror.write(bytesOf("step 1"));  // slot 1: the sync of slot 0 is in flight or done
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    mirror.write(bytesOf("second"));  // the interval passed: durable in the background, slot 2
    mirror.setDurableEvery(std::chrono::hours(1));  // none durable after it, however slow the test
    COMPARE(fileBytes(path, payloadOffset(2, 64), 6), std::string("second"));
    for (int step = 2; step <= 6; ++step) {  // each within the interval of "second"
      const std::string text = "step " + std::to_string(step);
      mirror.write(bytesOf(text));
      COMPARE(fileBytes(path, payloadOffset(2, 64), 6), std::string("second"));
      COMPARE(textOf(StateMirror::readLatest(path)->payload), text);
    }
  }  // the mirror waits for its sync before it goes
  // The two other slots torn: the state made durable in the background is what is left.
  corruptByte(path, payloadOffset(0, 64));
  corruptByte(path, payloadOffset(1, 64));
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("second"));
}

// A failed msync: a write that waits for the disk throws it; one made durable in the background
// has a later write throw it. Either way the states written stay readable.
TEST_CASE(aFailedSyncIsThrownByItsWriteOrALaterOne) {
  lstest::TempDir dir;
  struct RealSyncs {
    ~RealSyncs() { lorascope::common::testing::setSyncForTesting(nullptr); }
  } restore;
  const auto failing = [](bool) { return std::make_error_code(std::errc::io_error); };
  const std::string path = dir.filePath("mirror");
  StateMirror every(path, 64);
  every.write(bytesOf("a"));
  lorascope::common::testing::setSyncForTesting(failing);
  bool threw = false;
  try {
    every.write(bytesOf("b"));
  } catch (const StateMirrorError& e) {
    threw = std::string(e.what()).find("msync of the state payload failed") != std::string::npos;
  }
  VERIFY(threw);

  lorascope::common::testing::setSyncForTesting(nullptr);
  const std::string later = dir.filePath("later");
  StateMirror background(later, 64);
  background.setDurableEvery(std::chrono::hours(1));
  lorascope::common::testing::setSyncForTesting(failing);
  background.write(bytesOf("c"));  // returns; its msync fails on the mirror's thread
  std::string error;
  for (int attempt = 0; attempt < 200 && error.empty(); ++attempt) {
    try {
      background.write(bytesOf("d"));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const StateMirrorError& e) {
      error = e.what();
    }
  }
  VERIFY2(error.find("msync of the state failed") != std::string::npos, error);
  lorascope::common::testing::setSyncForTesting(nullptr);
  background.write(bytesOf("e"));
  COMPARE(textOf(StateMirror::readLatest(later)->payload), std::string("e"));
}

// A version-1 mirror (two slots, before the durable interval) still reads; an engine reopening
// it starts it afresh in the current layout.
TEST_CASE(aVersionOneMirrorReadsAndIsStartedAfresh) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  {
    const std::uint64_t capacity = 32;
    std::string file(64 + 2 * (32 + capacity), '\0');
    std::memcpy(file.data(), "LSMIRROR", 8);
    const std::uint32_t version = 1;
    std::memcpy(file.data() + 8, &version, sizeof version);
    std::memcpy(file.data() + 16, &capacity, sizeof capacity);
    const std::string payload = "old state";
    const std::uint64_t sequence = 7, length = payload.size();
    const std::uint32_t crc = lorascope::common::crc32(bytesOf(payload)), valid = 0x56414c44;
    std::memcpy(file.data() + 64, &sequence, 8);
    std::memcpy(file.data() + 72, &length, 8);
    std::memcpy(file.data() + 80, &crc, 4);
    std::memcpy(file.data() + 84, &valid, 4);
    std::memcpy(file.data() + 96, payload.data(), payload.size());
    std::ofstream(path, std::ios::binary) << file;
  }
  const auto old = StateMirror::readLatest(path);
  VERIFY(old.has_value());
  COMPARE(textOf(old->payload), std::string("old state"));
  COMPARE(old->sequence, std::uint64_t{7});
  StateMirror reopened(path, 32);
  VERIFY(!StateMirror::readLatest(path).has_value());
  reopened.write(bytesOf("new"));
  COMPARE(StateMirror::readLatest(path)->sequence, std::uint64_t{1});
}

// The encoded trainer state varies by a few bytes from step to step, so a restarted engine
// asks for a slightly different capacity: the newest state must survive that.
TEST_CASE(reopeningWithLessCapacityKeepsTheStateAndTheRoom) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  {
    StateMirror mirror(path, 256);
    mirror.write(bytesOf("step 7"));
  }
  StateMirror reopened(path, 300, 200);  // room to spare asked for, 200 bytes required
  COMPARE(reopened.capacityBytes(), std::size_t{256});
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("step 7"));
  StateMirror larger(path, 512);  // more than the file has: a fresh mirror of that size
  COMPARE(larger.capacityBytes(), std::size_t{512});
  VERIFY(!StateMirror::readLatest(path));
}

TEST_CASE(oversizedStateIsRefusedAndTheOldOneKept) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("mirror");
  StateMirror mirror(path, 8);
  mirror.write(bytesOf("small"));
  VERIFY_THROWS_EXCEPTION(StateMirrorError, mirror.write(bytesOf("far too large")));
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("small"));
}

TEST_CASE(damagedOrForeignFilesYieldNoStateNotACrash) {
  lstest::TempDir dir;
  const std::string path = dir.filePath("foreign");
  std::ofstream(path) << "this is not a state mirror at all, just text";
  VERIFY(!StateMirror::readLatest(path).has_value());
  VERIFY_THROWS_EXCEPTION(StateMirrorError, StateMirror::readLatest(dir.filePath("missing")));
}

// A run folder under C:\Users\Łukasz\日本: the mirror is written and read there, and its errors
// name it as UTF-8 text (on Windows, path::string() throws for these names).
TEST_CASE(mirrorUnderNonAsciiNamesWorksAndIsNamed) {
  lstest::TempDir dir;
  const std::filesystem::path path = dir.nonAsciiFolder() / "state.mirror";
  StateMirror mirror(path, 8);
  mirror.write(bytesOf("small"));
  COMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("small"));
  try {
    mirror.write(bytesOf("far too large"));
    FAIL("expected StateMirrorError");
  } catch (const StateMirrorError& e) {
    VERIFY2(lstest::Message{e.what()}.contains(lstest::utf8Text(path) + ": state of 13 bytes"),
            e.what());
  }
  const std::filesystem::path missing = path.parent_path() / "missing.mirror";
  try {
    StateMirror::readLatest(missing);
    FAIL("expected StateMirrorError");
  } catch (const StateMirrorError& e) {
    VERIFY2(lstest::Message{e.what()}.contains(lstest::utf8Text(missing) + ": cannot open"),
            e.what());
  }
}
