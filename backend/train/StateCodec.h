// train/StateCodec.h — TrainerState as one byte string, for the engine's state mirror (written
// after every optimizer step, so it must be cheap: floats are copied as raw bits, not text).
//
// Layout: u64 length of a JSON header, the header (scalars, LoRA sites and shapes, micro-batch
// history), then every float array in header order: per adapter entry a, b, and the four AdamW
// moments. Little-endian, as every machine LoRAscope runs on.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

#include "train/Checkpoint.h"  // defines: TrainerState

namespace lorascope::train {

class StateCodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::vector<std::byte> encodeTrainerState(const TrainerState& state);
// Throws StateCodecError when the bytes are truncated or inconsistent.
TrainerState decodeTrainerState(std::span<const std::byte> bytes);

}  // namespace lorascope::train
