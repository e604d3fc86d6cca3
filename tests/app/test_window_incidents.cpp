// test_window_incidents.cpp — the main window as a user meets its incidents and its smaller pages:
//   - a hang replayed from the H100 recording (Runs → Open recording…) is a row in Log and
//     incidents, a banner on the dashboard whose step agrees with its marker, and a band on the
//     step axis with its length; the memory map lets go of the previous recording's snapshot;
//   - a run recorded on two H200s shows each card's readings and memory map through the card
//     selectors, and its hang in rank 1 names the rank, restarts the group and loses no step;
//   - live incidents and refusals are banners and rows too;
//   - Try it: Ctrl+Return in the prompt generates although Start has the same keys, and an answer
//     of blank lines says so under its pane;
//   - a CPU run's memory chart says what its host RAM includes;
//   - Help → Check this GPU on this machine (no GPU) leads with "no GPU found: this is what runs
//     on the CPU", not with a plain pass;
//   - at 1024×700 the dashboard fits beside the Controls dock: no chart squeezed below a readable
//     plot, no axis title cut.
#include <QtTest>

#include <QAction>
#include <QChart>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QValueAxis>

#include <map>

#include "../widgets/RecordedStream.h"
#include "AppTestHome.h"
#include "TestPaths.h"
#include "gui/GpuCheckDialog.h"
#include "gui/MainWindow.h"
#include "gui/TryItPage.h"
#include "widgets/Dashboard.h"
#include "widgets/EventLogModel.h"
#include "widgets/IncidentBanner.h"
#include "widgets/MemoryMapPanel.h"
#include "widgets/TimeChart.h"

using namespace lorascope;
using namespace lorascope::engine;

namespace {

// The rows of the log whose message contains `text`.
QStringList logRows(const widgets::EventLogModel& log, const QString& text) {
  QStringList rows;
  for (int row = 0; row < log.rowCount(); ++row) {
    const QString message = log.index(row, widgets::EventLogModel::MessageColumn).data().toString();
    if (message.contains(text)) {
      rows << message;
    }
  }
  return rows;
}

// The dashboard's first incident marker (a hang's band), or null.
const widgets::ChartMarker* incidentMarker(const widgets::Dashboard& dashboard) {
  const auto found = std::find_if(
      dashboard.markers().begin(), dashboard.markers().end(),
      [](const widgets::ChartMarker& m) { return m.kind == widgets::MarkerKind::Incident; });
  return found == dashboard.markers().end() ? nullptr : &*found;
}

}  // namespace

class TestWindowIncidents : public QObject {
  Q_OBJECT

 private slots:
  // The recording with the injected hang (hang@adamw#5): the engine reported it 10.5 s after
  // step 4, while step 5 ran.
  void aRecordedHangIsARowABannerAndABand() {
    app::MainWindow window(app::collectAboutFacts());
    window.resize(1280, 820);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openRecording(testing::fixturePath("h100_gpu_run.jsonl")).isEmpty());
    QVERIFY(window.memoryMap()->hasSnapshot());
    QVERIFY(window.openRecording(testing::fixturePath("h100_gpu_hang.jsonl")).isEmpty());

    // The memory map no longer shows the other recording's snapshot.
    QVERIFY(!window.memoryMap()->hasSnapshot());
    QVERIFY2(window.memoryMap()->summaryText().contains("h100_gpu_hang.jsonl holds no allocator"),
             qPrintable(window.memoryMap()->summaryText()));

    // A row in Log and incidents, marked as the recording's.
    const QStringList rows = logRows(*window.eventLog(), QStringLiteral("hang in step 5"));
    QCOMPARE(rows.size(), 1);
    QVERIFY2(rows[0].startsWith(QStringLiteral("[h100_gpu_hang.jsonl] hang: hang in step 5")),
             qPrintable(rows[0]));

    // The banner, in words, with the step the marker is at.
    window.dashboard()->refresh();
    widgets::IncidentBanner* banner = window.dashboard()->incidentBanner();
    QVERIFY(banner->isVisible());
    const QString text = banner->shownText();
    QVERIFY2(text.contains(QStringLiteral(
                 "Hang in step 5: no step for 10.5 s after step 4 (which took 0.8 s)")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral(
                 "Stuck in op 'adamw'; nothing was queued on the GPU (compute 0 in flight)")),
             qPrintable(text));
    const widgets::ChartMarker* hang = incidentMarker(*window.dashboard());
    QVERIFY(hang != nullptr);
    QCOMPARE(hang->x, 5.0);
    QVERIFY(hang->spanFromX.has_value());
    QCOMPARE(*hang->spanFromX, 4.0);
    QCOMPARE(hang->label, QStringLiteral("step 5 hung: 10.5 s"));

