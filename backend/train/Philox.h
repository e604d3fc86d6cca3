// train/Philox.h — Philox4x32-10, a counter-based random generator (Salmon et al., SC'11).
//
// A random number is a pure function of (seed, stream, index): no hidden state, so a resumed run
// draws exactly what the uninterrupted run drew, and GPU threads can draw independently (the
// rounds live in compute/Philox.h, which the HIP kernels compile too). Streams separate uses
// (LoRA init of each tensor, dropout of each step and layer, shuffling of each epoch).
#pragma once

#include <array>
#include <cstdint>

namespace lorascope::train {

// Four 32-bit random words for counter (stream, index) under key `seed`.
std::array<std::uint32_t, 4> philox4x32(std::uint64_t seed, std::uint64_t stream,
                                        std::uint64_t index);

// Uniform in [0, 1) with 24 random bits, the i-th of stream `stream` (four per Philox block).
float uniformFloat(std::uint64_t seed, std::uint64_t stream, std::uint64_t i);

// Uniform integer in [0, bound), bias-free (rejection), for shuffling. bound > 0.
std::uint64_t uniformBelow(std::uint64_t seed, std::uint64_t stream, std::uint64_t& index,
                           std::uint64_t bound);

}  // namespace lorascope::train
