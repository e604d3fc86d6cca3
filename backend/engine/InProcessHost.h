// engine/InProcessHost.h — the engine on a thread of this process. send() only enqueues, so the
// caller never waits on the trainer; events reach the listener on the engine's thread. For CPU
// runs: a GPU fault here would take the whole program down with it (GPU runs use IsolatedHost).
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "engine/Engine.h"
#include "engine/EngineHost.h"

namespace lorascope::engine {

class InProcessHost : public EngineHost {
 public:
  InProcessHost(JobFactory factory, HelloEvent hello, HostListener listener,
                EngineOptions options = {});
  ~InProcessHost() override;  // stops the engine thread (no checkpoint: send stop first)

  void send(const Command& command) override;
  bool isConnected() const override { return running_.load(); }

 private:
  HostListener listener_;
  std::unique_ptr<Engine> engine_;
  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace lorascope::engine
