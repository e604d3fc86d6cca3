// widgets/EventLogPanel.cpp — filter by severity and text, follow the tail.
#include "widgets/EventLogPanel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "widgets/EventLogModel.h"

namespace lorascope::widgets {
namespace {

// Rows at or above a severity whose message contains the search text.
class SeverityFilter : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setMinimum(int severity) {
    minimum_ = severity;
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    const QModelIndex index = sourceModel()->index(row, EventLogModel::MessageColumn, parent);
    if (index.data(EventLogModel::SeverityRole).toInt() < minimum_) {
      return false;
    }
    return QSortFilterProxyModel::filterAcceptsRow(row, parent);
  }

 private:
  int minimum_ = EventLogModel::Debug;
};

}  // namespace

EventLogPanel::EventLogPanel(EventLogModel* model, QWidget* parent)
    : QWidget(parent), model_(model) {
  auto* proxy = new SeverityFilter(this);
  proxy_ = proxy;
  proxy_->setSourceModel(model_);
  proxy_->setFilterKeyColumn(EventLogModel::MessageColumn);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);

  filter_ = new QComboBox(this);
  filter_->addItems({tr("Everything"), tr("Warnings and above"), tr("Incidents and errors")});
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search messages"));
  search_->setClearButtonEnabled(true);
  connect(filter_, &QComboBox::currentIndexChanged, this,
          [this](int index) { setFilter(static_cast<Filter>(index)); });
  connect(search_, &QLineEdit::textChanged, this, &EventLogPanel::setSearchText);

  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setWordWrap(false);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(EventLogModel::TimeColumn, 70);
  table_->setColumnWidth(EventLogModel::KindColumn, 90);
  table_->setColumnWidth(EventLogModel::StepColumn, 60);

  connect(proxy_, &QAbstractItemModel::rowsAboutToBeInserted, this, [this] {
    QScrollBar* bar = table_->verticalScrollBar();
    table_->setProperty("follow", bar->value() == bar->maximum());
  });
  connect(proxy_, &QAbstractItemModel::rowsInserted, this, [this] {
    if (table_->property("follow").toBool()) {
      table_->scrollToBottom();
    }
  });

  auto* bar = new QHBoxLayout;
  bar->addWidget(filter_);
  bar->addWidget(search_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(table_, 1);
}

void EventLogPanel::setFilter(Filter filter) {
  static const int kMinimum[] = {EventLogModel::Debug, EventLogModel::Warning,
                                 EventLogModel::Error};
  static_cast<SeverityFilter*>(proxy_)->setMinimum(kMinimum[filter]);
  if (filter_->currentIndex() != filter) {
    filter_->setCurrentIndex(filter);
  }
}

void EventLogPanel::setSearchText(const QString& text) {
  proxy_->setFilterFixedString(text);
  if (search_->text() != text) {
    search_->setText(text);
  }
}

}  // namespace lorascope::widgets
