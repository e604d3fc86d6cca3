// hip/lora_products.hip — the LoRA backward's two products from dy, the gradient of a projection's
// output (T, n): gᵀ = s·Bᵀ·dyᵀ (r, T), the gradient that flows on to A and to the input, and
// dB += s·dyᵀ·u (n, r). As two vendor GEMMs each reads dy, and each is skinny (one side r).
//
// Note [one pass over dy]: here one kernel reads each dy element once, through shared memory,
// and feeds both products to the matrix cores (gpu::mma; r padded to a 16-wide tile). A block
// covers kSliceColumns columns by a slab of tokens, staging kTileTokens × kHalfColumns tiles (on
// NVIDIA the next one's cp.async copies run while the current one is multiplied):
// - g: wave w takes the tile's tokens 16w..16w+15 against B's rows for the tile's columns, and
//   once both halves of the slice have passed, writes its f32 sums over the slice's columns;
// - dBᵀ: wave w takes its 32 of each half's columns against uᵀ over the tile's tokens, and keeps
//   them over the slab, writing its f32 sums at the end.
// A second kernel adds the slices' g sums (×s, rounded to bf16 once) and the slabs' dB sums (×s,
// added to dB). Every sum runs in an order set by the shapes alone: no atomics, the same bits
// every run. The cut (compute/LoraOutputPlan.h) aims at 512 blocks a site; the partials are
// 2·r·(1/256 + 1/slab tokens) of dy's bytes, and stay in L2 until the second kernel reads them.
// The sites of one call (a group: q, k and v; gate and up) share both launches, each block and
// each summed element finding its site among the launch's (up to kLoraOutputLaunchSites).
//
// On an H200 (bench_gpu_train --prompt-percent 50 --profile-steps 3, B8 × S512) the 224 products
// of a Llama-3.2-1B step took 2.5-2.9 ms against 2.9-3.3 ms of cuBLAS GEMMs, Qwen2.5-0.5B's 336
// 3.0-3.5 ms against 3.7-4.3, and the Llama loop (--packing documents, 3 runs) delivered 83.4K
// real tokens/s against 82.8K. Timed per op, a wide site (64 MiB of dy) took ~29 µs (2.2 TB/s)
// and a small one's two launches 7-12 µs; with a group's sites in one pair of launches the
// products took 2.09-2.12 ms a Llama step against 2.54-2.55 and 2.31-2.33 on Qwen against
// 3.01-3.08 (the Qwen step 32.59-32.63 ms against 32.92-33.35), and the Llama loop delivered 83.2K
// (82.9-83.3K) against 82.7K (82.3-82.9K). Tried and slower: three or four tiles in flight (fewer
// blocks an SM fit their shared memory; Llama's wide sites 0.93 → 1.18 / 0.99 ms a step); 256 to
// 2048 target blocks changed nothing.
#include "compute/hip/lora_products.h"

#include <algorithm>
#include <cstddef>

#include "compute/hip/device_common.h"  // defines: floatToBf16, alignedTo
#include "compute/hip/launch.h"         // defines: launch
#include "compute/hip/matrix_cores.h"   // defines: currentMatrixCores, allowSharedBytes

