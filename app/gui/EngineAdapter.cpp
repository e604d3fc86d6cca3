// gui/EngineAdapter.cpp — events hop from the host's threads to the adapter's.
#include "gui/EngineAdapter.h"

namespace lorascope::app {

EngineAdapter::EngineAdapter(const HostFactory& makeHost, QObject* parent)
    : widgets::EngineClient(parent) {
  widgets::registerEngineMetaTypes();
  engine::HostListener listener{
      [this](const engine::TimedEvent& e) {
        QMetaObject::invokeMethod(
            this, [this, e] { emit eventReceived(e); }, Qt::QueuedConnection);
      },
      [this](bool connected) {
        QMetaObject::invokeMethod(
            this, [this, connected] { emit connectedChanged(connected); }, Qt::QueuedConnection);
      }};
  host_ = makeHost(std::move(listener));
}

EngineAdapter::~EngineAdapter() {
  host_.reset();
}

}  // namespace lorascope::app
