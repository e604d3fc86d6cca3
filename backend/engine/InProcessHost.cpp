// engine/InProcessHost.cpp — the engine loop on a QThread, events marshalled to the owner.
#include "engine/InProcessHost.h"

#include <QPointer>

namespace lorascope::engine {

void registerEngineMetaTypes() {
  qRegisterMetaType<TimedEvent>("lorascope::engine::TimedEvent");
  qRegisterMetaType<Command>("lorascope::engine::Command");
}

InProcessHost::InProcessHost(JobFactory factory, HelloEvent hello, QObject* parent)
    : EngineHost(parent) {
  registerEngineMetaTypes();
  QPointer<InProcessHost> self(this);
  engine_ = std::make_unique<Engine>(
      std::move(factory),
      [self](const TimedEvent& e) {
        // Called on the engine thread: hop to the host's thread before emitting.
        QMetaObject::invokeMethod(
            self,
            [self, e] {
              if (self)
                emit self->eventReceived(e);
            },
            Qt::QueuedConnection);
      },
      std::move(hello));
  thread_.setObjectName(QStringLiteral("lorascope-engine"));
  connect(&thread_, &QThread::started, this, [this] { emit connectedChanged(true); });
  connect(&thread_, &QThread::finished, this, [this] { emit connectedChanged(false); });
  Engine* engine = engine_.get();
  QObject::connect(
      &thread_, &QThread::started, &thread_, [engine] { engine->run(); }, Qt::DirectConnection);
  thread_.start();
}

InProcessHost::~InProcessHost() {
  engine_->shutdown();
  thread_.quit();
  thread_.wait();
}

void InProcessHost::send(const Command& command) {
  engine_->post(command);
}

}  // namespace lorascope::engine
