// widgets/EventLogPanel.h — the incidents and log page: the EventLogModel in a table with a
// severity filter and a text search; it follows new rows while scrolled to the bottom.
#pragma once

#include <QWidget>

class QComboBox;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace lorascope::widgets {

class EventLogModel;

class EventLogPanel : public QWidget {
  Q_OBJECT

 public:
  enum Filter { Everything, WarningsAndAbove, IncidentsAndErrors };

  EventLogPanel(EventLogModel* model, QWidget* parent = nullptr);

  void setFilter(Filter filter);
  void setSearchText(const QString& text);
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }

 private:
  EventLogModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QComboBox* filter_;
  QLineEdit* search_;
};

}  // namespace lorascope::widgets