    // The band is drawn: in the middle of step 5 the plot is tinted red, beside it not.
    window.pages()->setCurrentWidget(window.dashboard());
    QTest::qWait(100);
    widgets::MarkedChartView* view = window.dashboard()->lossChart()->view();
    const auto inBand = view->xForTime(4.5);
    const auto beside = view->xForTime(2.5);
    QVERIFY(inBand && beside);
    const QImage image = view->grab().toImage();
    auto reddish = [&](double x) {
      int count = 0;
      for (int y = 0; y < image.height(); ++y) {
        const QColor c = image.pixelColor(static_cast<int>(x), y);
        count += c.red() > c.green() + 15 && c.red() > c.blue() + 15 ? 1 : 0;
      }
      return count;
    };
    QVERIFY2(reddish(*inBand) > image.height() / 3,
             qPrintable(QStringLiteral("%1 of %2").arg(reddish(*inBand)).arg(image.height())));
    QVERIFY(reddish(*beside) < image.height() / 10);

    // On the time axis the band covers the seconds without a step.
    window.dashboard()->setXAxis(widgets::Dashboard::XAxis::Time);
    const widgets::ChartMarker* timed = incidentMarker(*window.dashboard());
    QVERIFY(timed != nullptr && timed->spanFromX.has_value());
    QVERIFY2(std::abs(timed->x - *timed->spanFromX - 10.518) < 0.01,
             qPrintable(QStringLiteral("%1 → %2").arg(*timed->spanFromX).arg(timed->x)));
  }

  // A run on two H200s recorded through `train --gpus 0,1` (tests/widgets/fixtures/README.md):
  // the dashboard's card selector lists both cards and draws the chosen card's memory readings,
  // the memory map's shows each card's own snapshot; the next recording, which holds none, lets
  // go of both.
  void aRecordedTwoGpuRunShowsEachCard() {
    const QString recording = testing::fixturePath("h200x2_gpu_run.jsonl");
    std::map<int, std::size_t> segments;  // each card's snapshot, as recorded
    std::map<int, int> readings;          // each card's memory readings
    QFile in(recording);
    QVERIFY(in.open(QIODevice::ReadOnly));
    while (!in.atEnd()) {
      const TimedEvent timed = decodeEvent(in.readLine().trimmed().toStdString());
      if (const auto* snapshot = std::get_if<SnapshotEvent>(&timed.event)) {
        segments[snapshot->card.value_or(-1)] = snapshot->snapshot["segments"].size();
      } else if (const auto* memory = std::get_if<MemoryEvent>(&timed.event)) {
        ++readings[memory->card.value_or(-1)];
      }
    }
    QCOMPARE(segments.size(), std::size_t{2});
    QVERIFY(segments.at(0) != segments.at(1));
    QVERIFY(readings.at(0) != readings.at(1) && !readings.contains(-1));

    app::MainWindow window(app::collectAboutFacts());
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(window.openRecording(recording), QString());
    widgets::Dashboard* dashboard = window.dashboard();
    dashboard->refresh();
    QComboBox* cards = dashboard->cardSelector();
    QVERIFY(cards->isVisibleTo(dashboard));
    QCOMPARE(cards->count(), 2);
    const auto drawn = [&](int card) {
      emit cards->activated(cards->findData(card));
      dashboard->refresh();
      return dashboard->memoryChart()->lineSeries(widgets::Dashboard::Allocated)->count();
    };
    const int first = drawn(0);
    const int second = drawn(1);
    QVERIFY2(first > 0 && second > 0 && first != second,
             qPrintable(QStringLiteral("%1 and %2 points").arg(first).arg(second)));
    QCOMPARE(cards->currentText(), QStringLiteral("GPU 1"));

    window.pages()->setCurrentWidget(window.memoryMap());
    widgets::MemoryMapPanel* map = window.memoryMap();
    QVERIFY(map->cardSelector()->isVisible());
    QCOMPARE(map->cardSelector()->count(), 2);
    map->cardSelector()->setFocus();
    QTest::keyClick(map->cardSelector(), Qt::Key_Up);
    QCOMPARE(map->cardSelector()->currentText(), QStringLiteral("GPU 0"));
    QCOMPARE(map->view()->snapshot().segments.size(), segments.at(0));
    QTest::keyClick(map->cardSelector(), Qt::Key_Down);
    QCOMPARE(map->view()->snapshot().segments.size(), segments.at(1));
    QVERIFY2(map->summaryText().contains("GPU 1, from the recording h200x2_gpu_run.jsonl"),
             qPrintable(map->summaryText()));

    QCOMPARE(window.openRecording(testing::fixturePath("h100_gpu_hang.jsonl")), QString());
    QVERIFY(!map->hasSnapshot());
    QVERIFY(!map->cardSelector()->isVisible());
  }

  // The same group with a hang injected in rank 1's optimizer (LORASCOPE_FAULTS_RANK=1), recorded
  // on two H200s: the banner names the rank and its GPU, the group restarted from step 4, and
  // step 5 was replayed, so every step of the run is on the chart once.
  void aRecordedHangInRankOneNamesItsGpuAndLosesNoStep() {
    app::MainWindow window(app::collectAboutFacts());
    window.resize(1280, 820);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openRecording(testing::fixturePath("h200x2_group_hang.jsonl")).isEmpty());
    window.dashboard()->refresh();
    const QString text = window.dashboard()->incidentBanner()->shownText();
    QVERIFY2(text.contains(QStringLiteral("rank 1 (GPU 1): hang in step 5")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("all 2 ranks restart")), qPrintable(text));
    const QLineSeries* loss = window.dashboard()->lossChart()->lineSeries(widgets::Dashboard::Loss);
    std::vector<double> steps;
    for (int i = 0; i < loss->count(); ++i) {
      steps.push_back(loss->at(i).x());
    }
    QCOMPARE(steps, (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  }

  // The hang recorded again on an H200 with today's engine: a step is announced once its state is
  // saved, so step 4 had finished but was not announced when step 5 hung; the engine's error names
  // step 5, and so do the banner, the band (from step 3 to 5) and the engine's own report.
  void aHangAfterAStepNotYetAnnouncedNamesTheEnginesStep() {
    app::MainWindow window(app::collectAboutFacts());
    window.resize(1280, 820);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openRecording(testing::fixturePath("h200_gpu_hang.jsonl")).isEmpty());
    window.dashboard()->refresh();
    const QString text = window.dashboard()->incidentBanner()->shownText();
    QVERIFY2(text.contains(QStringLiteral("Hang in step 5: no step for 10.3 s after step 3")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("The engine reported: hang in step 5:")),
             qPrintable(text));
    const widgets::ChartMarker* hang = incidentMarker(*window.dashboard());
    QVERIFY(hang != nullptr);
    QCOMPARE(hang->x, 5.0);
    QCOMPARE(hang->spanFromX.value_or(-1.0), 3.0);
    QCOMPARE(hang->label, QStringLiteral("step 5 hung: 10.3 s"));
    QCOMPARE(logRows(*window.eventLog(), QStringLiteral("hang in step 5")).size(), 1);
  }

  // A live incident (the supervisor's restart) and a refused toggle: each a banner line and a
  // row; the banner shows the newest two and counts the rest.
  void liveIncidentsAndRefusalsAreBannersAndRows() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    engine.play({{0, StateEvent{RunState::Running, 0, ""}},
                 {1000, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 1}},
                 {2000, StepEvent{2, 1.9, 1e-4, 1.0, 100.0, 1, 1}},
                 {2500, ToggleRefusedEvent{Toggle::MicroBatch, 64, "64 does not fit", 2}},
                 {3000, IncidentEvent{"engine killed by SIGSEGV after step 2 (crash)",
                                      "restarted the engine on the same rung", 2}}});
    widgets::IncidentBanner* banner = window.dashboard()->incidentBanner();
    QCOMPARE(banner->count(), 2);
    QString text = banner->shownText();
    QVERIFY2(text.contains(QStringLiteral("micro_batch → 64 refused at step 2")), qPrintable(text));
    QVERIFY2(text.contains(
                 QStringLiteral("Incident after step 2: engine killed by SIGSEGV after step 2")),
             qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("What the supervisor did: restarted the engine")));
    QCOMPARE(logRows(*window.eventLog(), QStringLiteral("engine killed by SIGSEGV")).size(), 1);
    QCOMPARE(logRows(*window.eventLog(), QStringLiteral("64 does not fit")).size(), 1);
    engine.play({{4000, ErrorEvent{"out_of_memory", "matmul", 2, "out of memory allocating 2 GiB",
                                   "lower the micro-batch", false}}});
    text = banner->shownText();
    QVERIFY2(text.startsWith(QStringLiteral("1 earlier incident")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("Out of memory after step 2 (op matmul)")),
             qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("What to try: lower the micro-batch")));
    banner->dismissButton()->click();
    QVERIFY(banner->shownText().isEmpty());
  }

  // A CPU run's host RAM climbs with the CPU backend's block cache (measured: 0.10 → 1.03 GiB
  // over 60 demo steps, 1.06 GB of it the cache's blocks under heaptrack): the chart says so.
  void aCpuRunSaysWhatItsHostRamHolds() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    MemoryEvent memory;
    memory.hostRssBytes = std::uint64_t{1} << 30;
    engine.play({{0, HelloEvent{kProtocolVersion, "test", "cpu", {}}},
                 {1000, StepEvent{1, 2.0, 1e-4, 1.0, 100.0, 1, 1}},
                 {1200, memory}});
    QLabel* note = window.dashboard()->hostRamNote();
    QVERIFY(note->isVisibleTo(window.dashboard()));
    QVERIFY2(
        note->text().contains(QStringLiteral("freed tensor blocks kept for reuse (up to 4 GiB)")),
        qPrintable(note->text()));
    engine.play({{2000, HelloEvent{kProtocolVersion, "test", "hip-amd", {}}}});
    QVERIFY(!note->isVisibleTo(window.dashboard()));  // a GPU run's host RAM has no such cache
  }

  // The prompt's placeholder promises Ctrl+Return; the window's Start has the same keys.
  void ctrlReturnInThePromptGenerates() {
    app::MainWindow window(app::collectAboutFacts());
    testing::RecordingEngineClient engine;
    window.setEngine(&engine);
    engine.setConnected(true);
    window.setRunConfig({{"demo", true}});
    QVERIFY(window.startAction()->isEnabled());  // its Ctrl+Return is live too
    window.show();
    window.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&window));
    app::TryItPage* tryIt = window.tryItPage();
    window.pages()->setCurrentWidget(tryIt);
    tryIt->modelEdit()->clear();
    tryIt->promptEdit()->setPlainText(QStringLiteral("Name three colours."));
    QVERIFY(tryIt->promptEdit()->placeholderText().contains(QStringLiteral("Ctrl+Return")));
    tryIt->promptEdit()->setFocus();
    QTRY_VERIFY(tryIt->promptEdit()->hasFocus());
    QTest::keyClick(tryIt->promptEdit(), Qt::Key_Return, Qt::ControlModifier);
    // Generate ran: without a model folder it asks for one.
    QCOMPARE(tryIt->status()->text(), QStringLiteral("Choose a model folder first."));
    QCOMPARE(tryIt->promptEdit()->toPlainText(), QStringLiteral("Name three colours."));
    QVERIFY(engine.sent.empty());  // and no run started
  }

  // 128 newlines look like an empty pane: the note says what the answer is.
  void anAnswerOfBlankLinesSaysSo() {
    app::TryItPage page;
    testing::RecordingEngineClient* engine = nullptr;
    page.setEngineFactory([&engine](const QString&) {
      auto client = std::make_unique<testing::RecordingEngineClient>();
      engine = client.get();
      return client;
    });
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.modelEdit()->setText(QStringLiteral("/models/demo"));
    page.promptEdit()->setPlainText(QStringLiteral("Name three colours."));
    page.generateButton()->click();
    QVERIFY(engine != nullptr && engine->sent.size() == 1);
    const std::int64_t id = std::get<engine::GenerateCommand>(engine->sent.front()).id;
    using engine::Answer;
    engine->play({{0, engine::TokenEvent{id, Answer::Base, std::string(128, '\n')}},
                  {0, engine::AnswerEndEvent{id, Answer::Base, 128, "max-new-tokens", 50.0}},
                  {0, engine::TokenEvent{id, Answer::Adapter, "BLUE RED"}},
                  {0, engine::AnswerEndEvent{id, Answer::Adapter, 3, "eos", 50.0}},
                  {0, engine::GenerationEndEvent{id, engine::GenerationOutcome::Done, ""}}});
    QVERIFY(page.generateButton()->isEnabled());
    QVERIFY(page.baseNote()->isVisible());
    QCOMPARE(page.baseNote()->text(),
             QStringLiteral("This answer is 128 line breaks and nothing else (shown as marks)."));
    QVERIFY(page.baseAnswer()->document()->defaultTextOption().flags() &
            QTextOption::ShowLineAndParagraphSeparators);
    QVERIFY(!page.adapterNote()->isVisible());
  }

  // Help → Check this GPU on this machine: the cpu build, or no GPU.
  void checkingAMachineWithoutAGpuSaysSoFirst() {
    const widgets::AboutFacts facts = app::collectAboutFacts();
    if (facts.flavour != QLatin1String("cpu")) {
      QSKIP("a GPU build: its doctor checks the GPU this machine may have");
    }
    app::MainWindow window(facts);
    window.setEngineProgram(QString::fromStdString(lstest::trainProgram()));
    window.checkGpu();
    auto* dialog = window.findChild<app::GpuCheckDialog*>();
    QVERIFY(dialog != nullptr);
    QTRY_VERIFY_WITH_TIMEOUT(dialog->finished(), 120000);
    QVERIFY2(dialog->leadText().startsWith(
                 QStringLiteral("no GPU found: this is what runs on the CPU (")),
             qPrintable(dialog->report()));
    const QString report = dialog->report();
    QVERIFY2(report.indexOf(dialog->leadText()) < report.indexOf("LoRAscope doctor:"),
             qPrintable(report));
    QVERIFY2(!report.contains(QStringLiteral("verdict: PASS (")), qPrintable(report));
    QVERIFY2(report.contains(QStringLiteral("verdict: PASS on the CPU only (no GPU was checked)")),
             qPrintable(report));
    QVERIFY2(!dialog->statusText().contains(QStringLiteral("Every check passed")),
             qPrintable(dialog->statusText()));
    QVERIFY(dialog->statusText().startsWith(QStringLiteral("No GPU was checked")));
  }

  // The README's dashboard (the H100 recording) in a 1024×700 window with the Controls dock: every
  // chart keeps a plot that reads, its x axis and its axis titles whole.
  void theDashboardFitsAt1024By700() {
    app::MainWindow window(app::collectAboutFacts());
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openRecording(testing::fixturePath("h100_gpu_run.jsonl")).isEmpty());
    window.dashboard()->refresh();
    QTest::qWait(200);
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("controlsDock"));
    QVERIFY(dock != nullptr && dock->isVisible());
    QVERIFY2(dock->width() <= 280, qPrintable(QStringLiteral("dock %1 px").arg(dock->width())));
    for (widgets::TimeChart* chart : window.dashboard()->charts()) {
      const QChart* c = chart->view()->chart();
      const QRectF plot = c->plotArea();
      const QString where = chart->title() + QStringLiteral(": plot %1x%2 in a %3 px view")
                                                 .arg(plot.width())
                                                 .arg(plot.height())
                                                 .arg(chart->view()->height());
      QVERIFY2(plot.height() >= (chart == window.dashboard()->memoryChart() ? 100 : 60),
               qPrintable(where));
      for (const QAbstractAxis* axis : c->axes()) {
        const QFontMetrics labels(axis->labelsFont());
        if (axis->orientation() == Qt::Horizontal) {  // the tick labels below the plot, whole
          QVERIFY2(plot.bottom() + labels.height() <= chart->view()->height(), qPrintable(where));
        } else if (axis->isTitleVisible()) {  // drawn along the plot's height: not elided
          const int title = QFontMetrics(axis->titleFont()).horizontalAdvance(axis->titleText());
          QVERIFY2(plot.height() >= title,
                   qPrintable(where + QStringLiteral(", axis title '%1' needs %2 px")
                                          .arg(axis->titleText())
                                          .arg(title)));
        }
      }
    }
  }

 private:
  lstest::AppTestHome home_{QStringLiteral("test_window_incidents")};  // made before any test runs
};

QTEST_MAIN(TestWindowIncidents)
#include "test_window_incidents.moc"