namespace lorascope::compute::hip {
namespace {

using gpu::floatToBf16;

constexpr int kWaves = 4;
constexpr int kSliceColumns = static_cast<int>(kLoraOutputSliceColumns);
constexpr int kHalfColumns = kSliceColumns / 2;
constexpr int kTileTokens = static_cast<int>(kLoraOutputTileTokens);
static_assert(kTileTokens == 16 * kWaves, "g takes 16 of a tile's tokens a wave");
// Tiles in flight a block (one buffer on AMD, whose copies are plain). Three or four were slower
// on an H200 than two (fewer blocks an SM fit their shared memory): Note [one pass over dy].
constexpr int kStages = gpu::kAsyncCopyStages;
// Shared rows padded by 16 bytes (ldmatrix's 8 row addresses fall in different banks).
constexpr int kDyLd = kHalfColumns + 8;
constexpr int kULd = kTileTokens + 8;
// B's rows for a slice: rank (8 or 16) values a row, as stored, then one row of padding that
// the last row's 16-wide operand reaches into.
constexpr int kBSliceElems = (kSliceColumns + 1) * 16;
constexpr int kDyTileElems = kTileTokens * kDyLd;
constexpr int kUTileElems = 16 * kULd;
// Dynamic shared memory: kStages × (a dy tile and its tokens' uᵀ), then the slice's B rows.
constexpr std::size_t kSharedBytes =
    (kStages * (kDyTileElems + kUTileElems) + kBSliceElems) * sizeof(hip_bfloat16);

template <typename... Params>
__device__ inline void unusedWithoutMatrixCores(const Params&...) {}

// One site of a launch: its operands and outputs, its cut (compute/LoraOutputPlan.h), and where
// its blocks and its sums' elements start among the launch's.
struct SiteArgs {
  const hip_bfloat16* dy;
  const hip_bfloat16* b;
  const hip_bfloat16* uT;
  float* gPartial;  // [slice][t][j]
  float* bPartial;  // [slab][column][j]
  hip_bfloat16* gT;
  hip_bfloat16* g;  // g = gTᵀ (tokens, rank), rows gLd apart, or null
  long long gLd;
  float* gradB;
  long long n;
  long long dyLd;  // elements between dy's rows (n, or more for a column block)
  long long slabTokens;
  long long firstSum;
  int slices;
  int slabs;
  int firstBlock;
};
// The sites of one launch (a group's: Note [one pass over dy]), passed by value.
struct LaunchArgs {
  SiteArgs site[kLoraOutputLaunchSites];
  int count;
  long long tokens;
  int rank;
  float scale;
};

// Site `index` of the launch, each read at a fixed position (an index computed on the device
// into a parameter array would copy the array to local memory).
__device__ inline SiteArgs siteOf(const LaunchArgs& args, int index) {
  static_assert(kLoraOutputLaunchSites == 4, "siteOf names each site");
  switch (index) {
    case 0:
      return args.site[0];
    case 1:
      return args.site[1];
    case 2:
      return args.site[2];
    default:
      return args.site[3];
  }
}

// The site whose range of `first` (blocks or sum elements) holds `at`.
template <typename First>
__device__ inline int siteHolding(const LaunchArgs& args, long long at, First first) {
  int index = 0;
#pragma unroll
  for (int i = 1; i < static_cast<int>(kLoraOutputLaunchSites); ++i) {
    if (i < args.count && at >= first(siteOf(args, i))) {
      index = i;
    }
  }
  return index;
}

// grid (Σ slices × slabs over the sites), block kWaves waves. Writes each site's gPartial and
// bPartial for j < rank.
__global__ void LORASCOPE_LAUNCH_BOUNDS_BLOCKS(kWaves* gpu::kWaveSize, 4)
    loraOutputKernel(LaunchArgs args) {
#if defined(LORASCOPE_GPU_MMA)
  namespace mma = gpu::mma;
  const SiteArgs site =
      siteOf(args, siteHolding(args, blockIdx.x, [](const SiteArgs& a) { return a.firstBlock; }));
  const long long tokens = args.tokens;
  const int rank = args.rank;
  const hip_bfloat16* dy = site.dy;
  const long long dyLd = site.dyLd;
  const hip_bfloat16* b = site.b;
  const hip_bfloat16* uT = site.uT;
  const long long n = site.n;
  const long long local = static_cast<long long>(blockIdx.x) - site.firstBlock;
  const long long slice = local % site.slices;
  const long long slab = local / site.slices;
  extern __shared__ __align__(16) unsigned char loraShared[];
  auto* dyTiles = reinterpret_cast<hip_bfloat16*>(loraShared);
  hip_bfloat16* uTiles = dyTiles + kStages * kDyTileElems;
  hip_bfloat16* bRows = uTiles + kStages * kUTileElems;
  const int wave = static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  const long long n0 = slice * kSliceColumns;
  const long long t0 = slab * site.slabTokens;
  const long long tEnd = min(tokens, t0 + site.slabTokens);
  const int tiles = 2 * static_cast<int>((tEnd - t0 + kTileTokens - 1) / kTileTokens);
  // g's products a half: all unrolled, but by two where operands crowd the registers (RDNA 3's
  // WMMA: AMDGPU hoists every unrolled step's operand loads, and gfx1100 spilled 31 VGPRs).
  constexpr int kColumnSteps = mma::kRegisterTight ? 2 : kHalfColumns / 16;

  // Tile i: tokens t0 + (i / 2)·kTileTokens on, half i % 2 of the slice's columns; zeros past
  // the slab, the tokens and n.
  const auto stage = [&](int i, int buffer) {
    const long long tt = t0 + static_cast<long long>(i / 2) * kTileTokens;
    const long long c0 = n0 + (i % 2) * kHalfColumns;
    hip_bfloat16* dst = dyTiles + buffer * kDyTileElems;
    constexpr int piecesPerRow = kHalfColumns / 8;
    for (int idx = static_cast<int>(threadIdx.x); idx < kTileTokens * piecesPerRow;
         idx += static_cast<int>(blockDim.x)) {
      const int r = idx / piecesPerRow;
      const int c = idx % piecesPerRow * 8;
      const bool inside = tt + r < tEnd && c0 + c < n;
      mma::copy16Async(dst + r * kDyLd + c, inside ? dy + (tt + r) * dyLd + c0 + c : dy, inside);
    }
    hip_bfloat16* uDst = uTiles + buffer * kUTileElems;
    constexpr int uPiecesPerRow = kTileTokens / 8;
    for (int idx = static_cast<int>(threadIdx.x); idx < 16 * uPiecesPerRow;
         idx += static_cast<int>(blockDim.x)) {
      const int j = idx / uPiecesPerRow;
      const int t = idx % uPiecesPerRow * 8;
      const bool inside = j < rank && tt + t < tEnd;
      mma::copy16Async(uDst + j * kULd + t, inside ? uT + j * tokens + tt + t : uT, inside);
    }
  };

  mma::FragC g;
  mma::zero(g);
  mma::FragC db0[2];  // dBᵀ of the first half's columns: 16 of the wave's 32 each
  mma::FragC db1[2];  // ... and of the second half's
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    mma::zero(db0[nt]);
    mma::zero(db1[nt]);
  }
  // B's rows for the slice's columns as stored (rank values each, no padding: their 16-wide
  // operand then reads the next row's values as its columns rank..15 at rank 8, which only
  // reach g's columns past the rank, never stored), copied with the first tile (one group of
  // copies); zeros past n.
  const int bPieces = kSliceColumns * rank / 8;
  for (int idx = static_cast<int>(threadIdx.x); idx < bPieces + 2;
       idx += static_cast<int>(blockDim.x)) {
    const bool inside = idx < bPieces && (n0 + idx * 8 / rank) < n;
    mma::copy16Async(bRows + idx * 8, inside ? b + n0 * rank + idx * 8 : b, inside);
  }
  // Tiles 0 .. kStages − 2 in flight before the loop (the first with B's rows), one group each;
  // each step then issues the tile kStages − 1 ahead (an empty group past the end, so that the
  // count of groups still pending says that tile i has landed).
  for (int ahead = 0; ahead < kStages - 1 || ahead == 0; ++ahead) {
    if (ahead < tiles) {
      stage(ahead, ahead);
    }
    mma::copyAsyncCommit();
  }
  for (int i = 0; i < tiles; ++i) {
    const int buffer = i % kStages;
    if constexpr (kStages > 1) {
      const int ahead = i + kStages - 1;
      if (ahead < tiles) {
        stage(ahead, ahead % kStages);
      }
      mma::copyAsyncCommit();
      mma::copyAsyncWait<kStages - 1>();
    } else if (i > 0) {
      stage(i, buffer);
    }
    __syncthreads();
    const hip_bfloat16* tile = dyTiles + buffer * kDyTileElems;
    const hip_bfloat16* uTile = uTiles + buffer * kUTileElems;
    // g (the wave's 16 tokens, j) += dy (16, the half's 128 columns) · B (128, j), and dBᵀ (j,
    // the wave's 32 columns of the half) += uᵀ (j, the tile's tokens) · dy (tokens, 32 columns).
    // The halves' accumulators are named apart (an index by i would put them in local memory).
    const int half = i % 2;
    const auto multiply = [&](mma::FragC(&dbHalf)[2]) {
#pragma unroll kColumnSteps
      for (int kk = 0; kk < kHalfColumns / 16; ++kk) {
        mma::FragA a;
        mma::FragB bOp;
        mma::loadA(a, tile + wave * 16 * kDyLd + kk * 16, kDyLd);
        mma::loadB(bOp, bRows + (half * kHalfColumns + kk * 16) * rank, rank);
        mma::mma(g, a, bOp);
      }
#pragma unroll
      for (int kt = 0; kt < kTileTokens / 16; ++kt) {
        mma::FragA a;
        mma::loadA(a, uTile + kt * 16, kULd);
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          mma::FragB bOp;
          mma::loadB(bOp, tile + kt * 16 * kDyLd + wave * 32 + nt * 16, kDyLd);
          mma::mma(dbHalf[nt], a, bOp);
        }
      }
    };
    if (half == 0) {
      multiply(db0);
    } else {
      multiply(db1);
    }
    if (half == 1) {  // the tile's tokens have met every column of the slice
      const long long tw = t0 + static_cast<long long>(i / 2) * kTileTokens + wave * 16;
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        const long long t = tw + mma::slotRow(mma::accSlot(e));
        const int j = mma::accCol(e);
        if (j < rank && t < tEnd) {
          site.gPartial[(slice * tokens + t) * rank + j] = g.v[e];
        }
      }
      mma::zero(g);
    }
    __syncthreads();
  }
  const auto writeHalf = [&](const mma::FragC(&dbHalf)[2], int h) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        const int j = mma::slotRow(mma::accSlot(e));
        const long long c = n0 + h * kHalfColumns + wave * 32 + nt * 16 + mma::accCol(e);
        if (j < rank && c < n) {
          site.bPartial[(slab * n + c) * rank + j] = dbHalf[nt].v[e];
        }
      }
    }
  };
  writeHalf(db0, 0);
  writeHalf(db1, 1);
