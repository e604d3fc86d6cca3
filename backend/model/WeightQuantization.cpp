// model/WeightQuantization.cpp — the quantisation's names and the placed weights' bytes.
#include "model/WeightQuantization.h"

#include <set>
#include <string>

#include "compute/Nf4.h"        // defines: nf4::storageBytes
#include "model/Projections.h"  // defines: kAllProjections, projectionTensorName

namespace lorascope::model {

const char* quantizationName(WeightQuantization quantization) {
  return quantization == WeightQuantization::Nf4 ? "nf4" : "none";
}

std::optional<WeightQuantization> parseQuantization(std::string_view name) {
  if (name == "none") {
    return WeightQuantization::None;
  }
  if (name == "nf4") {
    return WeightQuantization::Nf4;
  }
  return std::nullopt;
}

std::uint64_t placedWeightBytes(const ModelFolder& folder, compute::Device device,
                                WeightQuantization quantization) {
  std::set<std::string> projections;
  if (quantization == WeightQuantization::Nf4) {
    for (std::int64_t layer = 0; layer < folder.config().numLayers; ++layer) {
      for (const Projection p : kAllProjections) {
        projections.insert(projectionTensorName(layer, p, "weight"));
      }
    }
  }
  std::uint64_t bytes = 0;
  for (const StoredTensor& t : folder.tensors()) {
    const std::int64_t numel = compute::numelOf(t.shape);
    if (projections.contains(t.name)) {
      bytes += compute::nf4::storageBytes(numel);
    } else {
      const compute::DType placedAs =
          device == compute::Device::Gpu ? compute::DType::BF16 : t.dtype;
      bytes += compute::storageBytes(placedAs, numel);
    }
  }
  return bytes;
}

}  // namespace lorascope::model
