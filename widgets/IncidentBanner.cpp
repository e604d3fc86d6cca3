// widgets/IncidentBanner.cpp — the incident entries as rich text in a tinted frame.
#include "widgets/IncidentBanner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QTextDocument>
#include <QToolButton>
#include <algorithm>

#include "widgets/ChartMarker.h"  // defines: markerColor

namespace lorascope::widgets {

IncidentBanner::IncidentBanner(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("incidentBanner"));
  // The incident markers' red, faint behind the text: it reads on light and dark palettes.
  const QColor red = markerColor(MarkerKind::Incident);
  setStyleSheet(QStringLiteral("QFrame#incidentBanner { background: rgba(%1, %2, %3, 36); "
                               "border-left: 4px solid %4; }")
                    .arg(red.red())
                    .arg(red.green())
                    .arg(red.blue())
                    .arg(red.name()));
  text_ = new QLabel(this);
  text_->setObjectName(QStringLiteral("incidentBannerText"));
  text_->setTextFormat(Qt::RichText);
  text_->setWordWrap(true);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  dismiss_ = new QToolButton(this);
  dismiss_->setText(tr("Dismiss"));
  dismiss_->setToolTip(tr("Hide until the next incident; Log and incidents keeps them all"));
  connect(dismiss_, &QToolButton::clicked, this, &QWidget::hide);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(8, 4, 4, 4);
  layout->addWidget(text_, 1);
  layout->addWidget(dismiss_, 0, Qt::AlignTop);
  hide();
}

void IncidentBanner::add(Entry entry) {
  entries_.push_back(std::move(entry));
  relabel();
  show();
}

void IncidentBanner::clear() {
  entries_.clear();
  text_->clear();
  hide();
}

void IncidentBanner::relabel() {
  QStringList lines;
  const int first = std::max(0, count() - kShown);
  if (first > 0) {
    lines << (first == 1 ? tr("1 earlier incident or refusal: Log and incidents lists it.")
                         : tr("%1 earlier incidents and refusals: Log and incidents lists them "
                              "all.")
                               .arg(first));
  }
  for (int i = first; i < count(); ++i) {
    const Entry& e = entries_[static_cast<std::size_t>(i)];
    const QString mark = e.severity == Severity::Incident ? QStringLiteral("&#9888;")   // ⚠
                                                          : QStringLiteral("&#8856;");  // ⊘
    lines << QStringLiteral("%1 <b>%2</b><br>%3")
                 .arg(mark, e.headline.toHtmlEscaped(), e.detail.toHtmlEscaped());
  }
  text_->setText(lines.join(QStringLiteral("<br>")));
}

QString IncidentBanner::shownText() const {
  if (!isVisibleTo(parentWidget())) {
    return {};
  }
  QTextDocument document;
  document.setHtml(text_->text());
  return document.toPlainText();
}

}  // namespace lorascope::widgets