#else
  unusedWithoutMatrixCores(args);
#endif
}

// Σ_i p[i·stride], i < count, in kLanes interleaved partial sums added in order at the end: the
// loads of a round are in flight together (one after another, each waited out a latency), and
// the order is the same every run.
constexpr int kLanes = 8;
__device__ inline float sumPartials(const float* p, long long stride, int count) {
  float lane[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= count; i += kLanes) {
#pragma unroll
    for (int l = 0; l < kLanes; ++l) {
      lane[l] += p[(i + l) * stride];
    }
  }
#pragma unroll
  for (int l = 0; l < kLanes; ++l) {
    if (i + l < count) {
      lane[l] += p[(i + l) * stride];
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int l = 0; l < kLanes; ++l) {
    sum += lane[l];
  }
  return sum;
}

// Each site's gT[j][t] = bf16(scale·Σ_slices gPartial[slice][t][j]) (and g[t][j], the same,
// where the site has g) and gradB[c][j] += scale·Σ_slabs bPartial[slab][c][j], the partials in
// index order; the elements of the sites one after another.
__global__ void loraOutputSumKernel(LaunchArgs args, long long total) {
  const long long tokens = args.tokens;
  const int rank = args.rank;
  const long long gCount = tokens * rank;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const SiteArgs site =
        siteOf(args, siteHolding(args, e, [](const SiteArgs& a) { return a.firstSum; }));
    const long long local = e - site.firstSum;
    if (local < gCount) {
      const hip_bfloat16 value =
          floatToBf16(args.scale * sumPartials(site.gPartial + local, gCount, site.slices));
      site.gT[local % rank * tokens + local / rank] = value;
      if (site.g != nullptr) {
        site.g[local / rank * site.gLd + local % rank] = value;
      }
    } else {
      const long long f = local - gCount;
      site.gradB[f] += args.scale * sumPartials(site.bPartial + f, site.n * rank, site.slabs);
    }
  }
}

