// engine/EngineHost.h — where the engine runs, as its user sees it: something that takes Commands
// and reports Events. InProcessHost runs the engine on a thread of this process; IsolatedHost runs
// `lorascope-train engine` as a child process speaking JSON lines; SupervisorHost runs isolated
// engines under the Supervisor (restarts, recovery ladder, hang watchdog). Plain C++: the GUI
// wraps a host in a Qt adapter (app/gui/EngineAdapter), the CLI's `train` uses one directly.
#pragma once

#include <functional>

#include "engine/Protocol.h"

namespace lorascope::engine {

// What a host reports. Called on a thread of the host's (never the caller's of send()), one call
// at a time and in order; a listener must not call back into the host that calls it.
struct HostListener {
  std::function<void(const TimedEvent&)> event;
  std::function<void(bool connected)> connectedChanged;  // optional
};

class EngineHost {
 public:
  virtual ~EngineHost() = default;
  // Hands one command to the engine; thread-safe, never blocks the caller on the trainer.
  virtual void send(const Command& command) = 0;
  // True while an engine is attached and able to take commands; thread-safe.
  virtual bool isConnected() const = 0;
};

// A host whose engine runs on its own and can be stopped from outside: what the Supervisor
// starts (IsolatedHost; tests stand in with fakes).
class SupervisableHost : public EngineHost {
 public:
  // Closes the engine's input: it stops a run with a checkpoint and exits.
  virtual void closeInput() = 0;
  // Ends the engine at once (a hang).
  virtual void kill() = 0;
  // The engine's process id while it runs, else 0.
  virtual std::int64_t processId() const = 0;
};

}  // namespace lorascope::engine
