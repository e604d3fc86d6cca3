// train/RandomDraws.h — the random draws of train/ (LoRA init, shuffles, the held-out split,
// sampling) on Philox4x32-10, whose rounds are compute/Philox.h's (the one definition the CPU
// backend and the HIP kernels compile too).
//
// A draw is a pure function of (seed, stream, index): no hidden state, so a resumed run draws
// exactly what the uninterrupted run drew. Streams separate uses (LoRA init of each tensor,
// dropout of each step and layer, shuffling of each epoch).
#pragma once

#include <cstdint>

namespace lorascope::train {

// Uniform in [0, 1) with 24 random bits, the i-th of stream `stream` (four per Philox block).
float uniformFloat(std::uint64_t seed, std::uint64_t stream, std::uint64_t i);

// Uniform integer in [0, bound), bias-free (rejection), for shuffling. bound > 0.
std::uint64_t uniformBelow(std::uint64_t seed, std::uint64_t stream, std::uint64_t& index,
                           std::uint64_t bound);

}  // namespace lorascope::train
