// test_event_log.cpp — the log model passes QAbstractItemModelTester, turns each event kind into
// a row with the right severity and advice, keeps a bounded number of rows, and the panel's
// filters show incidents and errors alone.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>

#include "RecordedStream.h"
#include "widgets/EventLogModel.h"
#include "widgets/EventLogPanel.h"

using namespace lorascope;
using namespace lorascope::engine;
using widgets::EventLogModel;

namespace {

QString cell(const QAbstractItemModel& model, int row, int column) {
  return model.index(row, column).data().toString();
}

}  // namespace

class TestEventLog : public QObject {
  Q_OBJECT

 private slots:
  void streamBecomesRowsThatPassTheModelTester() {
    EventLogModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const auto stream = testing::readStream("synthetic_gpu_run.jsonl");
    for (const TimedEvent& e : stream) {
      model.handleEvent(e);
    }
    const std::size_t expected = testing::eventsOfType<HelloEvent>(stream).size() +
                                 testing::eventsOfType<StateEvent>(stream).size() +
                                 testing::eventsOfType<LogEvent>(stream).size() +
                                 testing::eventsOfType<ErrorEvent>(stream).size() +
                                 testing::eventsOfType<IncidentEvent>(stream).size() +
                                 testing::eventsOfType<CheckpointEvent>(stream).size();
    QCOMPARE(model.rowCount(), static_cast<int>(expected));
    QCOMPARE(model.columnCount(), static_cast<int>(EventLogModel::ColumnCount));
    int errorRow = -1;
    int incidentRow = -1;
    for (int r = 0; r < model.rowCount(); ++r) {
      if (cell(model, r, EventLogModel::KindColumn) == "error")
        errorRow = r;
      if (cell(model, r, EventLogModel::KindColumn) == "incident")
        incidentRow = r;
    }
    QVERIFY(errorRow >= 0 && incidentRow > errorRow);
    QVERIFY(cell(model, errorRow, EventLogModel::MessageColumn)
                .contains("HIPBLAS_STATUS_INTERNAL_ERROR (op matmul(q_proj, backward))"));
    const QString tip =
        model.index(errorRow, EventLogModel::MessageColumn).data(Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains("What to try: switch the GEMM backend") && tip.contains("restarts"),
             qPrintable(tip));
    QCOMPARE(cell(model, incidentRow, EventLogModel::StepColumn), QStringLiteral("80"));
    QCOMPARE(cell(model, incidentRow, EventLogModel::TimeColumn), QStringLiteral("0:40"));
    QCOMPARE(model.index(incidentRow, 0).data(EventLogModel::SeverityRole).toInt(),
             static_cast<int>(EventLogModel::Incident));
  }

  void aRefusedToggleIsInformationNotAnError() {
    EventLogModel model;
    model.handleEvent({5, ToggleRefusedEvent{Toggle::CpuFallback, false,
                                             "no usable GPU (this is the cpu build)", 3}});
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, 0).data(EventLogModel::SeverityRole).toInt(),
             static_cast<int>(EventLogModel::Info));
    QCOMPARE(cell(model, 0, EventLogModel::KindColumn), QStringLiteral("toggle"));
    QCOMPARE(cell(model, 0, EventLogModel::MessageColumn),
             QStringLiteral("CPU fallback → off not applied: no usable GPU (this is the cpu "
                            "build)"));
  }

  void keepsTheNewestRowsWithinItsBound() {
    EventLogModel model(nullptr, 200);  // the tester's checks are O(rows) per insert
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (int i = 0; i < 205; ++i) {
      model.handleEvent({i, LogEvent{LogLevel::Info, "line " + std::to_string(i)}});
    }
    QCOMPARE(model.rowCount(), 195);  // 200, then the oldest 10 dropped, then 5 more
    QCOMPARE(cell(model, 0, EventLogModel::MessageColumn), QStringLiteral("line 10"));
    QCOMPARE(cell(model, model.rowCount() - 1, EventLogModel::MessageColumn),
             QStringLiteral("line 204"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  void panelFiltersBySeverityAndText() {
    EventLogModel model;
    widgets::EventLogPanel panel(&model);
    for (const TimedEvent& e : testing::readStream("synthetic_gpu_run.jsonl")) {
      model.handleEvent(e);
    }
    panel.setFilter(widgets::EventLogPanel::IncidentsAndErrors);
    QCOMPARE(panel.proxy()->rowCount(), 2);  // the BLAS error and the incident it caused
    panel.setFilter(widgets::EventLogPanel::WarningsAndAbove);
    QCOMPARE(panel.proxy()->rowCount(), 3);
    panel.setFilter(widgets::EventLogPanel::Everything);
    panel.setSearchText("built-in gemm");
    QCOMPARE(panel.proxy()->rowCount(), 2);  // the incident's action and the warning
  }
};

QTEST_MAIN(TestEventLog)
#include "test_event_log.moc"
