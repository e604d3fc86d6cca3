// widgets/EngineTypes.h — what the widgets know of an engine: the protocol's structs (registered
// as Qt meta-types by engine/EngineHost.h, so Commands and Events travel through signals) and the
// host interface the window talks to.
//
// The window never knows which host runs the engine (worker thread, child process, supervisor):
// each implements engine::EngineHost, takes Commands through send() and emits every Event through
// event(). Widgets do not see the host at all: they render Events handed to them and emit
// commandRequested(Command), which the window forwards to send().
#pragma once

#include "engine/EngineHost.h"

namespace lorascope::widgets {

using EngineClient = engine::EngineHost;

}  // namespace lorascope::widgets
