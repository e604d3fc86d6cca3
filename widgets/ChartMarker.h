// widgets/ChartMarker.h — a moment every dashboard chart marks with a vertical line: a toggle the
// engine applied, a profile switch, a checkpoint, where a run was resumed, an incident or error.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>

namespace lorascope::widgets {

enum class MarkerKind { Toggle, Profile, Checkpoint, Resume, Incident };

struct ChartMarker {
  std::int64_t timeMs = 0;  // engine clock, the charts' shared time axis
  MarkerKind kind = MarkerKind::Toggle;
  QString text;  // shown in the tooltip: "serialize → true at step 40"
  // Where it is drawn on the charts' x axis now: steps, or seconds since the run started
  // (widgets/Dashboard.h sets it for the axis it shows).
  double x = 0.0;
};

QColor markerColor(MarkerKind kind);
QString markerKindName(MarkerKind kind);

}  // namespace lorascope::widgets
