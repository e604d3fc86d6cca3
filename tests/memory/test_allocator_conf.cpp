// test_allocator_conf.cpp — PyTorch-style allocator settings and the policy JSON that profiles and
// engine commands carry: values mapped, round trips, clear errors.
#include <QtTest>

#include "memory/AllocatorPolicy.h"

using namespace lorascope::memory;

class TestAllocatorConf : public QObject {
  Q_OBJECT

 private slots:
  void mapsPyTorchKeys() {
    const AllocatorPolicy p = parseAllocatorConf(
        "max_split_size_mb:512,garbage_collection_threshold:0.6,roundup_power2_divisions:4");
    QCOMPARE(p.maxSplitBytes, std::size_t{512} << 20);
    QCOMPARE(p.garbageCollectionThreshold, 0.6);
    QCOMPARE(p.roundupPower2Divisions, 4u);
    QCOMPARE(p.mode, AllocatorMode::Caching);
    const AllocatorPolicy arena = parseAllocatorConf("mode:arena,arena_mb:2048");
    QCOMPARE(arena.mode, AllocatorMode::Arena);
    QCOMPARE(arena.arenaBytes, std::size_t{2048} << 20);
    QCOMPARE(parseAllocatorConf(""), AllocatorPolicy{});
  }

  void rejectsWhatItCannotHonour() {
    const std::pair<const char*, const char*> cases[] = {
        {"expandable_segments:True", "not supported"},
        {"max_split_size_mb:abc", "non-negative number"},
        {"max_split_size_mb:1", "at least"},
        {"garbage_collection_threshold:1.5", "[0, 1)"},
        {"roundup_power2_divisions:3", "power of two"},
        {"mode:arena", "arena_bytes"},
        {"mode:fast", "caching or arena"},
        {"colour:blue", "unknown key 'colour'"},
        {"max_split_size_mb", "key:value"},
    };
    for (const auto& [conf, expected] : cases) {
      try {
        parseAllocatorConf(conf);
        QFAIL(conf);
      } catch (const std::invalid_argument& error) {
        QVERIFY2(QString(error.what()).contains(expected), error.what());
      }
    }
  }

  void jsonRoundTrips() {
    AllocatorPolicy p;
    p.mode = AllocatorMode::Arena;
    p.arenaBytes = std::size_t{3} << 30;
    p.maxSplitBytes = std::size_t{256} << 20;
    p.garbageCollectionThreshold = 0.8;
    p.roundupPower2Divisions = 8;
    QCOMPARE(policyFromJson(policyToJson(p)), p);
    const nlohmann::json plain = policyToJson(AllocatorPolicy{});
    QVERIFY(plain["max_split_bytes"].is_null());  // unlimited
    QCOMPARE(policyFromJson(plain), AllocatorPolicy{});
  }

  void jsonRejectsUnknownKeysAndWrongTypes() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             policyFromJson(nlohmann::json{{"max_split", 1}}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, policyFromJson(nlohmann::json{{"mode", 3}}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, policyFromJson(nlohmann::json::array()));
  }
};

QTEST_APPLESS_MAIN(TestAllocatorConf)
#include "test_allocator_conf.moc"
