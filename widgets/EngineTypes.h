// widgets/EngineTypes.h — what the widgets know of an engine: the protocol's structs (registered
// as Qt meta-types here, so Commands and Events travel through signals) and the client interface
// the window talks to.
//
// The window never knows which host runs the engine (worker thread, child process, supervisor):
// the app wraps each backend host (engine/EngineHost.h, plain C++) in an EngineClient
// (app/gui/EngineAdapter), which takes Commands through send() and emits every Event through
// eventReceived() on the window's thread. Widgets do not see the host at all: they render Events
// handed to them and emit commandRequested(Command), which the window forwards to send().
#pragma once

#include <QMetaType>
#include <QObject>

#include "engine/Protocol.h"

Q_DECLARE_METATYPE(lorascope::engine::TimedEvent)
Q_DECLARE_METATYPE(lorascope::engine::Command)

namespace lorascope::widgets {

// Registers the meta-types above for queued connections; safe to call more than once.
inline void registerEngineMetaTypes() {
  qRegisterMetaType<engine::TimedEvent>("lorascope::engine::TimedEvent");
  qRegisterMetaType<engine::Command>("lorascope::engine::Command");
}

class EngineClient : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;

  // Hands one command to the engine; never blocks the caller on the trainer.
  virtual void send(const engine::Command& command) = 0;
  // True while an engine is attached and able to take commands.
  virtual bool isConnected() const = 0;

 signals:
  // Named so as not to hide QObject::event(QEvent*) (clang: -Woverloaded-virtual).
  void eventReceived(const lorascope::engine::TimedEvent& event);
  void connectedChanged(bool connected);
};

}  // namespace lorascope::widgets
