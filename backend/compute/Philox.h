// Philox.h — Philox4x32-10 (Salmon et al., SC'11) and the inverted-dropout draw built on it, as
// inline functions that compile for the host and, in a HIP translation unit, for the device.
//
// The CPU backend, the HIP kernels and train/ (LoRA init, shuffles, dropout) all draw through
// this one definition, so a mask generated on the GPU equals the CPU's element for element:
// Philox is integer arithmetic, and the float conversion below is exact (24 bits).
#pragma once

#include <cstdint>

// __host__ __device__ exists only under a GPU compiler; plain C++ gets plain inline functions.
// This tests the compiler, not the vendor: both hipcc and nvcc define the same qualifiers.
#if defined(__HIPCC__) || defined(__CUDACC__)
#define LORASCOPE_HOST_DEVICE __host__ __device__
#else
#define LORASCOPE_HOST_DEVICE
#endif

namespace lorascope::compute {

struct PhiloxWords {
  std::uint32_t word[4];
};

namespace philox_detail {
inline constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;  // Philox4x32 round multipliers
inline constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;  // key schedule increments (golden ratio,
inline constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;  // √3 − 1)
inline constexpr int kRounds = 10;
}  // namespace philox_detail

// Four 32-bit random words for counter (stream, index) under key `seed`.
LORASCOPE_HOST_DEVICE inline PhiloxWords philox4x32(std::uint64_t seed, std::uint64_t stream,
                                                    std::uint64_t index) {
  using namespace philox_detail;
  std::uint32_t c0 = static_cast<std::uint32_t>(index);
  std::uint32_t c1 = static_cast<std::uint32_t>(index >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(stream);
  std::uint32_t c3 = static_cast<std::uint32_t>(stream >> 32);
  std::uint32_t k0 = static_cast<std::uint32_t>(seed);
  std::uint32_t k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t product0 = static_cast<std::uint64_t>(kMultiplier0) * c0;
    const std::uint64_t product1 = static_cast<std::uint64_t>(kMultiplier1) * c2;
    const auto hi0 = static_cast<std::uint32_t>(product0 >> 32);
    const auto lo0 = static_cast<std::uint32_t>(product0);
    const auto hi1 = static_cast<std::uint32_t>(product1 >> 32);
    const auto lo1 = static_cast<std::uint32_t>(product1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1) from the top 24 bits of a word: exact in a float.
LORASCOPE_HOST_DEVICE inline float uniformFromWord(std::uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

// One element of an inverted-dropout mask: 0 when the draw is below p, else 1/(1 − p).
LORASCOPE_HOST_DEVICE inline float dropoutFromWord(std::uint32_t word, float p, float keep) {
  return uniformFromWord(word) < p ? 0.0f : keep;
}

}  // namespace lorascope::compute
