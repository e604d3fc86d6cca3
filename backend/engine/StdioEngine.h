// engine/StdioEngine.h — the isolated engine's transport: commands as JSON lines on stdin,
// events as JSON lines on stdout (flushed per line), diagnostics on stderr. When stdin ends (the
// GUI closed the pipe or died), a run in progress stops with a checkpoint and the call returns.
// When the watchdog names a hang (in a step or a generation), the process exits with
// kExitStickyError once the report is out: the stuck op cannot be interrupted, and the supervisor
// restarts the engine from the state mirror.
#pragma once

#include <iosfwd>

#include "engine/Engine.h"

namespace lorascope::engine {

// Serves one engine until its input ends; returns the process exit code: 0, or
// kExitStickyError after a sticky device error (return it from main at once). Unties `in` from
// any output stream: `out` is written and flushed by the event writers alone, under their lock.
// `generate` runs generate commands (none: they are refused); `generationHang` is the watchdog's
// verdict while one runs (none: generations are not watched).
int serveEngineOverStreams(JobFactory factory, HelloEvent hello, std::istream& in,
                           std::ostream& out, GenerationRunner generate = {},
                           GenerationHangCheck generationHang = {});

}  // namespace lorascope::engine
