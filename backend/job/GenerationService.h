// job/GenerationService.h — what the engine runs for a generate command (the Try it page): a
// job::TextGenerator kept loaded while the model, adapter, device and base weights stay the same,
// the base model's answer and then the adapter's (the same weights, the adapter switched on)
// streamed as token events.
//
// A device error that leaves the GPU context unusable (an illegal address, a BLAS failure, a
// launch failure; LORASCOPE_FAULTS injects them like the real ones) is thrown as
// engine::StickyDeviceError: the engine reports it and exits, and its supervisor starts a new one
// for the next generation. Anything else (a model folder that does not open, out of memory) is
// thrown as it is and ends the generation as failed; the engine goes on. The runtime's watchdog
// checks each answer's generation as it checks a training step (generationHangCheck): an op that
// never returns is a hang, and the engine exits for its supervisor to restart.
#pragma once

#include "engine/Engine.h"  // defines: GenerationRunner

namespace lorascope::job {

// A runner with its own loaded model (empty until the first command).
engine::GenerationRunner createGenerationRunner();
// The watchdog's hang error while a runner of this process generates an answer (none otherwise),
// for the engine's sampler thread.
engine::GenerationHangCheck generationHangCheck();

}  // namespace lorascope::job
