// engine/EngineHost.h — where the engine runs, as the GUI sees it: a QObject that takes Commands
// and emits Events. InProcessHost runs the engine on a worker thread; IsolatedHost runs
// `lorascope-train engine` as a child process speaking JSON lines. The GUI cannot tell them apart.
#pragma once

#include <QMetaType>
#include <QObject>

#include "engine/Protocol.h"

Q_DECLARE_METATYPE(lorascope::engine::TimedEvent)
Q_DECLARE_METATYPE(lorascope::engine::Command)

namespace lorascope::engine {

// Registers the meta-types above for queued connections; safe to call more than once.
void registerEngineMetaTypes();

class EngineHost : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;

  // Hands one command to the engine; never blocks the caller on the trainer.
  virtual void send(const Command& command) = 0;
  // True while an engine is attached and able to take commands.
  virtual bool isConnected() const = 0;

 signals:
  // Named so as not to hide QObject::event(QEvent*) (clang: -Woverloaded-virtual).
  void eventReceived(const lorascope::engine::TimedEvent& event);
  void connectedChanged(bool connected);
};

}  // namespace lorascope::engine
