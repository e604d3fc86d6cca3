// widgets/AllocationTimeline.h — the allocator's last allocations and frees over time: live bytes
// stacked by owner, and the reserved bytes above them (the gap is the cache: freed blocks kept
// for reuse). What PyTorch's memory viewer draws offline from a snapshot's "device_traces", here
// from the snapshot the memory map shows.
//
// The x axis counts trace events (allocations, frees, segment changes), not seconds: the host time
// between steps, when nothing is allocated, takes no room. Step boundaries are marked and
// labelled. Levels are absolute: the snapshot's live bytes per owner and its reserved bytes are the
// state after the last event, and the trace is walked back from there. Drawing takes, per pixel
// column, the event with the most live bytes, so a step's peak is never averaged away.
#pragma once

#include <QString>
#include <QWidget>
#include <array>
#include <cstdint>
#include <vector>

#include "widgets/MemorySnapshot.h"

namespace lorascope::widgets {

class AllocationTimeline : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kOwnerCount = 7;  // BlockKind::Weights .. BlockKind::Other
  static constexpr int kHeightPx = 170;

  explicit AllocationTimeline(QWidget* parent = nullptr);

  void setSnapshot(const MemorySnapshot& snapshot);
  void clear();  // back to "no snapshot yet"
  bool hasTrace() const { return !live_.empty(); }
  int eventCount() const { return static_cast<int>(live_.size()); }
  // After trace event `index`: live bytes per owner, and reserved bytes.
  const std::array<std::uint64_t, kOwnerCount>& liveAfter(int index) const;
  std::uint64_t reservedAfter(int index) const;
  std::uint64_t peakLiveBytes() const { return peakLive_; }
  int peakLiveIndex() const { return peakIndex_; }
  // The first event index of each step in the trace, with its step.
  struct StepStart {
    int index = 0;
    std::int64_t step = 0;
  };
  const std::vector<StepStart>& stepStarts() const { return stepStarts_; }
  // The labels under the plot at the current width: each step's number where it begins ("setup"
  // for step 0, the allocations before the first step), a label that would overlap the one
  // before it left out, except that a step's label takes the place of setup's.
  struct StepLabel {
    std::int64_t step = 0;
    QString text;
    int x = 0;  // where the text starts, in widget pixels
  };
  std::vector<StepLabel> stepLabels() const;
  // "the last N allocations and frees, steps a–b: peak live X at step s, reserved Y"; or why the
  // snapshot has no timeline, or that there is no snapshot yet.
  QString summaryText() const;
  // The plot area (left of it the axis labels, below it the step labels).
  QRect plotRect() const;

  QSize sizeHint() const override { return {640, kHeightPx}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  int stepX(const StepStart& start) const;  // where the step's mark is drawn

  bool hasSnapshot_ = false;
  std::vector<std::array<std::uint64_t, kOwnerCount>> live_;
  std::vector<std::uint64_t> reserved_;
  std::vector<StepStart> stepStarts_;
  std::uint64_t peakLive_ = 0;
  std::uint64_t maxReserved_ = 0;
  int peakIndex_ = 0;
  std::int64_t peakStep_ = 0;
  bool inconsistent_ = false;  // the trace does not add up to the snapshot (clamped at 0)
};

}  // namespace lorascope::widgets
