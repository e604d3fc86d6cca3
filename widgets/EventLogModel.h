// widgets/EventLogModel.h — the run's log as a table: log lines, errors (with their advice),
// incidents (what happened and what the supervisor did), checkpoints, run-state changes and
// toggles the engine changed (a row per change of value) or declined (information, not errors).
// Keeps the newest kMaxRows rows; older ones are dropped in chunks.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <deque>
#include <map>
#include <vector>

#include "widgets/EngineTypes.h"

namespace lorascope::widgets {

class EventLogModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { TimeColumn, KindColumn, StepColumn, MessageColumn, ColumnCount };
  // Severity order: a filter for "warnings and above" is `SeverityRole >= Warning`.
  enum Severity { Debug, Info, Warning, Error, Incident };
  enum Role { SeverityRole = Qt::UserRole + 1 };
  static constexpr int kMaxRows = 20000;

  // Keeps the newest maxRows rows, dropping the oldest 5 % at a time.
  explicit EventLogModel(QObject* parent = nullptr, int maxRows = kMaxRows);
  int maxRows() const { return maxRows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 public slots:
  void handleEvent(const lorascope::engine::TimedEvent& event);
  // The rows of a recording shown in the window (Runs → Open recording…): its log lines,
  // errors, incidents, ..., each message starting with "[name] " (their times are the
  // recording's clock).
  void addRecording(const QString& name, const std::vector<lorascope::engine::TimedEvent>& events);
  void clear();

 private:
  struct Entry {
    std::int64_t timeMs = 0;
    Severity severity = Info;
    QString kind;
    std::optional<std::int64_t> step;
    QString message;
    QString detail;  // tooltip: advice, the supervisor's action
  };
  void append(Entry entry);

  std::deque<Entry> entries_;
  // The toggles' values in the run in progress: a toggle whose value changes gets a row (the
  // first report of each is the state the run starts with).
  std::map<engine::Toggle, nlohmann::json> toggles_;
  int maxRows_;
  QString recording_;  // while addRecording() runs: the recording's name
};

}  // namespace lorascope::widgets
