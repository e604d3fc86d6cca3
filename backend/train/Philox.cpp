// train/Philox.cpp — the draws built on compute/Philox.h's rounds (shared with the GPU kernels).
#include "train/Philox.h"

#include "compute/Philox.h"  // defines: compute::philox4x32, compute::uniformFromWord

namespace lorascope::train {

std::array<std::uint32_t, 4> philox4x32(std::uint64_t seed, std::uint64_t stream,
                                        std::uint64_t index) {
  const compute::PhiloxWords w = compute::philox4x32(seed, stream, index);
  return {w.word[0], w.word[1], w.word[2], w.word[3]};
}

float uniformFloat(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  return compute::uniformFromWord(compute::philox4x32(seed, stream, i / 4).word[i % 4]);
}

std::uint64_t uniformBelow(std::uint64_t seed, std::uint64_t stream, std::uint64_t& index,
                           std::uint64_t bound) {
  // 2^64 mod bound: the draws below it are the surplus that would bias the modulo.
  const std::uint64_t threshold = (std::uint64_t{0} - bound) % bound;
  for (;;) {
    const auto words = philox4x32(seed, stream, index++);
    const std::uint64_t draw = (static_cast<std::uint64_t>(words[0]) << 32) | words[1];
    if (draw >= threshold) {
      return draw % bound;
    }
  }
}

}  // namespace lorascope::train
