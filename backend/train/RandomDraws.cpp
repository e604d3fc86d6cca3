// train/RandomDraws.cpp — the draws built on compute/Philox.h's rounds (shared with the GPU
// kernels).
#include "train/RandomDraws.h"

#include "compute/Philox.h"  // defines: compute::philox4x32, compute::uniformFromWord

namespace lorascope::train {

float uniformFloat(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  return compute::uniformFromWord(compute::philox4x32(seed, stream, i / 4).word[i % 4]);
}

std::uint64_t uniformBelow(std::uint64_t seed, std::uint64_t stream, std::uint64_t& index,
                           std::uint64_t bound) {
  // 2^64 mod bound: the draws below it are the surplus that would bias the modulo.
  const std::uint64_t threshold = (std::uint64_t{0} - bound) % bound;
  for (;;) {
    const compute::PhiloxWords words = compute::philox4x32(seed, stream, index++);
    const std::uint64_t draw = (static_cast<std::uint64_t>(words.word[0]) << 32) | words.word[1];
    if (draw >= threshold) {
      return draw % bound;
    }
  }
}

}  // namespace lorascope::train
