// widgets/EngineTypes.h — the engine protocol's structs as Qt meta-types, so Commands and Events
// travel through (queued) signals; and EngineClient, the one seam between the window and an engine.
//
// The window never knows which host runs the engine (worker thread, child process, supervisor):
// a host implements EngineClient, takes Commands through send() and emits every Event it receives
// through event(). Widgets do not see the client at all: they render Events handed to them and
// emit commandRequested(Command), which the window forwards to send().
#pragma once

#include <QMetaType>
#include <QObject>

#include "engine/Protocol.h"

Q_DECLARE_METATYPE(lorascope::engine::TimedEvent)
Q_DECLARE_METATYPE(lorascope::engine::Command)

namespace lorascope::widgets {

// Registers the meta-types above for queued connections; call once before connecting threads.
void registerEngineMetaTypes();

class EngineClient : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;

  // Hands one command to the engine; never blocks the caller on the trainer.
  virtual void send(const lorascope::engine::Command& command) = 0;
  // True while an engine is attached and able to take commands.
  virtual bool isConnected() const = 0;

 signals:
  void event(const lorascope::engine::TimedEvent& event);
  void connectedChanged(bool connected);
};

}  // namespace lorascope::widgets
