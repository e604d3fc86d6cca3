// test_settings_registry.cpp — one entry in the settings registry is all a surface needs: a toggle
// added here, and named nowhere else, appears in `lorascope-train train --help`, is read and
// written by profile files, is checked by the protocol, and gets a row in the Controls dock.
#include <QtTest>

#include <QCheckBox>
#include <QSignalSpy>

#include "engine/Protocol.h"
#include "job/CliArgs.h"     // defines: formatHelp
#include "job/RunOptions.h"  // defines: trainCommand
#include "profiles/ProfileJson.h"
#include "settings/Registry.h"
#include "widgets/ControlsPanel.h"

using namespace lorascope;
using nlohmann::json;

namespace {

// A toggle no code of LoRAscope knows: live, boolean, GPU-only, set by profiles as "extra".
const settings::Toggle kExtra("extra_toggle");

void registerExtraToggle() {
  settings::Setting s;
  s.option = settings::boolOption("extra-toggle", "false",
                                  "A toggle that only this test's registry entry describes.");
  s.label = "Extra toggle";
  s.group = "Device";
  s.configKey = "/extra_toggle";
  s.optionalInConfig = true;
  s.apply = settings::Apply::Live;
  s.toggle = kExtra;
  s.toggleValue = settings::boolOption("", "", "");
  s.eventName = "extra toggle";
  s.profileKey = "extra";
  s.cpuNote = "which has nothing to do";
  settings::registry().add(std::move(s));
}

std::string setLine(const json& value) {
  return json{{"v", engine::kProtocolVersion},
              {"type", "set"},
              {"toggle", "extra_toggle"},
              {"value", value}}
      .dump();
}

}  // namespace

class TestSettingsRegistry : public QObject {
  Q_OBJECT

 private slots:
  // Before any surface reads the registry (the ones that read it once keep what they read).
  void initTestCase() { registerExtraToggle(); }

  void aNameTakenTwiceIsRefused() {
    settings::Setting again;
    again.option = settings::boolOption("extra-toggle", "false", "The same name again.");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, settings::registry().add(again));
    settings::Setting sameProfileKey;
    sameProfileKey.option = settings::boolOption("other-toggle", "false", "Another toggle.");
    sameProfileKey.profileKey = "gemm";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, settings::registry().add(sameProfileKey));
    QVERIFY(settings::registry().find("other-toggle") == nullptr);  // refused entries are gone
  }

  void theTrainCommandsHelpListsIt() {
    // The help wraps lines: compared with its runs of spaces and line breaks made one space.
    const QString help =
        QString::fromStdString(job::formatHelp(job::trainCommand(), "lorascope-train"))
            .simplified();
    QVERIFY(help.contains("Device: "));
    QVERIFY(
        help.contains("--extra-toggle/--no-extra-toggle A toggle that only this test's registry "
                      "entry describes. Live: the controls dock changes it during a run. "
                      "(default off)"));
    const job::CliArgs parsed({"--no-extra-toggle"}, job::trainCommand());
    QCOMPARE(parsed.value("extra-toggle").value_or(""), std::string("false"));
  }

  void profilesReadAndWriteIt() {
    const profiles::Profile p =
        profiles::parseProfile(R"({"name": "x", "description": "d", "toggles": {"extra": true}})",
                               "extra.json")
            .profile;
    QCOMPARE(p.toggles.at(kExtra), json(true));
    const std::string written = profiles::profileToJson(p);
    QCOMPARE(json::parse(written).at("toggles"), json({{"extra", true}}));
    QCOMPARE(profiles::parseProfile(written, "written").profile.toggles, p.toggles);
    try {
      profiles::parseProfile(R"({"name": "x", "description": "d", "toggles": {"extra": 3}})",
                             "bad.json");
      QFAIL("a number for a boolean toggle was accepted");
    } catch (const profiles::ProfileError& e) {
      QCOMPARE(QString(e.what()), QString("bad.json: toggles.extra: must be true or false, not 3"));
    }
  }

  void theProtocolChecksIt() {
    const auto set = std::get<engine::SetToggleCommand>(engine::decodeCommand(setLine(true)));
    QCOMPARE(set.toggle, kExtra);
    QCOMPARE(set.value, json(true));
    QCOMPARE(engine::encodeCommand(set), setLine(true));
    try {
      engine::decodeCommand(setLine("yes"));
      QFAIL("a string for a boolean toggle was accepted");
    } catch (const engine::ProtocolError& e) {
      QVERIFY2(QString(e.what()).contains("extra_toggle must be true or false"), e.what());
    }
    const engine::TimedEvent applied{5,
                                     engine::ToggleAppliedEvent{kExtra, false, 3, "", "not here"}};
    const auto back = std::get<engine::ToggleAppliedEvent>(
        engine::decodeEvent(engine::encodeEvent(applied)).event);
    QCOMPARE(back.toggle, kExtra);
    QCOMPARE(back.notApplicable, std::string("not here"));
  }

  void theControlsDockHasARowForIt() {
    widgets::ControlsPanel dock;  // the registry's live settings
    QVERIFY(dock.hasControl(kExtra));
    auto* box = qobject_cast<QCheckBox*>(dock.editor(kExtra));
    QVERIFY(box != nullptr);
    dock.setEngineAvailable(true);
    dock.handleEvent({1, engine::ToggleAppliedEvent{kExtra, false, 1}});
    QSignalSpy sent(&dock, &widgets::ControlsPanel::commandRequested);
    box->click();
    QCOMPARE(sent.count(), 1);
    const auto set = std::get<engine::SetToggleCommand>(sent.last().at(0).value<engine::Command>());
    QCOMPARE(set.toggle, kExtra);
    QCOMPARE(set.value, json(true));
    QCOMPARE(dock.status(kExtra), widgets::ControlsPanel::Status::Pending);
  }
};

QTEST_MAIN(TestSettingsRegistry)
#include "test_settings_registry.moc"
