// hip/lora_products.h — the LoRA backward's products from the gradient of a projection's output
// (Backend::loraOutputProducts), in one pass over it on the matrix cores. Plain C++17
// declarations, callable from host code; hip/lora_products.hip defines them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/LoraOutputPlan.h"  // defines: LoraOutputPlan
#include "gpu/hip_portability.h"     // defines: hipStream_t

namespace lorascope::compute::hip {

// Whether the kernel serves this product on the current device: matrix cores, a rank it takes
// (loraOutputRankServed), n, dy's row stride dyLd and tokens multiples of 8, dy, b and uT on 16
// bytes.
bool loraOutputProductsServe(const std::uint16_t* dy, std::int64_t dyLd, const std::uint16_t* b,
                             const std::uint16_t* uT, std::int64_t tokens, std::int64_t n,
                             std::int64_t rank);

// The sites a launch takes (a group's: q, k and v are three).
inline constexpr std::size_t kLoraOutputLaunchSites = 4;

// One site: gT (rank, tokens) = bf16(scale·bᵀ·dyᵀ) and gradB (n, rank) += scale·dyᵀ·uTᵀ, reading dy
// once:   dy (tokens, n) bf16, its rows dyLd elements apart (a column block of a wider tensor when
// dyLd > n)   b (n, rank) bf16   uT (rank, tokens) bf16   gradB (n, rank) f32
struct LoraOutputJob {
  const std::uint16_t* dy = nullptr;
  const std::uint16_t* b = nullptr;
  const std::uint16_t* uT = nullptr;
  std::int64_t n = 0;
  std::int64_t dyLd = 0;
  float* gradB = nullptr;
  std::uint16_t* gT = nullptr;
  // When set, g = gTᵀ (tokens, rank) here too, its rows gLd elements apart (a folded group's
  // columns beside dy: Note [the LoRA term in the inner dimension] in train/TrainGraph.cpp).
  std::uint16_t* g = nullptr;
  std::int64_t gLd = 0;
};

// The f32 scratch a launch of these sites needs: their plans' partial sums, one after another.
std::int64_t loraOutputPartialFloats(const LoraOutputJob* sites, std::size_t count,
                                     std::int64_t tokens, std::int64_t rank);

// Up to kLoraOutputLaunchSites sites of the same tokens and rank in two launches (the products,
// then the partial sums added). Each output element's sum runs in a fixed order that depends only
// on the shapes, so the results are the same from run to run.
void loraOutputProducts(const LoraOutputJob* sites, std::size_t count, std::int64_t tokens,
                        std::int64_t rank, float scale, float* partials, hipStream_t stream);

}  // namespace lorascope::compute::hip
