// test_engine_launcher.cpp — the engine started through a profile's launcher (the route to an
// engine inside WSL2), on Linux: a supervised stand-in engine run through
// launcher/stand-in-launcher.sh in another working directory, with the host's folder visible to
// it under another prefix, finishes every step, writes its state mirror through the engine-side
// path and reports its checkpoint with the host-side path; an untranslated host path is caught by
// the launcher. Also: the WSL forms (C:\… ↔ /mnt/c/…, \\wsl.localhost\<distro>\…), relative
// paths made absolute on the host side, and the profile's "engine" field read, written and
// refused when malformed.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

#include "EventLog.h"
#include "TestPaths.h"
#include "engine/EnginePaths.h"
#include "engine/IsolatedHost.h"
#include "engine/SupervisorHost.h"
#include "profiles/Builtins.h"
#include "profiles/ProfileJson.h"
#include "profiles/SwitchPlan.h"

using namespace lorascope::engine;
namespace profiles = lorascope::profiles;
namespace fs = std::filesystem;

namespace {

struct Recorder : lorascope::testing::EventLog {
  bool finished() const { return hasState(RunState::Finished); }
};

// The host's folder `host`, seen by the engine as `view` (a symbolic link), and a working
// directory of the engine's own.
struct TwoSides {
  QTemporaryDir tmp;
  fs::path host = fs::path(tmp.path().toStdString()) / "host";
  fs::path view = fs::path(tmp.path().toStdString()) / "engine-view";
  fs::path elsewhere = fs::path(tmp.path().toStdString()) / "elsewhere";
  TwoSides() {
    fs::create_directories(host);
    fs::create_directories(elsewhere);
    fs::create_directory_symlink(host, view);
  }
  profiles::EngineLocation location(const fs::path& mappedHost) const {
    profiles::EngineLocation l;
    l.launcher = {lstest::sourcePath("tests/engine/launcher/stand-in-launcher.sh"),
                  elsewhere.string(), host.string(), lstest::crashyEngine(), "engine"};
    l.paths = profiles::EnginePaths::Prefixes;
    l.prefixes = {{mappedHost.string(), view.string()}};
    return l;
  }
};

}  // namespace

