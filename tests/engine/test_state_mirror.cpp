// test_state_mirror.cpp — the state mirror keeps the newest complete state through reopen, a torn
// write in either slot, and damage to the file; it refuses states larger than its capacity.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

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

}  // namespace

class TestStateMirror : public QObject {
  Q_OBJECT

 private slots:
  void newFileHasNoState() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("mirror").toStdString();
    StateMirror mirror(path, 1024);
    QVERIFY(!StateMirror::readLatest(path).has_value());
  }

  void readerSeesTheNewestWrite() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("mirror").toStdString();
    StateMirror mirror(path, 1024);
    for (int step = 1; step <= 5; ++step) {
      mirror.write(bytesOf("step " + std::to_string(step)));
      const auto latest = StateMirror::readLatest(path);
      QVERIFY(latest.has_value());
      QCOMPARE(textOf(latest->payload), "step " + std::to_string(step));
      QCOMPARE(latest->sequence, std::uint64_t(step));
    }
  }

  void aTornSlotFallsBackToThePreviousState() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("mirror").toStdString();
    {
      StateMirror mirror(path, 256);
      mirror.write(bytesOf("step 1"));  // slot 0
      mirror.write(bytesOf("step 2"));  // slot 1
      mirror.write(bytesOf("step 3"));  // slot 0 again
    }
    corruptByte(path, kSlot0Payload + 2);  // step 3's payload no longer matches its CRC
    const auto latest = StateMirror::readLatest(path);
    QVERIFY(latest.has_value());
    QCOMPARE(textOf(latest->payload), std::string("step 2"));
  }

  void reopeningContinuesTheSequenceWithoutOverwritingTheNewest() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("mirror").toStdString();
    {
      StateMirror mirror(path, 256);
      mirror.write(bytesOf("a"));
      mirror.write(bytesOf("b"));
    }
    StateMirror reopened(path, 256);
    QCOMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("b"));
    reopened.write(bytesOf("c"));
    const auto latest = StateMirror::readLatest(path);
    QCOMPARE(textOf(latest->payload), std::string("c"));
    QCOMPARE(latest->sequence, std::uint64_t{3});
    corruptByte(path, kSlot0Payload);  // "c" went to slot 0; "b" in slot 1 must survive
    QCOMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("b"));
  }

  // The encoded trainer state varies by a few bytes from step to step, so a restarted engine
  // asks for a slightly different capacity: the newest state must survive that.
  void reopeningWithLessCapacityKeepsTheStateAndTheRoom() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("mirror").toStdString();
    {
      StateMirror mirror(path, 256);
      mirror.write(bytesOf("step 7"));
    }
    StateMirror reopened(path, 300, 200);  // room to spare asked for, 200 bytes required
    QCOMPARE(reopened.capacityBytes(), std::size_t{256});
    QCOMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("step 7"));
    StateMirror larger(path, 512);  // more than the file has: a fresh mirror of that size
    QCOMPARE(larger.capacityBytes(), std::size_t{512});
    QVERIFY(!StateMirror::readLatest(path));
  }

  void oversizedStateIsRefusedAndTheOldOneKept() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("mirror").toStdString();
    StateMirror mirror(path, 8);
    mirror.write(bytesOf("small"));
    QVERIFY_THROWS_EXCEPTION(StateMirrorError, mirror.write(bytesOf("far too large")));
    QCOMPARE(textOf(StateMirror::readLatest(path)->payload), std::string("small"));
  }

  void damagedOrForeignFilesYieldNoStateNotACrash() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("foreign").toStdString();
    std::ofstream(path) << "this is not a state mirror at all, just text";
    QVERIFY(!StateMirror::readLatest(path).has_value());
    QVERIFY_THROWS_EXCEPTION(StateMirrorError,
                             StateMirror::readLatest(dir.filePath("missing").toStdString()));
  }

  void crcMatchesTheStandardCheckValue() {
    QCOMPARE(crc32(bytesOf("123456789")), 0xCBF43926u);  // CRC-32/ISO-HDLC check value
  }
};

QTEST_APPLESS_MAIN(TestStateMirror)
#include "test_state_mirror.moc"