constexpr int kSumThreads = 256;

}  // namespace

bool loraOutputProductsServe(const std::uint16_t* dy, std::int64_t dyLd, const std::uint16_t* b,
                             const std::uint16_t* uT, std::int64_t tokens, std::int64_t n,
                             std::int64_t rank) {
  return loraOutputRankServed(rank) && n % 8 == 0 && dyLd % 8 == 0 && tokens % 8 == 0 &&
         gpu::alignedTo(dy, 16) && gpu::alignedTo(b, 16) && gpu::alignedTo(uT, 16) &&
         currentMatrixCores().available;
}

std::int64_t loraOutputPartialFloats(const LoraOutputJob* sites, std::size_t count,
                                     std::int64_t tokens, std::int64_t rank) {
  std::int64_t floats = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const LoraOutputPlan plan = loraOutputPlan(tokens, sites[i].n, rank);
    floats += plan.gPartialFloats + plan.bPartialFloats;
  }
  return floats;
}

void loraOutputProducts(const LoraOutputJob* sites, std::size_t count, std::int64_t tokens,
                        std::int64_t rank, float scale, float* partials, hipStream_t stream) {
  if (count == 0 || count > kLoraOutputLaunchSites || tokens == 0) {
    return;
  }
  LaunchArgs args{};
  args.count = static_cast<int>(count);
  args.tokens = tokens;
  args.rank = static_cast<int>(rank);
  args.scale = scale;
  long long blocks = 0;
  long long total = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const LoraOutputJob& job = sites[i];
    const LoraOutputPlan plan = loraOutputPlan(tokens, job.n, rank);
    SiteArgs& site = args.site[i];
    site.dy = reinterpret_cast<const hip_bfloat16*>(job.dy);
    site.b = reinterpret_cast<const hip_bfloat16*>(job.b);
    site.uT = reinterpret_cast<const hip_bfloat16*>(job.uT);
    site.gPartial = partials;
    site.bPartial = partials + plan.gPartialFloats;
    partials += plan.gPartialFloats + plan.bPartialFloats;
    site.gT = reinterpret_cast<hip_bfloat16*>(job.gT);
    site.g = reinterpret_cast<hip_bfloat16*>(job.g);
    site.gLd = job.gLd;
    site.gradB = job.gradB;
    site.n = job.n;
    site.dyLd = job.dyLd;
    site.slabTokens = plan.slabTokens;
    site.slices = static_cast<int>(plan.slices);
    site.slabs = static_cast<int>(plan.slabs);
    site.firstBlock = static_cast<int>(blocks);
    site.firstSum = total;
    blocks += plan.slices * plan.slabs;
    total += (tokens + job.n) * rank;
  }
  allowSharedBytes(loraOutputKernel, kSharedBytes);
  launch("lora_output_gemm", loraOutputKernel, dim3(static_cast<unsigned>(blocks)),
         dim3(static_cast<unsigned>(kWaves * currentMatrixCores().waveSize)), kSharedBytes, stream,
         args);
  const long long sumBlocks = std::min<long long>((total + kSumThreads - 1) / kSumThreads, 65535);
  launch("lora_output_gemm", loraOutputSumKernel, dim3(static_cast<unsigned>(sumBlocks)),
         dim3(kSumThreads), 0, stream, args, total);
}

}  // namespace lorascope::compute::hip
