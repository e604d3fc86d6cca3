// engine/InProcessHost.cpp — the engine loop on a std::thread.
#include "engine/InProcessHost.h"

namespace lorascope::engine {

InProcessHost::InProcessHost(JobFactory factory, HelloEvent hello, HostListener listener,
                             EngineOptions options)
    : listener_(std::move(listener)) {
  engine_ = std::make_unique<Engine>(
      std::move(factory), [this](const TimedEvent& e) { listener_.event(e); }, std::move(hello),
      std::move(options));
  running_ = true;
  thread_ = std::thread([this] {
    if (listener_.connectedChanged)
      listener_.connectedChanged(true);
    engine_->run();
    running_ = false;
    if (listener_.connectedChanged)
      listener_.connectedChanged(false);
  });
}

InProcessHost::~InProcessHost() {
  engine_->shutdown();
  thread_.join();
}

void InProcessHost::send(const Command& command) {
  engine_->post(command);
}

}  // namespace lorascope::engine
