// widgets/MemoryMapPanel.cpp — toolbar, legend, live refresh, save and reopen of snapshots.
#include "widgets/MemoryMapPanel.h"

#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QScrollArea>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>
#include <stdexcept>

#include "common/DurableFile.h"
#include "widgets/DisplayText.h"

namespace lorascope::widgets {

using namespace lorascope::engine;

MemoryMapPanel::MemoryMapPanel(QWidget* parent) : QWidget(parent) {
  auto* toolbar = new QToolBar(this);
  toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  freeze_ = toolbar->addAction(tr("&Freeze"));
  freeze_->setCheckable(true);
  freeze_->setToolTip(tr("Keep showing this snapshot; live snapshots are not requested"));
  connect(freeze_, &QAction::toggled, this, &MemoryMapPanel::setFrozen);
  QAction* zoomIn = toolbar->addAction(tr("Zoom in"));
  zoomIn->setShortcut(QKeySequence::ZoomIn);
  zoomIn->setToolTip(tr("Twice as wide (Ctrl+wheel); double-click a block to zoom to it"));
  QAction* zoomOut = toolbar->addAction(tr("Zoom out"));
  zoomOut->setShortcut(QKeySequence::ZoomOut);
  QAction* fit = toolbar->addAction(tr("Fit"));
  fit->setToolTip(tr("Show the whole snapshot"));
  toolbar->addSeparator();
  save_ = toolbar->addAction(tr("Save snapshot…"));
  save_->setToolTip(tr("Save the snapshot shown as JSON (PyTorch's snapshot field names)"));
  save_->setEnabled(false);
  open_ = toolbar->addAction(tr("Open snapshot…"));
  open_->setToolTip(tr("Show a snapshot saved earlier (the page freezes)"));
  connect(save_, &QAction::triggered, this, &MemoryMapPanel::saveWithDialog);
  connect(open_, &QAction::triggered, this, &MemoryMapPanel::openWithDialog);
  cardLabel_ = new QLabel(tr("Card:"), this);
  cardSelector_ = new QComboBox(this);
  cardSelector_->setObjectName(QStringLiteral("memoryMapCardSelector"));
  cardSelector_->setToolTip(
      tr("This run trains on several GPUs, each with its own allocator: the map shows the chosen "
         "GPU's snapshot"));
  cardSelector_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  cardLabel_->setBuddy(cardSelector_);
  connect(cardSelector_, &QComboBox::activated, this,
          [this](int index) { showCard(cardSelector_->itemData(index).toInt()); });
  showCardSelector(false);  // until a second card has sent a snapshot

  summary_ = new QLabel(tr("No snapshot yet: one is taken every %1 s while a run is active, or "
                           "open a saved one.")
                            .arg(kRefreshIntervalMs / 1000),
                        this);
  summary_->setObjectName(QStringLiteral("memoryMapSummary"));
  summary_->setWordWrap(true);

  auto* legend = new QGridLayout;
  for (int k = 0; k < kBlockKindCount; ++k) {
    auto* label = new QLabel(this);
    label->setTextFormat(Qt::RichText);
    label->setWordWrap(true);  // "activations 0 B live · 4.40 GiB cached in 188 free segments"
    legend_[static_cast<std::size_t>(k)] = label;
    legend->addWidget(label, k / 3,
                      k % 3);  // three columns: the page fits beside the dock at 1024 px
  }

  timeline_ = new AllocationTimeline(this);
  timeline_->setObjectName(QStringLiteral("allocationTimeline"));
  timelineNote_ = new QLabel(timeline_->summaryText(), this);
  timelineNote_->setObjectName(QStringLiteral("allocationTimelineNote"));
  timelineNote_->setWordWrap(true);
  timelineNote_->setVisible(false);  // the empty plot says the same

  view_ = new MemoryMapView;
  scroll_ = new QScrollArea(this);
  scroll_->setObjectName(QStringLiteral("memoryMapScroll"));  // zoomed maps scroll both ways
  scroll_->setWidget(view_);
  scroll_->setWidgetResizable(true);
  connect(zoomIn, &QAction::triggered, view_, &MemoryMapView::zoomIn);
  connect(zoomOut, &QAction::triggered, view_, &MemoryMapView::zoomOut);
  connect(fit, &QAction::triggered, view_, [this] { view_->setZoomLevel(0); });
  connect(view_, &MemoryMapView::blockActivated, this, &MemoryMapPanel::zoomToBlock);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(toolbar);
  auto* cardAndSummary = new QHBoxLayout;  // the card beside what its snapshot holds
  cardAndSummary->addWidget(cardLabel_);
  cardAndSummary->addWidget(cardSelector_);
  cardAndSummary->addWidget(summary_, 1);
  layout->addLayout(cardAndSummary);
  layout->addLayout(legend);
  layout->addWidget(timeline_);
  layout->addWidget(timelineNote_);
  layout->addWidget(scroll_, 1);

  refreshTimer_.setInterval(kRefreshIntervalMs);
  connect(&refreshTimer_, &QTimer::timeout, this, &MemoryMapPanel::requestSnapshotIfLive);
  refreshTimer_.start();
  updateLegend();
}

void MemoryMapPanel::updateLegend() {
  const auto bytes = view_->snapshot().bytesByKind();
  const std::uint64_t total = view_->snapshot().totalBytes();
  for (int k = 0; k < kBlockKindCount; ++k) {
    const auto kind = static_cast<BlockKind>(k);
    QLabel* label = legend_[static_cast<std::size_t>(k)];
    label->setText(QStringLiteral("<span style='color:%1'>&#9632;</span> %2")
                       .arg(blockKindColor(kind).name(), legendText(kind).toHtmlEscaped()));
    label->setToolTip(
        hasSnapshot_ ? tr("%1 of %2")
                           .arg(formatBytes(bytes[static_cast<std::size_t>(k)]), formatBytes(total))
                     : QString());
  }
}

bool MemoryMapPanel::isFrozen() const {
  return freeze_->isChecked();
}

void MemoryMapPanel::setFrozen(bool frozen) {
  freeze_->setChecked(frozen);  // re-enters through toggled() only when it changes
}

void MemoryMapPanel::requestSnapshotIfLive() {
  // A CPU run has no device allocator: the engine would only refuse.
  if (runActive_ && !runOnCpu_ && !isFrozen() && isVisible()) {
    emit commandRequested(RequestSnapshotCommand{});
  }
}

void MemoryMapPanel::handleEvent(const TimedEvent& timed) {
  if (const auto* state = std::get_if<StateEvent>(&timed.event)) {
    runActive_ = state->state == RunState::Running || state->state == RunState::Paused;
    if (state->state == RunState::Starting && !isFrozen()) {
      forgetCards();  // a new run (or its restart, perhaps on fewer GPUs): its cards come anew
    }
  } else if (const auto* hello = std::get_if<HelloEvent>(&timed.event)) {
    setRunOnCpu(hello->flavour == "cpu");
  } else if (const auto* applied = std::get_if<ToggleAppliedEvent>(&timed.event)) {
    if (applied->toggle == Toggle::CpuFallback && applied->value.is_boolean()) {
      setRunOnCpu(applied->value.get<bool>());  // where the run computes now
    }
  } else if (const auto* snap = std::get_if<SnapshotEvent>(&timed.event)) {
    if (isFrozen()) {
      return;
    }
    try {
      MemorySnapshot snapshot = parseMemorySnapshot(snap->snapshot);
      if (!cardsAreLive_) {
        forgetCards();  // a recording's or a file's, shown frozen until now
        cardsAreLive_ = true;
      }
      take(std::move(snapshot), snap->card, tr("live, at %1").arg(formatTimeMs(timed.timeMs)));
    } catch (const SnapshotError& e) {
      summary_->setText(tr("The engine sent a snapshot this version cannot read: %1")
                            .arg(QString::fromUtf8(e.what())));
    }
  }
}

void MemoryMapPanel::setRunOnCpu(bool onCpu) {
  runOnCpu_ = onCpu;
  if (!hasSnapshot_) {
    summary_->setText(
        onCpu ? tr("This run computes on the CPU, which has no device allocator: the memory map "
                   "shows a GPU allocator's segments and blocks. Open a saved snapshot to view "
                   "one.")
              : tr("No snapshot yet: one is taken every %1 s while a run is active, or open a "
                   "saved one.")
                    .arg(kRefreshIntervalMs / 1000));
  }
}

void MemoryMapPanel::take(MemorySnapshot snapshot, std::optional<int> card, const QString& source) {
  if (!card) {
    forgetCards();  // one device's
    display(std::move(snapshot), source);
    return;
  }
  if (!shownCard_) {
    shownCard_ = *card;
  }
  if (cardSelector_->findData(*card) < 0) {
    cardSelector_->addItem(cardName(*card), *card);
    cardSelector_->setCurrentIndex(cardSelector_->findData(*shownCard_));
    showCardSelector(cardSelector_->count() > 1);
  }
  Shown& shown = cards_[*card];
  shown = Shown{std::move(snapshot), tr("%1, %2").arg(cardName(*card), source)};
  if (*card == *shownCard_) {
    display(shown.snapshot, shown.source);
  }
}

void MemoryMapPanel::showCard(int card) {
  const auto shown = cards_.find(card);
  if (shown == cards_.end()) {
    return;
  }
  shownCard_ = card;
  cardSelector_->setCurrentIndex(cardSelector_->findData(card));
  display(shown->second.snapshot, shown->second.source);
}

void MemoryMapPanel::showCardSelector(bool show) {
  cardLabel_->setVisible(show);
  cardSelector_->setVisible(show);
}

void MemoryMapPanel::forgetCards() {
  cards_.clear();
  shownCard_.reset();
  cardSelector_->clear();
  showCardSelector(false);
}

void MemoryMapPanel::display(MemorySnapshot snapshot, const QString& source) {
  summary_->setText(tr("%1 segments, %2 blocks, %3 reserved (%4)")
                        .arg(snapshot.segments.size())
                        .arg(snapshot.blockCount())
                        .arg(formatBytes(snapshot.totalBytes()), source));
  source_ = source;
  timeline_->setSnapshot(snapshot);
  timelineNote_->setText(timeline_->summaryText());
  timelineNote_->setVisible(timeline_->hasTrace());  // without one the plot says why
  view_->setSnapshot(std::move(snapshot));
  hasSnapshot_ = true;
  save_->setEnabled(true);
  updateLegend();
}

void MemoryMapPanel::clearSnapshot(const QString& why) {
  forgetCards();
  summary_->setText(why);
  source_.clear();
  timeline_->clear();
  timelineNote_->setVisible(false);
  view_->setSnapshot({});
  hasSnapshot_ = false;
  save_->setEnabled(false);
  setFrozen(false);  // live snapshots may come again
  updateLegend();
}

QRectF MemoryMapPanel::zoomToBlock(MemoryMapView::BlockRef ref) {
  const QRectF rect = view_->zoomToBlock(ref);
  scroll_->widget()->adjustSize();
  scroll_->ensureVisible(static_cast<int>(rect.center().x()), static_cast<int>(rect.center().y()),
                         static_cast<int>(rect.width() / 2) + 40, 40);
  return rect;
}

QString MemoryMapPanel::summaryText() const {
  return summary_->text();
}

QString MemoryMapPanel::legendText(BlockKind kind) const {
  if (!hasSnapshot_) {
    return blockKindName(kind);
  }
  const auto bytes = view_->snapshot().bytesByKind();
  const QString live = QStringLiteral("%1 %2").arg(
      blockKindName(kind), formatBytes(bytes[static_cast<std::size_t>(kind)]));
  // An owner whose freed blocks the allocator keeps: "activations 0 B" alone would hide GiBs.
  const MemorySnapshot::Cached cached =
      view_->snapshot().cachedByOwner()[static_cast<std::size_t>(kind)];
  if (cached.segments == 0) {
    return live;
  }
  if (cached.segments == 1) {
    return tr("%1 live · %2 cached in 1 free segment").arg(live, formatBytes(cached.bytes));
  }
  return tr("%1 live · %2 cached in %3 free segments")
      .arg(live, formatBytes(cached.bytes), QString::number(cached.segments));
}

QString MemoryMapPanel::saveSnapshot(const QString& path) const {
  if (!hasSnapshot_) {
    return tr("there is no snapshot to save");
  }
  try {
    common::writeFileDurably(toPath(path), view_->snapshot().raw.dump(1) + "\n");
  } catch (const std::runtime_error& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

QString MemoryMapPanel::openSnapshot(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) {
    return file.errorString();
  }
  const QByteArray bytes = file.readAll();
  try {
    return showSnapshot(nlohmann::json::parse(bytes.constBegin(), bytes.constEnd()),
                        tr("from %1").arg(path));
  } catch (const nlohmann::json::exception& e) {
    return tr("not valid JSON: %1").arg(QString::fromUtf8(e.what()));
  }
}

QString MemoryMapPanel::showSnapshot(const nlohmann::json& document, const QString& source) {
  return showSnapshots({SnapshotEvent{document}}, source);
}

QString MemoryMapPanel::showSnapshots(const std::vector<SnapshotEvent>& snapshots,
                                      const QString& source) {
  // What stays shown once they have arrived one after the other (take): the last of each card,
  // in the order the cards were first heard from, or the last one when it names no card.
  std::vector<const SnapshotEvent*> kept;
  for (const SnapshotEvent& event : snapshots) {
    const auto same = std::find_if(kept.begin(), kept.end(),
                                   [&](const SnapshotEvent* k) { return k->card == event.card; });
    if (!event.card || (!kept.empty() && !kept.front()->card)) {
      kept.assign(1, &event);
    } else if (same != kept.end()) {
      *same = &event;
    } else {
      kept.push_back(&event);
    }
  }
  std::vector<MemorySnapshot> parsed;
  for (const SnapshotEvent* event : kept) {
    // All are read before any is shown: one that cannot be leaves the page as it was.
    try {
      parsed.push_back(parseMemorySnapshot(event->snapshot));
    } catch (const nlohmann::json::exception& e) {
      return tr("not a snapshot: %1").arg(QString::fromUtf8(e.what()));
    } catch (const SnapshotError& e) {
      return event->card
                 ? tr("%1's snapshot: %2").arg(cardName(*event->card), QString::fromUtf8(e.what()))
                 : QString::fromUtf8(e.what());
    }
  }
  forgetCards();
  cardsAreLive_ = false;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    take(std::move(parsed[i]), kept[i]->card, source);
  }
  setFrozen(true);
  return {};
}

void MemoryMapPanel::saveWithDialog() {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Save memory snapshot"),
                                   QStringLiteral("memory-snapshot.json"), tr("JSON (*.json)"));
  if (path.isEmpty()) {
    return;
  }
  if (const QString error = saveSnapshot(path); !error.isEmpty()) {
    QMessageBox::warning(this, tr("Save memory snapshot"),
                         tr("Could not save %1: %2").arg(path, error));
  }
}

void MemoryMapPanel::openWithDialog() {
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open memory snapshot"), {}, tr("JSON (*.json)"));
  if (path.isEmpty()) {
    return;
  }
  if (const QString error = openSnapshot(path); !error.isEmpty()) {
    QMessageBox::warning(this, tr("Open memory snapshot"),
                         tr("Could not open %1: %2").arg(path, error));
  }
}

}  // namespace lorascope::widgets
