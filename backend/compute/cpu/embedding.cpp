// cpu/embedding.cpp — embedding gather for the CPU backend.
#include "compute/cpu/embedding.h"

#include <string>

#include "compute/Convert.h"  // defines: widenToFloat
#include "compute/Errors.h"

namespace lorascope::compute::cpu {

void embeddingForward(const void* table, DType tableDtype, std::int64_t vocab, std::int64_t dim,
                      std::span<const std::int32_t> ids, float* out) {
  for (std::size_t t = 0; t < ids.size(); ++t) {
    const std::int32_t id = ids[t];
    if (id < 0 || id >= vocab) {
      throw ShapeError("embedding_forward: token id " + std::to_string(id) + " at position " +
                       std::to_string(t) + " is outside the vocabulary [0, " +
                       std::to_string(vocab) + ")");
    }
    widenToFloat(table, tableDtype, static_cast<std::int64_t>(id) * dim, dim,
                 out + static_cast<std::int64_t>(t) * dim);
  }
}

}  // namespace lorascope::compute::cpu
