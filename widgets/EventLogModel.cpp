// widgets/EventLogModel.cpp — events → rows.
#include "widgets/EventLogModel.h"

#include <QBrush>
#include <QColor>
#include <algorithm>
#include <type_traits>

#include "widgets/DisplayText.h"

namespace lorascope::widgets {

using namespace lorascope::engine;

EventLogModel::EventLogModel(QObject* parent, int maxRows)
    : QAbstractTableModel(parent), maxRows_(std::max(1, maxRows)) {}

int EventLogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(entries_.size());
}

int EventLogModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
    return {};
  }
  switch (section) {
    case TimeColumn:
      return tr("Time");
    case KindColumn:
      return tr("Kind");
    case StepColumn:
      return tr("Step");
    case MessageColumn:
      return tr("Message");
    default:
      return {};
  }
}

QVariant EventLogModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
    return {};
  }
  const Entry& e = entries_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case TimeColumn:
          return formatTimeMs(e.timeMs);
        case KindColumn:
          return e.kind;
        case StepColumn:
          return e.step ? QVariant(static_cast<qlonglong>(*e.step)) : QVariant();
        case MessageColumn:
          return e.message;
        default:
          return {};
      }
    case Qt::ToolTipRole:
      return e.detail.isEmpty() ? e.message : e.message + QStringLiteral("\n\n") + e.detail;
    case Qt::ForegroundRole:
      if (e.severity >= Error) {
        return QBrush(QColor(0xc6, 0x28, 0x28));
      }
      if (e.severity == Warning) {
        return QBrush(QColor(0xa1, 0x5c, 0x00));
      }
      return {};
    case SeverityRole:
      return static_cast<int>(e.severity);
    default:
      return {};
  }
}

void EventLogModel::addRecording(const QString& name, const std::vector<TimedEvent>& events) {
  recording_ = name;
  for (const TimedEvent& e : events) {
    handleEvent(e);
  }
  recording_.clear();
}

void EventLogModel::append(Entry entry) {
  if (!recording_.isEmpty()) {
    entry.message = QStringLiteral("[%1] %2").arg(recording_, entry.message);
  }
  if (entries_.size() >= static_cast<std::size_t>(maxRows_)) {
    const int drop = std::max(1, maxRows_ / 20);
    beginRemoveRows({}, 0, drop - 1);
    entries_.erase(entries_.begin(), entries_.begin() + drop);
    endRemoveRows();
  }
  const int row = static_cast<int>(entries_.size());
  beginInsertRows({}, row, row);
  entries_.push_back(std::move(entry));
  endInsertRows();
}

void EventLogModel::clear() {
  beginResetModel();
  entries_.clear();
  endResetModel();
}

void EventLogModel::handleEvent(const TimedEvent& timed) {
  const auto text = [](const std::string& s) { return QString::fromStdString(s); };
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, LogEvent>) {
          static const Severity kSeverity[] = {Debug, Info, Warning, Error};
          append({timed.timeMs,
                  kSeverity[static_cast<int>(e.level)],
                  QString::fromLatin1(toString(e.level)),
                  std::nullopt,
                  text(e.text),
                  {}});
        } else if constexpr (std::is_same_v<T, ErrorEvent>) {
          QString message = text(e.category) + QStringLiteral(": ") + text(e.message);
          if (!e.op.empty()) {
            message += tr(" (op %1)").arg(text(e.op));
          }
          QString detail = e.advice.empty() ? QString() : tr("What to try: %1").arg(text(e.advice));
          if (e.sticky) {
            detail += tr("\nThe GPU context is unusable: the engine restarts.");
          }
          append({timed.timeMs, Error, tr("error"), std::nullopt, message, detail.trimmed()});
        } else if constexpr (std::is_same_v<T, IncidentEvent>) {
          append({timed.timeMs,
                  Incident,
                  tr("incident"),
                  e.step,
                  text(e.what) + QStringLiteral(" → ") + text(e.action),
                  {}});
        } else if constexpr (std::is_same_v<T, CheckpointEvent>) {
          append(
              {timed.timeMs, Info, tr("checkpoint"), e.step, tr("saved %1").arg(text(e.path)), {}});
        } else if constexpr (std::is_same_v<T, EvalEvent>) {
          append({timed.timeMs,
                  Info,
                  tr("eval"),
                  e.step,
                  tr("eval loss %1 over %2 held-out tokens (best %3 at step %4)")
                      .arg(e.loss, 0, 'f', 4)
                      .arg(e.predictedTokens)
                      .arg(e.bestLoss, 0, 'f', 4)
                      .arg(e.bestStep),
                  {}});
        } else if constexpr (std::is_same_v<T, ToggleAppliedEvent>) {
          const auto known = toggles_.find(e.toggle);
          const bool change = known != toggles_.end() && known->second != e.value;
          if (change) {
            append({timed.timeMs, Info, tr("toggle"), e.step,
                    tr("%1 %2 → %3 from step %4")
                        .arg(toggleName(e.toggle), toggleValueText(known->second),
                             toggleValueText(e.value))
                        .arg(e.step + 1),
                    text(e.detail)});
          }
          toggles_[e.toggle] = e.value;
        } else if constexpr (std::is_same_v<T, StateEvent>) {
          if (e.state == RunState::Starting) {
            toggles_.clear();  // a new run (or a resumed one) reports its start state again
          }
          const QString state = QString::fromLatin1(toString(e.state));
          append({timed.timeMs,
                  e.state == RunState::Failed ? Error : Info,
                  tr("state"),
                  e.step,
                  e.detail.empty() ? state : state + QStringLiteral(": ") + text(e.detail),
                  {}});
        } else if constexpr (std::is_same_v<T, ToggleRefusedEvent>) {
          // A declined request, not an error: the run goes on as it was.
          const QString value = toggleValueText(e.value);
          append({timed.timeMs, Info, tr("toggle"), e.step,
                  tr("%1 → %2 not applied: %3").arg(toggleName(e.toggle), value, text(e.reason)),
                  tr("The engine kept the value in effect.")});
        } else if constexpr (std::is_same_v<T, ProfileSwitchEvent>) {
          append({timed.timeMs,
                  Info,
                  tr("profile"),
                  e.step,
                  tr("switched to profile “%1”: %2").arg(text(e.name), text(e.detail)),
                  {}});
        } else if constexpr (std::is_same_v<T, LadderEvent>) {
          append(
              {timed.timeMs, Warning, tr("ladder"), e.step,
               tr("recovery: the run uses %1 (it used %2): %3")
                   .arg(rungText(e.rung), rungText(e.from), text(e.why)),
               e.undoable > 0 ? tr("Controls → Recovery ladder → Undo steps back.") : QString()});
        } else if constexpr (std::is_same_v<T, HelloEvent>) {
          append({timed.timeMs,
                  Info,
                  tr("engine"),
                  std::nullopt,
                  tr("LoRAscope engine %1 (%2 build), protocol %3")
                      .arg(text(e.version), text(e.flavour))
                      .arg(e.protocolVersion),
                  {}});
        }
      },
      timed.event);
}

}  // namespace lorascope::widgets