class TestEngineLauncher : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("XDG_CONFIG_HOME", configDir_.path().toUtf8()); }

  void aSupervisedRunCrossesThroughTheLauncher() {
    TwoSides sides;
    profiles::Profile profile = profiles::defaultProfile();
    profile.engine = sides.location(sides.host);
    Recorder r;
    SupervisorHost supervisor(lstest::crashyEngine(), profile, SupervisorPolicy{}, r.listener());
    QTRY_VERIFY(supervisor.isConnected());
    const std::string mirror = (sides.host / "mirror").string();
    supervisor.send(
        StartCommand{{{"total_steps", 5}, {"mirror", mirror}, {"fault_dir", sides.host.string()}}});
    QTRY_VERIFY_WITH_TIMEOUT(r.finished(), 20000);
    QCOMPARE(r.all<StepEvent>().size(), std::size_t{5});
    QVERIFY(r.all<IncidentEvent>().empty());  // the launcher refused nothing
    // The engine wrote through its own path; the checkpoint comes back as the host's.
    QVERIFY(fs::exists(sides.host / "mirror"));
    QCOMPARE(r.all<CheckpointEvent>().back().path, mirror);
  }

  void anUntranslatedHostPathIsCaught() {
    TwoSides sides;
    // Prefixes that do not cover the host's folder: its paths would cross as they are.
    profiles::EngineLocation location = sides.location("/nonexistent-prefix");
    Recorder r;
    std::optional<EngineExit> exit;
    IsolatedHost host(
        lstest::crashyEngine(), {}, r.listener(), [&](const EngineExit& e) { exit = e; }, location);
    host.start();
    QTRY_VERIFY(host.isConnected());
    host.send(StartCommand{{{"total_steps", 5},
                            {"mirror", (sides.host / "mirror").string()},
                            {"fault_dir", sides.host.string()}}});
    QTRY_VERIFY_WITH_TIMEOUT(exit.has_value(), 10000);
    QCOMPARE(exit->exitCode, 3);
    QVERIFY(exit->stderrTail.find("a path of the host side reached the engine") !=
            std::string::npos);
    QVERIFY(!fs::exists(sides.host / "mirror"));
  }

  void aMissingLauncherIsAnErrorNamingIt() {
    profiles::EngineLocation location;
    location.launcher = {"lorascope-no-such-launcher", "engine"};
    Recorder r;
    std::optional<EngineExit> exit;
    IsolatedHost host(
        lstest::crashyEngine(), {}, r.listener(), [&](const EngineExit& e) { exit = e; }, location);
    host.start();
    QTRY_VERIFY(exit.has_value());
    QVERIFY(exit->failedToStart);
    QVERIFY(!r.all<ErrorEvent>().empty());
    QVERIFY(r.all<ErrorEvent>().front().message.find("lorascope-no-such-launcher") !=
            std::string::npos);
    QVERIFY(r.all<ErrorEvent>().front().advice.find("engine.launcher") != std::string::npos);
  }

  void wslFormsCrossBothWays() {
    QCOMPARE(windowsToWslPath("C:\\Users\\Zo\xc3\xab\\runs\\a"),
             std::string("/mnt/c/Users/Zo\xc3\xab/runs/a"));
    QCOMPARE(windowsToWslPath("d:/data/set.jsonl"), std::string("/mnt/d/data/set.jsonl"));
    QCOMPARE(windowsToWslPath("\\\\wsl.localhost\\Ubuntu\\home\\u\\m"), std::string("/home/u/m"));
    QCOMPARE(windowsToWslPath("\\\\wsl$\\Ubuntu\\home\\u"), std::string("/home/u"));
    QCOMPARE(windowsToWslPath("relative\\x"), std::string("relative\\x"));
    QCOMPARE(wslToWindowsPath("/mnt/c/Users/Zo\xc3\xab/runs/a/checkpoint-10", ""),
             std::string("C:\\Users\\Zo\xc3\xab\\runs\\a\\checkpoint-10"));
    QCOMPARE(wslToWindowsPath("/mnt/c", ""), std::string("C:\\"));
    QCOMPARE(wslToWindowsPath("/home/u/run", "Ubuntu"),
             std::string("\\\\wsl.localhost\\Ubuntu\\home\\u\\run"));
    QCOMPARE(wslToWindowsPath("/home/u/run", ""), std::string("/home/u/run"));
    QCOMPARE(wslToWindowsPath("/mnt/cdrom/x", ""), std::string("/mnt/cdrom/x"));
  }

  void theTranslatorNamesTheDistributionAndResolvesRelativePaths() {
    profiles::EngineLocation wsl;
    wsl.launcher = {"wsl.exe", "-d", "Ubuntu-24.04", "--", "lorascope-train", "engine"};
    wsl.paths = profiles::EnginePaths::Wsl;
    QCOMPARE(wslDistribution(wsl), std::string("Ubuntu-24.04"));
    const EnginePathTranslator t(wsl, "C:\\Users\\me");
    CheckpointEvent checkpoint{"/home/me/runs/r/checkpoint-3", 3};
    const TimedEvent back = t.toHost(TimedEvent{0, checkpoint});
    QCOMPARE(std::get<CheckpointEvent>(back.event).path,
             std::string("\\\\wsl.localhost\\Ubuntu-24.04\\home\\me\\runs\\r\\checkpoint-3"));
    profiles::EngineLocation prefixes;
    prefixes.launcher = {"launcher"};
    prefixes.paths = profiles::EnginePaths::Prefixes;
    prefixes.prefixes = {{"/work/host", "/engine/view"}};
    const EnginePathTranslator p(prefixes, "/work/host/project");
    const Command start = p.toEngine(
        StartCommand{{{"out", "runs/a"}, {"data_path", "/work/hostile/x"}, {"total_steps", 3}}});
    const nlohmann::json& config = std::get<StartCommand>(start).runConfig;
    QCOMPARE(config["out"].get<std::string>(), std::string("/engine/view/project/runs/a"));
    QCOMPARE(config["data_path"].get<std::string>(), std::string("/work/hostile/x"));  // not under
    QCOMPARE(config["total_steps"].get<int>(), 3);
  }

  void theProfileFieldRoundTripsAndRefusesMistakes() {
    const std::string text = R"({"name": "wsl", "description": "engine in WSL2",
      "engine": {"launcher": ["wsl.exe", "-d", "Ubuntu", "--", "lorascope-train", "engine"],
                 "paths": "wsl"}})";
    const profiles::Profile p = profiles::parseProfile(text, "wsl.json").profile;
    QCOMPARE(p.engine.launcher.size(), std::size_t{6});
    QVERIFY(p.engine.paths == profiles::EnginePaths::Wsl);
    const profiles::Profile again =
        profiles::parseProfile(profiles::profileToJson(p), "again.json").profile;
    QVERIFY(again.engine == p.engine);
    // Moving the engine is decided at its start: switching to this profile restarts it there.
    const profiles::SwitchPlan plan = profiles::planSwitch(profiles::defaultProfile(), p);
    QVERIFY(plan.restartEngine);
    QCOMPARE(plan.environmentChanges.back(),
             std::string("engine: native → wsl.exe -d Ubuntu -- lorascope-train engine"));
    for (const auto& [json, problem] : std::vector<std::pair<std::string, std::string>>{
             {R"({"launcher": []})", "engine.launcher: must be a list"},
             {R"({"launcher": ["x"], "paths": "mars"})", "engine.paths: 'mars' is not one of"},
             {R"({"paths": "wsl"})", "engine.paths: needs engine.launcher"},
             {R"({"launcher": ["x"], "paths": "prefixes"})", "engine.prefixes: are given"},
             {R"({"launcher": ["x"], "where": 1})", "engine.where: unknown key"}}) {
      try {
        profiles::parseProfile(R"({"name": "n", "description": "d", "engine": )" + json + "}",
                               "bad.json");
        QFAIL(("accepted: " + json).c_str());
      } catch (const profiles::ProfileError& e) {
        QVERIFY2(std::string(e.what()).find("bad.json: " + problem) != std::string::npos, e.what());
      }
    }
  }

 private:
  QTemporaryDir configDir_;
};

QTEST_GUILESS_MAIN(TestEngineLauncher)
#include "test_engine_launcher.moc"
