// gui/EngineAdapter.h — the Qt face of a backend engine host: where Qt starts. The host (plain
// C++, engine/EngineHost.h) reports on threads of its own; the adapter hands each event and
// connection change to this object's thread as the widgets::EngineClient signals, in order.
#pragma once

#include <functional>
#include <memory>

#include "engine/EngineHost.h"
#include "widgets/EngineTypes.h"

namespace lorascope::app {

class EngineAdapter : public widgets::EngineClient {
  Q_OBJECT

 public:
  // Makes the host with the listener it must report to (engine::SupervisorHost,
  // engine::InProcessHost, engine::IsolatedHost...).
  using HostFactory =
      std::function<std::unique_ptr<engine::EngineHost>(engine::HostListener listener)>;

  explicit EngineAdapter(const HostFactory& makeHost, QObject* parent = nullptr);
  // The host goes first (its threads end, it shuts its engine down); what it reported and this
  // object has not emitted yet is dropped with it.
  ~EngineAdapter() override;

  void send(const engine::Command& command) override { host_->send(command); }
  bool isConnected() const override { return host_->isConnected(); }

  // The host itself, for what only its kind offers (SupervisorHost::restarts, ...).
  template <typename Host>
  Host& host() const {
    return dynamic_cast<Host&>(*host_);
  }

 private:
  std::unique_ptr<engine::EngineHost> host_;
};

}  // namespace lorascope::app
