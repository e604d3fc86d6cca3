// engine/InProcessHost.h — the engine on a worker QThread of this process. Events reach the
// owner's thread as queued signals; send() only enqueues, so the GUI never waits on the trainer.
// For CPU runs: a GPU fault here would take the GUI down with it (GPU runs use IsolatedHost).
#pragma once

#include <QThread>
#include <memory>

#include "engine/Engine.h"
#include "engine/EngineHost.h"

namespace lorascope::engine {

class InProcessHost : public EngineHost {
  Q_OBJECT

 public:
  InProcessHost(JobFactory factory, HelloEvent hello, QObject* parent = nullptr);
  ~InProcessHost() override;  // stops the engine thread (no checkpoint: send stop first)

  void send(const Command& command) override;
  bool isConnected() const override { return thread_.isRunning(); }

 private:
  std::unique_ptr<Engine> engine_;
  QThread thread_;
};

}  // namespace lorascope::engine
