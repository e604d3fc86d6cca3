// model/WeightQuantization.h — how a run holds its frozen projections (as stored, or NF4 as in
// QLoRA: --quantize) and the bytes a model's frozen weights take once placed on a device. Host
// arithmetic over the safetensors headers, without a backend: the Setup page's memory estimate
// and `inspect-model` read it, and model/DeviceWeights.h places the weights it counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "compute/Tensor.h"     // defines: Device
#include "model/ModelFolder.h"  // defines: ModelFolder

namespace lorascope::model {

// How the frozen projections are held: as stored (None) or quantised to NF4 at load (QLoRA).
enum class WeightQuantization { None, Nf4 };
const char* quantizationName(WeightQuantization quantization);  // "none", "nf4"
std::optional<WeightQuantization> parseQuantization(std::string_view name);

// The bytes the frozen weights of `folder` take once placed on `device` with `quantization`:
// as stored on the CPU, bf16 on a GPU, and compute::nf4::storageBytes for each quantised
// projection. What the memory model (model/MemoryEstimate.h) counts as the weights.
std::uint64_t placedWeightBytes(const ModelFolder& folder, compute::Device device,
                                WeightQuantization quantization);

}  // namespace lorascope::model
