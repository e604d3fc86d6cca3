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
// The same bytes into `out` (replaced; its capacity is kept, so a writer that encodes every step
// allocates once), the float arrays taken from `arrays` instead of the state's vectors (which are
// not read): six per adapter entry, in the layout's order (a, b, first a, second a, first b,
// second b). Throws std::invalid_argument unless there are six per entry, shaped a, b, a, a, b, b.
void encodeTrainerStateInto(const TrainerState& state,
                            std::span<const std::span<const float>> arrays,
                            std::vector<std::byte>& out);
// The state's own float arrays in that order (views of its vectors).
std::vector<std::span<const float>> encodingArrays(const TrainerState& state);
// Throws StateCodecError when the bytes are truncated or inconsistent.
TrainerState decodeTrainerState(std::span<const std::byte> bytes);

}  // namespace lorascope::train
