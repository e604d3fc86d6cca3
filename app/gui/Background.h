// gui/Background.h — runs slow work (opening a model folder, validating a dataset) on a thread of
// its own and hands progress and the result back on the GUI thread, so the window never freezes.
//
// Both travel as queued signals of objects that live on the GUI thread (the QThread and a relay
// deleted with it) to `context`: Qt drops them when `context` is gone by then, so a page closed
// mid-work is never touched and nothing races its destruction. The work must capture only values.
#pragma once

#include <QObject>
#include <QThread>
#include <functional>
#include <memory>
#include <utility>

namespace lorascope::app {

// Carries progress (0..1000) from the worker to the GUI thread.
class ProgressRelay : public QObject {
  Q_OBJECT

 signals:
  void progressed(int permille);
};

using ReportProgress = std::function<void(int permille)>;

template <typename Result>
void runInBackground(QObject* context, std::function<Result(const ReportProgress&)> work,
                     std::function<void(int permille)> progress, std::function<void(Result)> done) {
  auto result = std::make_shared<Result>();
  auto* relay = new ProgressRelay;
  QObject::connect(relay, &ProgressRelay::progressed, context, std::move(progress));
  QThread* thread = QThread::create([relay, result, work = std::move(work)] {
    *result = work([relay](int permille) { emit relay->progressed(permille); });
  });
  QObject::connect(thread, &QThread::finished, context,
                   [result, done = std::move(done)] { done(std::move(*result)); });
  QObject::connect(thread, &QThread::finished, relay, &QObject::deleteLater);
  QObject::connect(thread, &QThread::finished, thread, &QObject::deleteLater);
  thread->start();
}

}  // namespace lorascope::app
