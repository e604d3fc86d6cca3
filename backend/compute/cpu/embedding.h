// cpu/embedding.h — embedding gather: out[t] = table[ids[t]] widened to fp32.
#pragma once

#include <cstdint>
#include <span>

#include "compute/Tensor.h"  // defines: DType

namespace lorascope::compute::cpu {

// table (vocab, dim) stored as `tableDtype`, ids (T) -> out (T, dim) f32.
// Throws ShapeError naming the position and the id when an id is outside [0, vocab).
void embeddingForward(const void* table, DType tableDtype, std::int64_t vocab, std::int64_t dim,
                      std::span<const std::int32_t> ids, float* out);

}  // namespace lorascope::compute::cpu
