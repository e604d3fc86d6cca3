// widgets/ChartMarker.h — a moment every dashboard chart marks with a vertical line: a toggle the
// engine applied, a profile switch, a checkpoint, where a run was resumed, an incident or error. A
// marker may also span (a hang: from the last completed step to where it was reported), drawn as a
// shaded band with a label on it, so that ten seconds without a step stay visible on the step axis.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>
#include <optional>

namespace lorascope::widgets {

enum class MarkerKind { Toggle, Profile, Checkpoint, Resume, Incident };

struct ChartMarker {
  std::int64_t timeMs = 0;  // engine clock, the charts' shared time axis
  MarkerKind kind = MarkerKind::Toggle;
  QString text;  // shown in the tooltip: "serialize → true at step 40"
  // Where it is drawn on the charts' x axis now: steps, or seconds since the run started
  // (widgets/Dashboard.h sets it for the axis it shows).
  double x = 0.0;
  // Where its band starts on the same axis (the band ends at x); nullopt: a moment, no band.
  std::optional<double> spanFromX = std::nullopt;
  QString label = {};  // written on the charts at the band ("step 5 hung: 10.5 s"); "" for none
};

QColor markerColor(MarkerKind kind);
QString markerKindName(MarkerKind kind);

}  // namespace lorascope::widgets
