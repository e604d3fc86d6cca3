// widgets/DashboardIncidents.cpp — the dashboard's incidents: the words of the banner and the
// markers of errors, incidents and hangs (the rest of Dashboard is in Dashboard.cpp).
//
// A hang is told from what the dashboard saw itself, so that its length and the queue agree with
// the charts: the engine's watchdog reports it while step H runs, after the last step shown, N
// (H is N+1, or N+2 when step N+1 had finished but was not yet saved and announced; the error
// event names H); the band covers N to H on the step axis and the seconds without progress on the
// time axis, and the text names step H, the seconds since step N, how long step N took, the op
// and the last queue reading. The engine's own report follows it.
#include <algorithm>

#include <QStringList>

#include "widgets/Dashboard.h"
#include "widgets/IncidentBanner.h"

namespace lorascope::widgets {

using namespace lorascope::engine;

namespace {

QString text(const std::string& s) {
  return QString::fromStdString(s);
}

// "out_of_memory" → "Out of memory".
QString categoryTitle(const std::string& category) {
  QString title = text(category).replace(QLatin1Char('_'), QLatin1Char(' '));
  if (!title.isEmpty()) {
    title[0] = title[0].toUpper();
  }
  return title;
}

QString seconds(std::int64_t ms) {
  return QString::number(static_cast<double>(ms) / 1000.0, 'f', 1);
}

// The queue when the hang was reported: "nothing was queued on the GPU (compute 0 in flight)".
QString queueText(const std::optional<QueueEvent>& queue) {
  if (!queue || queue->streams.empty()) {
    return QObject::tr("no queue reading");
  }
  QStringList streams;
  std::int64_t inFlight = 0;
  for (const QueueDepth& q : queue->streams) {
    streams << QObject::tr("%1 %2 in flight").arg(text(q.stream)).arg(q.depth);
    inFlight += q.depth;
  }
  return inFlight == 0
             ? QObject::tr("nothing was queued on the GPU (%1)")
                   .arg(streams.join(QLatin1String(", ")))
             : QObject::tr("queued on the GPU: %1").arg(streams.join(QLatin1String(", ")));
}

QString withAdvice(const ErrorEvent& e) {
  return e.advice.empty() ? text(e.message)
                          : QObject::tr("%1 What to try: %2").arg(text(e.message), text(e.advice));
}

}  // namespace

void Dashboard::noteIncident(const TimedEvent& timed) {
  const double x = xOf(timed);  // also starts the run's clock at its first event
  using Severity = IncidentBanner::Severity;
  if (const auto* incident = std::get_if<IncidentEvent>(&timed.event)) {
    incidents_->add({Severity::Incident,
                     tr("Incident after step %1: %2").arg(incident->step).arg(text(incident->what)),
                     tr("What the supervisor did: %1").arg(text(incident->action))});
    addMarker(timed, MarkerKind::Incident,
              tr("%1 — %2").arg(text(incident->what), text(incident->action)));
  } else if (const auto* refused = std::get_if<ToggleRefusedEvent>(&timed.event)) {
    const QString value = text(refused->value.is_string() ? refused->value.get<std::string>()
                                                          : refused->value.dump());
    incidents_->add({Severity::Refusal,
                     tr("%1 → %2 refused at step %3")
                         .arg(QLatin1String(toString(refused->toggle)), value)
                         .arg(refused->step),
                     tr("%1. The engine kept the value in effect.").arg(text(refused->reason))});
  } else if (const auto* error = std::get_if<ErrorEvent>(&timed.event)) {
    if (error->category != "hang") {
      const bool refusal = error->category == "command";
      const QString when = lastStep_ > 0 ? tr(" after step %1").arg(lastStep_) : QString();
      incidents_->add(
          {refusal ? Severity::Refusal : Severity::Incident,
           refusal ? tr("Command refused%1").arg(when)
                   : tr("%1%2%3").arg(
                         categoryTitle(error->category), when,
                         error->op.empty() ? QString() : tr(" (op %1)").arg(text(error->op))),
           withAdvice(*error)});
      addMarker(timed, MarkerKind::Incident,
                tr("%1 error: %2").arg(text(error->category), text(error->message)));
      return;
    }
    // The engine names the step that hangs; it can be one past the next step shown, which had
    // finished but was not yet saved and announced when the hang began.
    const std::int64_t hungStep = std::max(error->step, lastStep_ + 1);
    const std::int64_t sinceMs = lastStep_ > 0 ? lastStepMs_ : *runStartMs_;
    const std::int64_t stuckMs = timed.timeMs - sinceMs;
    const QString after =
        lastStep_ > 0
            ? tr("after step %1 (which took %2 s)").arg(lastStep_).arg(seconds(stepDurationMs_))
            : tr("after the run started");
    incidents_->add(
        {Severity::Incident,
         tr("Hang in step %1: no step for %2 s %3").arg(hungStep).arg(seconds(stuckMs), after),
         tr("Stuck in op '%1'; %2. The engine reported: %3")
             .arg(text(error->op), queueText(lastQueue_), withAdvice(*error))});
    ChartMarker marker{timed.timeMs, MarkerKind::Incident,
                       tr("hang in step %1, %2 s without progress: %3")
                           .arg(hungStep)
                           .arg(seconds(stuckMs), text(error->message))};
    marker.label = tr("step %1 hung: %2 s").arg(hungStep).arg(seconds(stuckMs));
    if (xAxis_ == XAxis::Step) {
      marker.spanFromX = static_cast<double>(lastStep_);
      marker.x = static_cast<double>(hungStep);
    } else {
      marker.spanFromX = static_cast<double>(sinceMs - *runStartMs_) / 1000.0;
      marker.x = x;
    }
    lastX_ = std::max(lastX_, marker.x);
    markers_.push_back(marker);
  }
}

}  // namespace lorascope::widgets
