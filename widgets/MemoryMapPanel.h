// widgets/MemoryMapPanel.h — the memory-map page: the map (segments grouped by owner), the
// allocation timeline of the snapshot's trace, a legend with bytes per owner, a summary line, and
// the actions freeze, zoom (double-click: to one block), save snapshot and open snapshot.
//
// While a run is active, the page is visible and not frozen, it asks the engine for a snapshot
// every kRefreshIntervalMs (a snapshot walks every block, so the rate stays modest). A run on the
// CPU has no device allocator: the page says so and asks for nothing. Opening a
// saved snapshot freezes the page so that live snapshots do not replace it.
//
// A run on several GPUs answers each request with one snapshot per card (engine/Supervisor.h:
// every rank's, tagged with its GPU): the page keeps the newest of each card and shows a card
// selector beside the summary line (hidden while one card or none has sent one), on the first card
// heard from until another is chosen. A frozen page keeps every card's snapshot as it was, so the
// cards compare at one moment. The cards are forgotten when a new run starts (unless frozen), when
// a snapshot without a card (a run on one device) arrives, and when a recording or saved snapshot
// is shown; a recording shows the last snapshot of each card it holds, and the first live snapshot
// after it (once unfrozen) replaces all of its cards.
#pragma once

#include <QString>
#include <QTimer>
#include <QWidget>
#include <array>
#include <map>
#include <optional>
#include <vector>

#include "widgets/AllocationTimeline.h"
#include "widgets/EngineTypes.h"
#include "widgets/MemoryMapView.h"

class QAction;
class QComboBox;
class QLabel;
class QScrollArea;

namespace lorascope::widgets {

class MemoryMapPanel : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRefreshIntervalMs = 2000;

  explicit MemoryMapPanel(QWidget* parent = nullptr);

  MemoryMapView* view() const { return view_; }
  AllocationTimeline* timeline() const { return timeline_; }
  // Zooms the map until the block is wide enough to point at and scrolls it into view; returns
  // its rectangle in the map.
  QRectF zoomToBlock(MemoryMapView::BlockRef ref);
  bool isFrozen() const;
  bool hasSnapshot() const { return hasSnapshot_; }
  QString summaryText() const;
  QString legendText(BlockKind kind) const;

  // Writes the snapshot shown, as JSON; returns "" or the reason it failed.
  QString saveSnapshot(const QString& path) const;
  // Reads a snapshot saved earlier and shows it frozen; returns "" or the reason it failed.
  QString openSnapshot(const QString& path);
  // Shows a snapshot (the allocator's JSON) frozen, labelled with where it came from ("from the
  // recording …"); returns "" or the reason it cannot be shown.
  QString showSnapshot(const nlohmann::json& snapshot, const QString& source);
  // Shows a recording's snapshots frozen, in the order recorded: the last one of each card (or the
  // last one, when it names no card); returns "" or the reason one cannot be shown.
  QString showSnapshots(const std::vector<engine::SnapshotEvent>& snapshots, const QString& source);
  // Shows no snapshot, saying `why` (another recording is shown, one that holds none); unfreezes.
  void clearSnapshot(const QString& why);

  QAction* freezeAction() const { return freeze_; }
  QAction* saveAction() const { return save_; }
  QAction* openAction() const { return open_; }
  // The cards whose snapshots the page holds (hidden for fewer than two), and the one shown.
  QComboBox* cardSelector() const { return cardSelector_; }
  std::optional<int> shownCard() const { return shownCard_; }

 public slots:
  void handleEvent(const lorascope::engine::TimedEvent& event);
  void setFrozen(bool frozen);

 signals:
  void commandRequested(const lorascope::engine::Command& command);

 private slots:
  void requestSnapshotIfLive();
  void saveWithDialog();
  void openWithDialog();

 private:
  // Where a snapshot came from and what it holds, parsed.
  struct Shown {
    MemorySnapshot snapshot;
    QString source;
  };
  // Shows a snapshot without a card (one device's), or files one under its card, shown when it is
  // the card shown.
  void take(MemorySnapshot snapshot, std::optional<int> card, const QString& source);
  void showCard(int card);
  void showCardSelector(bool show);  // the label and the selector
  void forgetCards();
  void display(MemorySnapshot snapshot, const QString& source);
  void updateLegend();
  void setRunOnCpu(bool onCpu);

  MemoryMapView* view_;
  AllocationTimeline* timeline_;
  QLabel* timelineNote_;
  QScrollArea* scroll_;
  QLabel* summary_;
  std::array<QLabel*, kBlockKindCount> legend_{};
  QAction* freeze_;
  QAction* save_;
  QAction* open_;
  QLabel* cardLabel_;
  QComboBox* cardSelector_;
  std::map<int, Shown> cards_;    // the newest snapshot of each card; empty for one device
  std::optional<int> shownCard_;  // none: the first card heard from is shown
  bool cardsAreLive_ = true;      // false: the cards are a recording's, live ones replace them
  QString source_;
  bool hasSnapshot_ = false;
  bool runActive_ = false;
  bool runOnCpu_ = false;
  QTimer refreshTimer_;
};

}  // namespace lorascope::widgets
