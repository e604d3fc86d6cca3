// model/DeviceWeights.h — a model's frozen weights placed where a backend computes.
//
// - Tensors already on the backend's device are kept as they are: on the CPU backend the mapped
//   safetensors are the weights (no copy; the mapping stays their storage).
// - On a GPU backend each tensor is copied once. bf16 weights go over as stored bytes
//   (Backend::uploadRaw, no float round trip). f32 and f16 weights are rounded to bf16 on the way:
//   the GPU computes in bf16 and its GEMMs read bf16 operands, so an f32 model takes half its
//   stored size on the device and its numbers differ from the CPU run's by that rounding.
// - A tied lm_head is the embedding's device tensor, not a second copy.
// - With WeightQuantization::Nf4 (--quantize nf4) the seven projections of every layer (q, k, v,
//   o, gate, up, down; not their biases, the norms, the embedding or the lm_head) are quantised
//   on the host to NF4 with double quantisation (compute/Nf4.h) from their stored bf16/f16/f32
//   values, one tensor at a time, and only the packed form goes to the device (on the CPU too).
// - Device blocks are tagged memory::Owner::Weights; they are freed when the returned
//   ModelWeights (and every copy of its tensors) is gone.
#pragma once

#include <cstdint>
#include <functional>

#include "compute/Backend.h"
#include "model/ModelFolder.h"         // defines: ModelWeights
#include "model/WeightQuantization.h"  // defines: WeightQuantization

namespace lorascope::model {

// The LoRA rows and columns placeWeights keeps beside each layer's stacked q/k/v and gate/up on
// a GPU (unquantised): the rank times the group's adapted projections, 0 for none. Each stacked
// tensor is then a column view of a zeroed matrix R wider and R taller (LayerWeights::qkvFolded,
// gateUpFolded), where the trainer puts the LoRA weights (Note [the LoRA term in the inner
// dimension] in train/TrainGraph.cpp). Multiples of 8 keep the rows 16-byte aligned; others are
// not reserved.
struct LoraFold {
  std::int64_t qkv = 0;
  std::int64_t gateUp = 0;
};
// Whether a LoraFold reserve of `rows` rows and columns is kept (see above).
constexpr bool keepsFoldReserve(std::int64_t rows) {
  return rows > 0 && rows % 8 == 0;
}

// Called after each tensor with the stored bytes placed so far and in all (for a progress bar).
using PlaceProgress = std::function<void(std::uint64_t doneBytes, std::uint64_t totalBytes)>;

// Throws what the backend throws (memory::OutOfMemoryError naming the numbers when the model
// does not fit, compute::GpuError for a failed copy).
ModelWeights placeWeights(compute::Backend& backend, const ModelWeights& weights,
                          const PlaceProgress& progress = {},
                          WeightQuantization quantization = WeightQuantization::None,
                          LoraFold fold = {});

// The weights with the values a GPU backend computes on (f32/f16 rounded to bf16, bf16 as
// stored), as bf16 tensors of `cpu`: the CPU reference for a GPU run of an f32 model
// (`lorascope-train doctor`'s smoke test), so both runs start from the same numbers.
ModelWeights roundedAsOnGpu(compute::Backend& cpu, const ModelWeights& weights);

}  // namespace lorascope::model
