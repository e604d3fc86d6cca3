// test_controls_profiles.cpp — toggles go pending → applied on the engine's confirmation, and
// show Setup's values, as Setup's, until the engine reports; the profile bar switches with one
// click and says which switches restart the engine; the profile editor refuses forbidden
// variables and flags folklore ones through backend/profiles' parser.
#include <QtTest>

#include <QAbstractButton>
#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <map>

#include "RecordedStream.h"
#include "profiles/Builtins.h"
#include "widgets/ControlsPanel.h"
#include "widgets/ProfileBar.h"
#include "widgets/ProfileEditorDialog.h"

using namespace lorascope;
using namespace lorascope::engine;
using widgets::ControlsPanel;

namespace {

SetToggleCommand lastSet(const QSignalSpy& spy) {
  return std::get<SetToggleCommand>(spy.last().at(0).value<Command>());
}

}  // namespace

class TestControlsProfiles : public QObject {
  Q_OBJECT

 private slots:
  void togglesWaitForTheEnginesConfirmation() {
    ControlsPanel panel(widgets::liveControls());
    QVERIFY(!panel.editor(Toggle::Serialize)->isEnabled());  // no engine yet
    panel.setEngineAvailable(true);
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::NotReported);
    QSignalSpy commands(&panel, &ControlsPanel::commandRequested);
    auto* check = qobject_cast<QCheckBox*>(panel.editor(Toggle::Serialize));
    QVERIFY(check != nullptr);
    check->click();
    QCOMPARE(commands.count(), 1);
    QCOMPARE(lastSet(commands).toggle, Toggle::Serialize);
    QCOMPARE(lastSet(commands).value, nlohmann::json(true));
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::Pending);
    QCOMPARE(panel.statusText(Toggle::Serialize), QStringLiteral("pending: on"));
    panel.handleEvent({20001, ToggleAppliedEvent{Toggle::Serialize, true, 40}});
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::Applied);
    QCOMPARE(panel.statusText(Toggle::Serialize), QStringLiteral("applied at step 40"));
    QVERIFY(check->isChecked());
  }

  // The recovery ladder's row: the rung and why from the supervisor's LadderEvent; Undo, enabled
  // while a step down can be undone, sends UndoRungCommand.
  void theLadderRowShowsTheRungAndUndoes() {
    ControlsPanel panel(widgets::liveControls());
    panel.setEngineAvailable(true);
    QVERIFY(!panel.canUndoRung());
    // In plain words, not the rungs' ids.
    QVERIFY2(panel.ladderText().contains("nothing stepped down") &&
                 !panel.ladderText().contains("vendor_blas"),
             qPrintable(panel.ladderText()));
    panel.handleEvent(
        {5000, LadderEvent{"serialize", "vendor_blas", "killed by a signal (SIGSEGV)", 12, 1}});
    QVERIFY2(panel.ladderText().contains(
                 "since step 12 the run uses serialized kernels and blocking launches") &&
                 panel.ladderText().contains("SIGSEGV") &&
                 !panel.ladderText().contains("vendor_blas"),
             qPrintable(panel.ladderText()));
    QVERIFY(panel.canUndoRung());
    QSignalSpy commands(&panel, &ControlsPanel::commandRequested);
    panel.undoRungButton()->click();
    QCOMPARE(commands.count(), 1);
    QVERIFY(std::holds_alternative<UndoRungCommand>(commands.last().at(0).value<Command>()));
    panel.handleEvent({6000, LadderEvent{"vendor_blas", "serialize", "undone by the user", 13, 0}});
    QVERIFY(!panel.canUndoRung());
    panel.setEngineAvailable(false);
    QVERIFY(!panel.canUndoRung());
  }

  // The user's change is refused: the row shows the reason and the editor goes back.
  void aRefusedToggleShowsItsReasonAndReverts() {
    ControlsPanel panel(widgets::liveControls());
    panel.setEngineAvailable(true);
    panel.handleEvent({0, ToggleAppliedEvent{Toggle::GemmBackend, "builtin", 0}});
    auto* combo = qobject_cast<QComboBox*>(panel.editor(Toggle::GemmBackend));
    QCOMPARE(combo->currentData().toString(), QStringLiteral("builtin"));
    panel.requestToggle(Toggle::GemmBackend, "vendor");
    QCOMPARE(combo->currentData().toString(), QStringLiteral("vendor"));
    panel.handleEvent({10, ToggleRefusedEvent{Toggle::GemmBackend, "vendor",
                                              "this build has no vendor BLAS", 3}});
    QCOMPARE(panel.status(Toggle::GemmBackend), ControlsPanel::Status::Refused);
    QCOMPARE(panel.statusText(Toggle::GemmBackend),
             QStringLiteral("refused: this build has no vendor BLAS"));
    QCOMPARE(combo->currentData().toString(), QStringLiteral("builtin"));
    QCOMPARE(*panel.appliedValue(Toggle::GemmBackend), nlohmann::json("builtin"));
    // A refusal of a change the user did not make (a profile's) leaves the row alone.
    panel.handleEvent({20, ToggleAppliedEvent{Toggle::Serialize, false, 3}});
    panel.handleEvent({30, ToggleRefusedEvent{Toggle::Serialize, true, "engine busy", 3}});
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::Applied);
  }

  // The rows are named as Setup names their options, except the device's tick, which is named by
  // what it means.
  void rowsAreNamedByWhatTheirEditorsSet() {
    std::map<Toggle, QString> labels;
    for (const widgets::ControlSpec& spec : widgets::liveControls()) {
      labels[spec.toggle] = spec.label;
    }
    QCOMPARE(labels.at(Toggle::CpuFallback), QStringLiteral("CPU fallback"));
    QCOMPARE(labels.at(Toggle::MicroBatch), QStringLiteral("Micro-batch"));
    QCOMPARE(labels.at(Toggle::Serialize), QStringLiteral("Serialize kernels"));
    QCOMPARE(labels.at(Toggle::GemmBackend), QStringLiteral("GEMM backend"));
  }

  // A GPU setting on a CPU run is disabled, with the engine's reason as tooltip.
  void aToggleThatDoesNotApplyHereIsDisabledWithTheReason() {
    ControlsPanel panel(widgets::liveControls());
    panel.setEngineAvailable(true);
    const std::string why = "this run computes on the CPU, which makes no GPU launches";
    panel.handleEvent({0, ToggleAppliedEvent{Toggle::Serialize, false, 0, "", why}});
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::NotApplicable);
    QCOMPARE(panel.statusText(Toggle::Serialize), QStringLiteral("not applicable here"));
    QVERIFY(!panel.editor(Toggle::Serialize)->isEnabled());
    QVERIFY(panel.editor(Toggle::Serialize)->toolTip().contains(QString::fromStdString(why)));
    panel.setEngineAvailable(true);  // an engine reconnecting does not enable it
    QVERIFY(!panel.editor(Toggle::Serialize)->isEnabled());
    QVERIFY(panel.editor(Toggle::MicroBatch)->isEnabled());
    // The run moves to a GPU: the confirmation without the reason enables it again.
    panel.handleEvent({10, ToggleAppliedEvent{Toggle::Serialize, false, 5}});
    QVERIFY(panel.editor(Toggle::Serialize)->isEnabled());
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::Applied);
  }

  // Setup's options as the dock's values until the engine reports (the registry maps them: device
  // cpu is CPU fallback on; auto is the engine's to decide), never claimed as the engine's, and
  // not shown for a run that does not start from them (a resume) or for a recording.
  void unreportedRowsShowSetupsValueAsSetups() {
    const auto configured = widgets::configuredToggles(
        {{"batch-size", "8"}, {"device", "cpu"}, {"gemm-backend", "builtin"}, {"lora-r", "16"}});
    QCOMPARE(configured.at(Toggle::MicroBatch), nlohmann::json(8));
    QCOMPARE(configured.at(Toggle::CpuFallback), nlohmann::json(true));
    QCOMPARE(configured.at(Toggle::GemmBackend), nlohmann::json("builtin"));
    QCOMPARE(configured.size(), std::size_t{3});  // lora-r has no toggle
    QVERIFY(widgets::configuredToggles({{"batch-size", "auto"}, {"device", "auto"}}).empty());

    ControlsPanel panel(widgets::liveControls());
    panel.setEngineAvailable(true);
    QSignalSpy commands(&panel, &ControlsPanel::commandRequested);
    panel.setConfigured(configured);
    auto* spin = qobject_cast<QSpinBox*>(panel.editor(Toggle::MicroBatch));
    QCOMPARE(spin->value(), 8);
    QCOMPARE(panel.status(Toggle::MicroBatch), ControlsPanel::Status::Configured);
    QVERIFY(!panel.appliedValue(Toggle::MicroBatch));
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::NotReported);  // not given
    QCOMPARE(commands.count(), 0);
    panel.handleEvent({10, ToggleAppliedEvent{Toggle::MicroBatch, 2, 0}});
    QCOMPARE(spin->value(), 2);
    QCOMPARE(panel.status(Toggle::MicroBatch), ControlsPanel::Status::Applied);
    panel.showRecorded(QStringLiteral("old.jsonl"), {});
    QCOMPARE(panel.status(Toggle::GemmBackend), ControlsPanel::Status::NotReported);
    panel.showLive();
    QCOMPARE(panel.status(Toggle::GemmBackend), ControlsPanel::Status::Configured);
    panel.startRun(/*fromConfigured=*/false);  // a resumed run: its own config.json's values
    QCOMPARE(panel.status(Toggle::MicroBatch), ControlsPanel::Status::NotReported);
    panel.startRun(/*fromConfigured=*/true);
    QCOMPARE(panel.status(Toggle::MicroBatch), ControlsPanel::Status::Configured);
    QCOMPARE(spin->value(), 8);
  }

  // A profile's toggles apply over Setup's options when a run starts (profiles::setAtStart): the
  // dock shows them as the profile's, and Setup's again without them; CPU fallback off is not one
  // (only a switch to the profile sends it), so a run Setup puts on the CPU shows it there.
  void aProfilesTogglesShowAsTheProfiles() {
    ControlsPanel panel(widgets::liveControls());
    const auto setup = widgets::configuredToggles(
        {{"batch-size", "8"}, {"device", "cpu"}, {"serialize-kernels", "false"}});
    panel.setConfigured(
        setup, QStringLiteral("Debug: serialize + blocking"),
        {{Toggle::Serialize, true}, {Toggle::Blocking, true}, {Toggle::CpuFallback, false}});
    const auto checked = [&](Toggle toggle) {
      return qobject_cast<QCheckBox*>(panel.editor(toggle))->isChecked();
    };
    QVERIFY(checked(Toggle::Serialize));
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::Configured);
    QCOMPARE(panel.statusText(Toggle::Serialize), QStringLiteral("from the profile"));
    QVERIFY(checked(Toggle::Blocking));
    QCOMPARE(panel.statusText(Toggle::MicroBatch), QStringLiteral("from Setup"));
    QVERIFY(checked(Toggle::CpuFallback));
    QCOMPARE(panel.statusText(Toggle::CpuFallback), QStringLiteral("from Setup"));
    QVERIFY(!panel.appliedValue(Toggle::Serialize));
    panel.setConfigured(setup);
    QVERIFY(!checked(Toggle::Serialize));
    QCOMPARE(panel.statusText(Toggle::Serialize), QStringLiteral("from Setup"));
    QCOMPARE(panel.status(Toggle::Blocking), ControlsPanel::Status::NotReported);
  }

  // A rung the recovery ladder took stays for the next run, which the supervisor starts on it
  // (Supervisor::adoptRun, sendRungToggles): until the engine reports, the dock shows the rung's
  // values as the ladder's (the micro-batch halved from Setup's), and Setup's again once the rung
  // is undone.
  void aRungTakenInAnEarlierRunShowsAsTheLaddersAtTheNextStart() {
    ControlsPanel panel(widgets::liveControls());
    panel.setEngineAvailable(true);
    panel.setConfigured(widgets::configuredToggles(
        {{"batch-size", "8"}, {"serialize-kernels", "false"}, {"gemm-backend", "vendor"}}));
    const auto checked = [&](Toggle toggle) {
      return qobject_cast<QCheckBox*>(panel.editor(toggle))->isChecked();
    };
    auto* spin = qobject_cast<QSpinBox*>(panel.editor(Toggle::MicroBatch));
    auto* gemm = qobject_cast<QComboBox*>(panel.editor(Toggle::GemmBackend));
    panel.startRun(/*fromConfigured=*/true);
    panel.handleEvent({10, LadderEvent{"serialize", "builtin_gemm", "a hang in backward", 12, 2}});
    panel.handleEvent({11, ToggleAppliedEvent{Toggle::Serialize, true, 12}});
    panel.endRun();

    panel.startRun(/*fromConfigured=*/true);
    QVERIFY(checked(Toggle::Serialize));
    QCOMPARE(panel.status(Toggle::Serialize), ControlsPanel::Status::Configured);
    QCOMPARE(panel.statusText(Toggle::Serialize), QStringLiteral("from the recovery ladder"));
    QVERIFY(checked(Toggle::Blocking));
    QCOMPARE(panel.statusText(Toggle::Blocking), QStringLiteral("from the recovery ladder"));
    QCOMPARE(gemm->currentData().toString(), QStringLiteral("builtin"));
    QCOMPARE(panel.statusText(Toggle::GemmBackend), QStringLiteral("from the recovery ladder"));
    QCOMPARE(spin->value(), 8);
    QCOMPARE(panel.statusText(Toggle::MicroBatch), QStringLiteral("from Setup"));
    QVERIFY(!panel.appliedValue(Toggle::Serialize));

    // The rung that halves the micro-batch: half of Setup's 8 (an auto batch stays without one).
    panel.handleEvent({20, LadderEvent{"smaller_micro_batch", "serialize", "out of memory", 3, 3}});
    QCOMPARE(spin->value(), 4);
    QCOMPARE(panel.statusText(Toggle::MicroBatch), QStringLiteral("from the recovery ladder"));
    panel.setConfigured(widgets::configuredToggles({{"batch-size", "auto"}}));
    QCOMPARE(spin->text(), QStringLiteral("—"));
    QCOMPARE(panel.status(Toggle::MicroBatch), ControlsPanel::Status::NotReported);
    QVERIFY(checked(Toggle::Serialize));  // the rungs below still set theirs

    // Undone to the run as configured: Setup's values again.
    panel.setConfigured(widgets::configuredToggles(
        {{"batch-size", "8"}, {"serialize-kernels", "false"}, {"gemm-backend", "vendor"}}));
    panel.handleEvent(
        {30, LadderEvent{"vendor_blas", "smaller_micro_batch", "undone by the user", 3, 0}});
    QVERIFY(!checked(Toggle::Serialize));
    QCOMPARE(panel.statusText(Toggle::Serialize), QStringLiteral("from Setup"));
    QCOMPARE(spin->value(), 8);
    QCOMPARE(gemm->currentData().toString(), QStringLiteral("vendor"));
    QCOMPARE(panel.statusText(Toggle::GemmBackend), QStringLiteral("from Setup"));
  }

  // A number row with no value shows a dash, not its minimum (which would read as the value); the
  // dash is not a value it sends, and the first real one restores the real range.
  void aNumberRowWithNoValueShowsNone() {
    ControlsPanel panel(widgets::liveControls());
    panel.setEngineAvailable(true);
    QSignalSpy commands(&panel, &ControlsPanel::commandRequested);
    auto* spin = qobject_cast<QSpinBox*>(panel.editor(Toggle::MicroBatch));
    QCOMPARE(spin->text(), QStringLiteral("—"));
    spin->stepDown();
    QCOMPARE(commands.count(), 0);
    spin->stepUp();
    QCOMPARE(commands.count(), 1);
    QCOMPARE(lastSet(commands).value, nlohmann::json(1));
    QCOMPARE(spin->text(), QStringLiteral("1"));
    QCOMPARE(spin->minimum(), 1);
    panel.startRun(/*fromConfigured=*/false);
    QCOMPARE(spin->text(), QStringLiteral("—"));
  }

  void anotherValueStaysPendingUntilItsOwnConfirmation() {
    ControlsPanel panel(widgets::liveControls());
    panel.setEngineAvailable(true);
    QSignalSpy commands(&panel, &ControlsPanel::commandRequested);
    auto* spin = qobject_cast<QSpinBox*>(panel.editor(Toggle::MicroBatch));
    spin->setValue(4);
    spin->setValue(8);
    QCOMPARE(commands.count(), 2);
    QCOMPARE(lastSet(commands).value, nlohmann::json(8));
    panel.handleEvent({100, ToggleAppliedEvent{Toggle::MicroBatch, 4, 3}});
    QCOMPARE(panel.status(Toggle::MicroBatch), ControlsPanel::Status::Pending);
    QCOMPARE(spin->value(), 8);
    QCOMPARE(*panel.appliedValue(Toggle::MicroBatch), nlohmann::json(4));
    panel.handleEvent({200, ToggleAppliedEvent{Toggle::MicroBatch, 8, 4}});
    QCOMPARE(panel.status(Toggle::MicroBatch), ControlsPanel::Status::Applied);
  }

  void changesMadeByTheEngineShowWithoutARequest() {
    ControlsPanel panel(widgets::liveControls());
    const auto stream = testing::readStream("synthetic_gpu_run.jsonl");
    for (const TimedEvent& e : stream) {
      panel.handleEvent(e);
    }
    auto* gemm = qobject_cast<QComboBox*>(panel.editor(Toggle::GemmBackend));
    QCOMPARE(gemm->currentData().toString(), QStringLiteral("builtin"));  // the ladder's doing
    QCOMPARE(panel.statusText(Toggle::GemmBackend), QStringLiteral("applied at step 80"));
    QCOMPARE(panel.status(Toggle::Blocking), ControlsPanel::Status::NotReported);
    QCOMPARE(panel.effectiveBatchText(),
             QStringLiteral("Effective batch: 2 × 8 accumulation = 16 sequences"));
    QCOMPARE(panel.applyMode(Toggle::AllocatorPolicy), ControlsPanel::ApplyMode::Live);
  }

  // A supervised trainer that reports no batch (no probe, no --batch-arg): unknown, not 0.
  void anUnreportedBatchIsUnknown() {
    ControlsPanel panel(widgets::liveControls());
    StepEvent step;
    step.step = 1;
    step.microBatch = 0;
    step.accumulation = 0;
    panel.handleEvent({100, step});
    QCOMPARE(panel.effectiveBatchText(),
             QStringLiteral("Effective batch: not reported by the trainer"));
    step.microBatch = 64;
    panel.handleEvent({200, step});
    QCOMPARE(panel.effectiveBatchText(),
             QStringLiteral("Effective batch: micro-batch 64, accumulation not reported"));
  }

  void profileBarListsBuiltinsThenUserProfilesAndSwitchesInOneClick() {
    QTemporaryDir dir;
    profiles::Profile mine;
    mine.name = "Mine";
    mine.description = "test";
    mine.environment["GPU_MAX_HW_QUEUES"] = "2";
    profiles::ProfileStore(dir.path().toStdString()).save(mine);
    QFile broken(dir.filePath("broken.json"));
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("{\"name\": \"Broken\"}");
    broken.close();

    widgets::ProfileBar bar(dir.path().toStdString());
    const QStringList names = bar.profileNames();
    QCOMPARE(names.size(), static_cast<int>(profiles::builtinProfiles().size()) + 1);
    QCOMPARE(names.first(), QStringLiteral("Balanced"));
    QCOMPARE(names.last(), QStringLiteral("Mine"));
    QCOMPARE(bar.loadProblems().size(), 1);
    QVERIFY(bar.loadProblems().first().contains("description"));

    QVERIFY(!bar.button("Low VRAM")->isEnabled());  // no engine to switch
    bar.setEngineAvailable(true);
    QSignalSpy commands(&bar, &widgets::ProfileBar::commandRequested);
    bar.button("Low VRAM")->click();
    QCOMPARE(commands.count(), 1);
    const auto sw = std::get<SwitchProfileCommand>(commands.last().at(0).value<Command>());
    QCOMPARE(sw.name, std::string("Low VRAM"));
    QVERIFY(bar.button("Low VRAM")->isChecked());
    QCOMPARE(bar.requestedProfile(), QStringLiteral("Low VRAM"));
  }

  void switchesThatChangeTheEnvironmentSayTheyRestart() {
    QTemporaryDir dir;
    widgets::ProfileBar bar(dir.path().toStdString());
    QVERIFY(bar.switchSummary("ROCm stable").contains("restarts the engine"));
    QVERIFY(bar.switchSummary("ROCm stable").contains("GPU_MAX_HW_QUEUES: (unset) → 2"));
    QVERIFY(bar.switchSummary("Built-in GEMM").contains("without a restart"));
    QVERIFY(bar.button("ROCm stable")->toolTip().contains("restarts the engine"));
  }

  void editorRefusesForbiddenVariables() {
    QTemporaryDir dir;
    profiles::ProfileStore store(dir.path().toStdString());
    profiles::Profile p;
    p.name = "Injected";
    p.description = "tries to preload a library";
    widgets::ProfileEditorDialog editor(store, p);
    QVERIFY(editor.canSave());
    editor.addEnvironmentRow("LD_PRELOAD", "/tmp/evil.so");
    QVERIFY(!editor.canSave());
    QVERIFY2(editor.problems().contains("LD_PRELOAD"), qPrintable(editor.problems()));
    const QString check =
        editor.environmentTable()->item(0, widgets::ProfileEditorDialog::CheckColumn)->text();
    QVERIFY2(check.startsWith("forbidden"), qPrintable(check));
    QVERIFY(!editor.save().isEmpty());
    QVERIFY(store.load().profiles.size() == profiles::builtinProfiles().size());
  }

  void editorFlagsFolkloreAndSaves() {
    QTemporaryDir dir;
    profiles::ProfileStore store(dir.path().toStdString());
    profiles::Profile p;
    p.name = "Folk";
    p.description = "from a forum answer";
    widgets::ProfileEditorDialog editor(store, p);
    editor.addEnvironmentRow("HIP_SERIALIZE_KERNEL", "1");
    QVERIFY(editor.canSave());
    QVERIFY2(editor.notes().contains("AMD_SERIALIZE_KERNEL"), qPrintable(editor.notes()));
    const QString check =
        editor.environmentTable()->item(0, widgets::ProfileEditorDialog::CheckColumn)->text();
    QVERIFY2(check.startsWith("folklore"), qPrintable(check));
    QCOMPARE(editor.save(), QString());
    const auto listing = store.load();
    QCOMPARE(listing.profiles.back().profile.name, std::string("Folk"));
    QCOMPARE(listing.profiles.back().profile.environment.at("HIP_SERIALIZE_KERNEL"),
             std::string("1"));
  }

  void editingABuiltinSavesACopy() {
    QTemporaryDir dir;
    profiles::ProfileStore store(dir.path().toStdString());
    widgets::ProfileEditorDialog editor(store, profiles::defaultProfile());
    QCOMPARE(editor.nameEdit()->text(), QStringLiteral("Balanced (custom)"));
    editor.nameEdit()->setText("Balanced");
    QVERIFY(editor.save().contains("built-in"));
    editor.nameEdit()->setText("Balanced (custom)");
    QCOMPARE(editor.save(), QString());
    QCOMPARE(store.load().profiles.back().profile.toggles, profiles::defaultProfile().toggles);
  }
};

QTEST_MAIN(TestControlsProfiles)
#include "test_controls_profiles.moc"
