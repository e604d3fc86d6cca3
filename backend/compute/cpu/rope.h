// cpu/rope.h — rotary position embedding, rotate_half layout, in place (fp32).
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

struct RopeDims {
  std::int64_t tokens = 0;
  std::int64_t heads = 0;
  std::int64_t headDim = 0;  // even
};

// x (tokens, heads, headDim) rotated in place; positions (tokens); invFreq (headDim/2).
// `inverse` rotates by the negative angle (the backward pass).
void rope(float* x, RopeDims dims, const std::int32_t* positions, const float* invFreq,
          bool inverse);

}  // namespace lorascope::compute::cpu
