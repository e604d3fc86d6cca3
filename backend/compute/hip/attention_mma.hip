// hip/attention_mma.hip — the matrix-core attention kernels, forward and backward, head dims up to
// 128: tensor cores on NVIDIA sm_80+, MFMA on CDNA 2/3, WMMA on RDNA 3/4, through gpu::mma of the
// portability header. The dispatcher (hip/attention.hip) runs them where the device has matrix
// cores; the vector kernels (hip/attention_vector.hip) serve every other case. What both families
// share (units, masks, soft-capping): hip/attention_kernels.h.
//
// A block has kMmaWaves waves; each wave owns 16 rows (query rows in the forward and dq kernels,
// key rows in the dk/dv kernel) and multiplies 16×16 bf16 tiles staged in shared memory into f32
// accumulators. Q·Kᵀ, dO·Vᵀ and K·Qᵀ, V·dOᵀ take their B operand row by row (loadBt); P·V, dS·K,
// Pᵀ·dO and dSᵀ·Q take it transposed (loadB). P and dS enter their product as a pair of bf16
// operands (accToASplit: hi + lo, ~16 significant bits), not as one rounded bf16 as in
// FlashAttention-2: one bf16 P gives errors of 2^-9·Σ|p·v|, which where the sum cancels are
// several times the parity tolerance. The second product cost ~10% of the kernels' time on an
// H100 (bench_attention, Qwen2.5-0.5B shape). Softmax statistics, masks and
// soft-capping are applied per accumulator element in fp32, in the same units (log2) as the vector
// kernels; the dk/dv partials and their group sum are those kernels' too, so the backward
// stays free of atomics. The dq kernel also computes D = rowsum(dO ∘ O) for its rows, in place of
// the vector path's separate row-dot kernel. Packed documents (attention_kernels.h) cost a
// shared int per query row (rowStarts; in dk/dv one per streamed query beside its logsumexp) and
// two wave-uniform bounds: tiles before a wave's first start are skipped, and only tiles that
// reach before its last start are masked element by element. K/V (forward, dq)
// and Q/dO (dk/dv) tiles stream through kStages buffers: on NVIDIA the next tile's cp.async copies
// run while the current one is multiplied.
//
// Note [softmax's exponentials]: the kernels take 2^x by gpu::exp2Fast, on NVIDIA ex2.approx.ftz
// alone, where exp2f wraps the same instruction in a test and two multiplies that keep results
// below 2^-126: a P or a rescale that small adds nothing beside the row's largest term (1), and
// no parity case moved. The integer and logic pipe was the kernels' busiest (Nsight Compute,
// scripts/gpu-check.sh ncu attention: 33% of the forward's cycles, 27% of dq's). On an H200
// (bench_gpu_train --prompt-percent 50 --profile-steps 3, 2 rounds beside the tree before in one
// call) the Llama-3.2-1B backward took 5.30-5.31 ms a step against 5.58-5.64 and the forward
// 1.82-1.83 against 1.90-1.91 (Qwen2.5-0.5B: 4.11 against 4.40-4.43, 1.39 against 1.45); the
// Llama step 43.97-44.16 ms against 44.40-44.60. AMD keeps exp2f (see gpu::exp2Fast).
//
// Note [registers on RDNA]. WMMA's operands on RDNA are large per lane (gfx11: 16 bf16, lanes
// 16-31 repeating lanes 0-15; gfx12: 8; MFMA: 4), and AMDGPU's scheduler hoists a pass's operand
// loads ahead of their products: the layout that suits NVIDIA and CDNA spilled 66-440 VGPRs per
// lane on gfx11 and up to 75 on gfx12 (ROCm 6.4's clang). On the targets the portability header
// marks register-tight (gpu::mma::kRegisterTight), with the same arithmetic:
// - forward and dq keep no A operands of their rows in registers: Q (and dO) stay in the dynamic
//   buffer where they were staged and are read at each use, and keys stream through a static
//   K/V buffer (tightKeyTiles) in tiles of kTightKeys = 32, one softmax (or dq) pass per tile;
// - the soft-cap test is taken once per pass (capScoresWithDp; since Note [masked passes apart]
//   on every target), and masked scores become −inf before exp2 rather than selecting after it,
//   so that no per-element branch splits the pass;
// - dk/dv at head dim 128 runs its query loop twice, accumulating half the head dim each time
//   (dk and dv of 16 keys × 128 dims alone would take 128 of a lane's 256 VGPRs).
// Every kernel then spills nothing on gfx1100-gfx1151 and gfx1200/1201; NVIDIA and CDNA compile
// as before. CI fails when one spills again (check-amd-code-objects.sh --no-spill).
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "compute/hip/attention_kernels.h"  // defines: Dims, visible, capScore, rowOffset
#include "compute/hip/launch.h"             // defines: launch

namespace lorascope::compute::hip::attention {
namespace {

constexpr int kMmaWaves = 4;
constexpr int kMmaBlockRows = kMmaWaves * 16;  // query rows (forward, dq) or key rows (dk/dv)
[[maybe_unused]] constexpr int kMmaKeys = 64;  // keys per shared tile (forward, dq)
constexpr int kMmaScratch = 256;               // bf16 per wave for accToA
// Shared rows padded by 16 bytes, so that the 8 rows an ldmatrix (or a lane group) reads start
// in different banks.
template <int HDP>
constexpr int kMmaLd = HDP + 8;
// dq: keys per register pass (the score and dO·Vᵀ accumulators of a pass stay live together;
// Note [backward occupancy]).
[[maybe_unused]] constexpr int kDqKeyChunk = 32;
// dk/dv: queries per shared tile (K, V, Q and dO tiles fit 64 KiB, AMD's limit per block; Note
// [backward occupancy]).
constexpr int kDkDvQueries = 32;

constexpr int kStages = gpu::kAsyncCopyStages;  // buffers per streamed tile
// Register-tight targets (Note [registers on RDNA]): keys per streamed tile and softmax pass.
[[maybe_unused]] constexpr int kTightKeys = 32;

// Dynamic shared memory of the matrix-core kernels, in bytes (NVIDIA lets them past 48 KiB on
// request; AMD's single-buffered layout stays within its 64 KiB).
template <int HDP>
struct MmaShared {
  static constexpr std::size_t row = kMmaLd<HDP> * sizeof(std::uint16_t);  // a tile row
  static constexpr std::size_t scratch = kMmaWaves * kMmaScratch * sizeof(std::uint16_t);
  // forward, dq: kStages × (K and V tiles of kMmaKeys rows), then the waves' scratch
  static constexpr std::size_t keyLoop = kStages * 2 * kMmaKeys * row + scratch;
  // dk/dv: K and V tiles of the block's keys, kStages × (Q and dO tiles, logsumexp, D and the
  // document starts), scratch
  static constexpr std::size_t queries = kDkDvQueries;
  static constexpr std::size_t queryStage =
      2 * queries * row + 2 * queries * sizeof(float) + queries * sizeof(int);
  static constexpr std::size_t dkDv = 2 * kMmaBlockRows * row + kStages * queryStage + scratch;
};

// The matrix-core kernels compile to empty bodies for targets without matrix cores (RDNA 2, the
// host pass); their launcher never picks them there.
template <typename... Params>
__device__ inline void unusedWithoutMatrixCores(const Params&...) {}

#if defined(LORASCOPE_GPU_MMA)
namespace mma = gpu::mma;

// dst[r][c] (row stride kMmaLd) = src row t0 + r, element c; zero outside rows [0, rows) and
// [0, headDim). Head dims 8k: 16-byte asynchronous copies (the caller commits and waits for
// them); others: element by element, finished when this returns.
template <int HDP>
__device__ void loadTileBf16(hip_bfloat16* dst, const hip_bfloat16* src, long long tokenStride,
                             int t0, int rows, int tileRows, int headDim) {
  constexpr int ld = kMmaLd<HDP>;
  if (headDim % 8 == 0) {
    constexpr int vectorsPerRow = HDP / 8;
    for (int idx = static_cast<int>(threadIdx.x); idx < tileRows * vectorsPerRow;
         idx += static_cast<int>(blockDim.x)) {
      const int r = idx / vectorsPerRow;
      const int c = idx % vectorsPerRow * 8;
      const bool inside = r < rows && c < headDim;
      mma::copy16Async(dst + r * ld + c, inside ? src + (t0 + r) * tokenStride + c : src, inside);
    }
    return;
  }
  for (int idx = static_cast<int>(threadIdx.x); idx < tileRows * HDP;
       idx += static_cast<int>(blockDim.x)) {
    const int r = idx / HDP;
    const int c = idx % HDP;
    dst[r * ld + c] =
        (r < rows && c < headDim) ? src[(t0 + r) * tokenStride + c] : floatToBf16(0.0f);
  }
}

// Register-tight targets only: the K and V tiles of kTightKeys rows each that the forward and dq
// kernels stream keys through, beside the dynamic buffer (which keeps the block's Q and dO tiles
// there). Static, so the host's MmaShared sizes are those of every target.
template <int HDP>
__device__ hip_bfloat16* tightKeyTiles() {
  __shared__ __align__(16) hip_bfloat16 keyTiles[2 * kTightKeys * kMmaLd<HDP>];
  return keyTiles;
}

// The document starts of a block's kMmaBlockRows query rows from r0 (rows past the end: the last
// row's), one int per row in shared memory; read after the next barrier.
__device__ inline void stageRowStarts(const Dims& d, int b, int r0, int* rowStarts) {
  for (int r = static_cast<int>(threadIdx.x); r < kMmaBlockRows;
       r += static_cast<int>(blockDim.x)) {
    rowStarts[r] = documentStart(d, b, min(r0 + r, d.seq - 1));
  }
}

// s ← capScore(s·scaleLog2) over a pass's N score tiles and, with dp, dp ← (dp − D)·slope (D =
// dOf(n, e)), the soft-cap test taken once per pass: per element, its tanh branches split the
// unrolled pass into ~100 blocks across which AMDGPU keeps every accumulator live (Note
// [registers on RDNA]), and on other targets they cost integer work (Note [masked passes
// apart]).
template <int N, typename DOf>
__device__ inline void capScoresWithDp(const Dims& d, mma::FragC* s, mma::FragC* dp,
                                       float scaleLog2, DOf dOf) {
  if (d.softcap > 0.0f) {
#pragma unroll
    for (int n = 0; n < N; ++n) {
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        float slope;
        s[n].v[e] = capScore(d, s[n].v[e] * scaleLog2, &slope);
        if (dp != nullptr) {
          dp[n].v[e] = (dp[n].v[e] - dOf(n, e)) * slope;
        }
      }
    }
  } else {
#pragma unroll
    for (int n = 0; n < N; ++n) {
#pragma unroll
      for (int e = 0; e < mma::kAccElems; ++e) {
        s[n].v[e] *= scaleLog2;
        if (dp != nullptr) {
          dp[n].v[e] -= dOf(n, e);
        }
      }
    }
  }
}
template <int N>
__device__ inline void capScores(const Dims& d, mma::FragC (&s)[N], float scaleLog2) {
  capScoresWithDp<N>(d, s, nullptr, scaleLog2, [](int, int) { return 0.0f; });
}

// Note [masked passes apart]: on targets that are not register-tight a pass's scores are capped
// once (capScoresWithDp; in dq a 16-key tile at a time, which keeps its registers within 128) and
// only a masked pass tests each element (hidden(n, e): the element is not visible), in a loop of
// its own behind one wave-uniform branch. With the test folded into every element, the compiler
// predicated it, so every element of every pass paid its compares and selects on the integer
// pipe, the kernels' busiest (Nsight Compute: the forward's SASS at head dim 64 held 539 ISETP and
// 155 BSSY/BSYNC pairs for 96 HMMA). On an H200 (bench_gpu_train --prompt-percent 50
// --profile-steps 3, 2 rounds beside the tree before in one call) Llama-3.2-1B's attention
// backward took 4.71-4.74 ms a step against 5.30-5.32 and its forward 1.56 against 1.83-1.84;
// Qwen2.5-0.5B's 3.59 against 4.08-4.09 and 1.18 against 1.39; the Llama step 43.12-43.40 ms
// against 43.53-43.95 and the Qwen step 29.60-29.88 against 30.57-30.95. Under ncu the forward took
// 110 µs a call against 138, dq 134 against 147, dk/dv 186 against 220. Taking only the soft-cap
// test out of the elements had moved the forward by 2% (1.79-1.83 to 1.76-1.77 ms). The
// register-tight targets keep their form (Note [registers on RDNA]): s[n].v[e] ← −inf where
// hidden.
template <int N, typename Hidden>
__device__ inline void maskScores(mma::FragC* s, Hidden hidden) {
#pragma unroll
  for (int n = 0; n < N; ++n) {
#pragma unroll
    for (int e = 0; e < mma::kAccElems; ++e) {
      if (hidden(n, e)) {
        s[n].v[e] = -INFINITY;
      }
    }
  }
}

// Writes accumulator element e of a row's column c (< headDim), times factor, at p[at] (f32 or
// bf16), and, where the target pairs columns (mma::kAccColumnPairs: e even, c even), element
// e + 1 at p[at + 1] in the same store (8 bytes, or 4 for bf16) when the head dim is even (at is
// then even too) and p starts on two elements. Step is how far the epilogue steps e:
// kAccStoreStep (pairs where the target has them) or 1 (element by element everywhere).
//
// Note [paired stores]: element by element, a lane quad wrote every other value of a row's
// sector, then the rest; in pairs its stores fill the sector at once, with half the store
// instructions. On an H200 (bench_attention, 3 runs each beside the element-wise stores) the
// dk/dv partials in pairs (with the group sum's packs, hip/attention.hip) took the Llama-3.2-1B
// backward (B8 × S512) from 0.375 to 0.360 ms a call, and the forward's output in pairs its
// forward from 0.117 to 0.109-0.110 (Qwen2.5-0.5B 0.066-0.067 to 0.060-0.061). dq's output in
// pairs took the Llama-3.1-8B backward (head dim 128) from 1.128-1.131 to 1.122-1.125 ms, but at
// head dim 64 it needs 171 registers, one block an SM fewer (0.359 to 0.371 ms; held to 168
// registers it spilled and took 0.370): there dq stores element by element.
constexpr int kAccStoreStep = mma::kAccColumnPairs ? 2 : 1;
template <int Step = kAccStoreStep, typename T>
__device__ inline void storeAcc(T* p, long long at, const mma::FragC& acc, int e, float factor,
                                int c, int headDim) {
  if constexpr (Step == 2) {
    if (headDim % 2 == 0 && reinterpret_cast<std::uintptr_t>(p) % (2 * sizeof(T)) == 0) {
      const float pair[2] = {acc.v[e] * factor, acc.v[e + 1] * factor};
      if constexpr (std::is_same_v<T, float>) {
        *reinterpret_cast<float2*>(p + at) = make_float2(pair[0], pair[1]);
      } else {
        gpu::storePack(p, at, pair);
      }
      return;
    }
  }
  const auto put = [p](long long i, float x) {
    if constexpr (std::is_same_v<T, float>) {
      p[i] = x;
    } else {
      p[i] = floatToBf16(x);
    }
  };
  put(at, acc.v[e] * factor);
  if (Step == 2 && c + 1 < headDim) {
    put(at + 1, acc.v[e + 1] * factor);
  }
}
#endif

// Note [forward occupancy]: on NVIDIA the forward kernel is held to the registers of
// kForwardBlocks<HDP> resident blocks an SM. Left to itself, ptxas gave head dim 64 143 registers
// (3 blocks of 4 warps an SM) and head dim 128 193. Held to 4 blocks (128 registers, 72 bytes
// spilled) and to 1 (238 registers, no spill, still 2 blocks), the forward took 0.117-0.118 and
// 0.338-0.342 ms a call where it had taken 0.124 and 0.405 (bench_attention on an H200:
// Llama-3.2-1B, B8 × S512; Llama-3.1-8B, B1 × S2048). At head dim 64 a softmax pass now takes 32
// keys (two a streamed tile, as on the register-tight targets): its scores need half the
// registers, the 4 blocks spill 8 bytes, not 76, and the forward took 0.108 ms against 0.110-0.111
// (Qwen2.5-0.5B 0.058-0.059 against 0.060). At head dim 128 32-key passes were slower (0.351-0.352
// against 0.334-0.336; 0.332-0.334 held to 3 blocks): it keeps 64. Two 16-row tiles a wave at
// head dim 64 (128 rows a block, each K and V operand loaded once for both) were slower in every
// form (bench_attention, 3 rounds beside this in one call, Llama-3.2-1B dense / its chat-length
// documents): Q kept in registers, 220 registers and 2 blocks, 0.111-0.112 / 0.103-0.104 ms
// against 0.086-0.087 / 0.062-0.063; held to 3 blocks (172 bytes spilled) 0.109-0.110 /
// 0.094-0.095; Q read from shared memory at each use, 168 registers and 3 blocks, 0.102-0.103 /
// 0.089-0.090. Half the waves, and each wave's 32 rows skip fewer masked passes.
//
// Note [backward occupancy]: at head dim 64 the backward kernels run 4 blocks an SM (kDqBlocks,
// kDkDvBlocks: 128 registers). dq passed 64 keys at a time and took 168 registers (3 blocks); held
// to 4 it spilled and was slower (0.391-0.394 ms against 0.383 for the Llama backward), and to 1
// (206 registers) 0.423-0.425. With 32-key passes (kDqKeyChunk, as at head dim 128) a pass's
// scores need half the registers, and held to 4 blocks it fits 128 with 4 bytes spilled: with the
// row dot read 16 bytes at a time the Llama backward went from 0.358-0.362 to 0.334-0.337 ms a
// call, Qwen2.5-0.5B's from 0.187-0.188 to 0.179-0.181 (32-key passes and 4 blocks alone:
// 0.341-0.342; the row dot alone: 0.354-0.356). dk/dv streamed 64 queries a tile: ~59 KiB of
// shared memory a block, 3 blocks an SM at 125 registers; with 32-query tiles (~40 KiB) held to 4
// blocks it fits 128 registers with no spill, and the Llama backward went from 0.337-0.339 to
// 0.328-0.330 (Qwen2.5-0.5B the same, 0.181-0.183). Keeping a wave's K and V operands in registers
// across its queries instead (160 registers, 3 blocks) had taken it from 0.383-0.385 to
// 0.374-0.375 before; with 32-query tiles at 4 blocks that spilled 136 bytes (0.353-0.354). (H200,
// bench_attention, 3 runs each beside the tree before, in one call.)
template <int HDP>
constexpr int kForwardBlocks = HDP <= 64 ? 4 : 1;
template <int HDP>
constexpr int kDqBlocks = HDP <= 64 ? 4 : 1;
template <int HDP>
constexpr int kDkDvBlocks = HDP <= 64 ? 4 : 1;

// grid (ceil(S / 64), heads, B), block kMmaWaves waves.
template <int HDP>
__global__ void LORASCOPE_LAUNCH_BOUNDS_BLOCKS(kMmaWaves* gpu::kWaveSize, kForwardBlocks<HDP>)
    attentionForwardMmaKernel(const hip_bfloat16* q, const hip_bfloat16* k, const hip_bfloat16* v,
                              Dims dims, float scaleLog2, hip_bfloat16* out, float* logsumexp) {
#if defined(LORASCOPE_GPU_MMA)
  constexpr int ld = kMmaLd<HDP>;
  constexpr int steps = HDP / 16;
  constexpr bool tight = mma::kRegisterTight;
  constexpr int tileKeys = tight ? kTightKeys : kMmaKeys;  // keys per tile
  // keys per softmax pass (Note [forward occupancy])
  constexpr int passKeys = tight || HDP <= 64 ? kTightKeys : kMmaKeys;
  constexpr int keyBlocks = passKeys / 16;
  constexpr int slots = mma::kAccRowSlots;
  constexpr int tileElems = kMmaKeys * ld;
  // Stage s: K tile at tiles + 2s·tileElems, V tile after it; the waves' scratch after the last.
  // Register-tight targets keep Q in the first K tile and stream K and V through tightKeyTiles.
  extern __shared__ __align__(16) unsigned char forwardShared[];
  auto* tiles = reinterpret_cast<hip_bfloat16*>(forwardShared);
  hip_bfloat16* scratch = tiles + kStages * 2 * tileElems;

  const int wave = static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  hip_bfloat16* waveScratch = scratch + wave * kMmaScratch;
  const int r0 = lastRowsFirst() * kMmaBlockRows;
  const int w0 = r0 + wave * 16;  // this wave's first query row
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const long long qStride = static_cast<long long>(dims.heads) * dims.headDim;
  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;

  // Q through shared memory into A operands, kept for the whole key loop (register-tight
  // targets read them from the staged tile at each use instead).
  loadTileBf16<HDP>(tiles, q + rowOffset(dims, dims.heads, b, 0, h), qStride, r0,
                    min(kMmaBlockRows, dims.seq - r0), kMmaBlockRows, dims.headDim);
  __shared__ int rowStarts[kMmaBlockRows];
  stageRowStarts(dims, b, r0, rowStarts);
  mma::copyAsyncCommit();
  mma::copyAsyncWait<0>();
  __syncthreads();
  const int* waveStarts = rowStarts + wave * 16;
  const int firstStart = waveStarts[0];  // the wave's rows see no key before this
  const int lastStart = waveStarts[15];  // ... and every key from this on (up to the diagonal)
  const hip_bfloat16* qRows = tiles + wave * 16 * ld;
  mma::FragA qa[steps];
  if constexpr (!tight) {
#pragma unroll
    for (int kk = 0; kk < steps; ++kk) {
      mma::loadA(qa[kk], qRows + kk * 16, ld);
    }
  }
  mma::FragC o[steps];
#pragma unroll
  for (int n = 0; n < steps; ++n) {
    mma::zero(o[n]);
  }
  float runningMax[slots];
  float runningSum[slots];  // this lane's share; summed over the row's lanes at the end
#pragma unroll
  for (int sl = 0; sl < slots; ++sl) {
    runningMax[sl] = -INFINITY;
    runningSum[sl] = 0.0f;
  }

  const hip_bfloat16* kBase = k + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const hip_bfloat16* vBase = v + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const int keyEnd = min(r0 + kMmaBlockRows, dims.seq);
  const int firstKey = firstVisibleKey(dims, b, r0);
  hip_bfloat16* keyTiles = tiles;
  if constexpr (tight) {
    keyTiles = tightKeyTiles<HDP>();
  }
  const auto stageKeys = [&](int t0, int stage) {
    const int rows = min(tileKeys, dims.seq - t0);
    hip_bfloat16* kDst = tight ? keyTiles : tiles + 2 * stage * tileElems;
    loadTileBf16<HDP>(kDst, kBase, kvStride, t0, rows, tileKeys, dims.headDim);
    loadTileBf16<HDP>(kDst + tileKeys * ld, vBase, kvStride, t0, rows, tileKeys, dims.headDim);
  };
  __syncthreads();  // Q's staging is read
  if (kStages > 1) {
    stageKeys(firstKey, 0);
    mma::copyAsyncCommit();
  }
  int stage = 0;
  for (int t0 = firstKey; t0 < keyEnd; t0 += tileKeys, stage = (stage + 1) % kStages) {
    // With two stages the next tile streams in while this one is multiplied; with one, this
    // tile is loaded now. The first barrier frees the buffer the load overwrites.
    __syncthreads();
    if (kStages == 1) {
      stageKeys(t0, 0);
    } else if (t0 + tileKeys < keyEnd) {
      stageKeys(t0 + tileKeys, (stage + 1) % kStages);
    }
    mma::copyAsyncCommit();
    mma::copyAsyncWait<kStages - 1>();
    __syncthreads();
    const hip_bfloat16* kTile = tight ? keyTiles : tiles + 2 * stage * tileElems;
    const hip_bfloat16* vTile = kTile + tileKeys * ld;
#pragma unroll
    for (int c0 = 0; c0 < tileKeys; c0 += passKeys) {
      const int j0 = t0 + c0;  // the pass's first key
      // Waves whose rows see none of these keys (all before the diagonal, or all past the
      // window's start or their documents' starts, or rows past the end) skip the pass.
      if (w0 >= dims.seq || j0 > w0 + 15 || j0 + passKeys - 1 < firstStart ||
          (dims.window > 0 && j0 + passKeys - 1 <= w0 - dims.window)) {
        continue;
      }
      const bool masked = j0 + passKeys - 1 > w0 || j0 + passKeys > dims.seq || j0 < lastStart ||
                          (dims.window > 0 && j0 <= w0 + 15 - dims.window);
      mma::FragC s[keyBlocks];
#pragma unroll
      for (int n = 0; n < keyBlocks; ++n) {
        mma::zero(s[n]);
      }
#pragma unroll
      for (int kk = 0; kk < steps; ++kk) {
        mma::FragA streamed;
        if constexpr (tight) {
          mma::loadA(streamed, qRows + kk * 16, ld);
        }
        const mma::FragA& qk = tight ? streamed : qa[kk];
#pragma unroll
        for (int n = 0; n < keyBlocks; ++n) {
          mma::FragB kb;
          mma::loadBt(kb, kTile + (c0 + n * 16) * ld + kk * 16, ld);
          mma::mma(s[n], qk, kb);
        }
      }
      float tileMax[slots];
#pragma unroll
      for (int sl = 0; sl < slots; ++sl) {
        tileMax[sl] = -INFINITY;
      }
      capScores(dims, s, scaleLog2);
      const auto hidden = [&](int n, int e) {
        const int row = mma::slotRow(mma::accSlot(e));
        return !visible(dims, w0 + row, j0 + n * 16 + mma::accCol(e), waveStarts[row]);
      };
      if constexpr (!tight) {  // Note [masked passes apart]
        if (masked) {
          maskScores<keyBlocks>(s, hidden);
        }
      }
#pragma unroll
      for (int n = 0; n < keyBlocks; ++n) {
#pragma unroll
        for (int e = 0; e < mma::kAccElems; ++e) {
          const int sl = mma::accSlot(e);
          float x = s[n].v[e];
          if constexpr (tight) {
            if (masked && hidden(n, e)) {
              x = -INFINITY;
            }
          }
          s[n].v[e] = x;
          tileMax[sl] = fmaxf(tileMax[sl], x);
        }
      }
      float shift[slots];
#pragma unroll
      for (int sl = 0; sl < slots; ++sl) {
        // As in the vector kernel: a row with no key seen yet (window, documents) shifts by 0.
        const float newMax = fmaxf(runningMax[sl], mma::rowMax(tileMax[sl]));
        shift[sl] = newMax == -INFINITY ? 0.0f : newMax;
        const float rescale = gpu::exp2Fast(runningMax[sl] - shift[sl]);
        runningSum[sl] *= rescale;
        runningMax[sl] = newMax;
        tileMax[sl] = rescale;
      }
#pragma unroll
      for (int n = 0; n < steps; ++n) {
#pragma unroll
        for (int e = 0; e < mma::kAccElems; ++e) {
          o[n].v[e] *= tileMax[mma::accSlot(e)];
        }
      }
#pragma unroll
      for (int kb = 0; kb < keyBlocks; ++kb) {
#pragma unroll
        for (int e = 0; e < mma::kAccElems; ++e) {
          const int sl = mma::accSlot(e);
          const float p = gpu::exp2Fast(s[kb].v[e] - shift[sl]);
          runningSum[sl] += p;
          s[kb].v[e] = p;
        }
        mma::FragA pHigh;
        mma::FragA pLow;
        mma::accToASplit(pHigh, pLow, s[kb], waveScratch);
#pragma unroll
        for (int n = 0; n < steps; ++n) {
          mma::FragB vb;
          mma::loadB(vb, vTile + (c0 + kb * 16) * ld + n * 16, ld);
          mma::mma(o[n], pHigh, vb);
          mma::mma(o[n], pLow, vb);
        }
      }
    }
  }
  float inverseSum[slots];
#pragma unroll
  for (int sl = 0; sl < slots; ++sl) {
    runningSum[sl] = mma::rowSum(runningSum[sl]);
    inverseSum[sl] = 1.0f / runningSum[sl];
  }
#pragma unroll
  for (int n = 0; n < steps; ++n) {
#pragma unroll
    for (int e = 0; e < mma::kAccElems; e += kAccStoreStep) {
      const int sl = mma::accSlot(e);
      const int i = w0 + mma::slotRow(sl);
      const int c = n * 16 + mma::accCol(e);
      if (i < dims.seq && c < dims.headDim) {
        storeAcc(out, rowOffset(dims, dims.heads, b, i, h) + c, o[n], e, inverseSum[sl], c,
                 dims.headDim);
      }
      if (n == 0 && i < dims.seq && mma::accCol(e) == 0) {
        logsumexp[(static_cast<long long>(b) * dims.heads + h) * dims.seq + i] =
            (runningMax[sl] + log2f(runningSum[sl])) * kLn2;
      }
    }
  }
#else
  unusedWithoutMatrixCores(q, k, v, dims, scaleLog2, out, logsumexp);
#endif
}

// dq_i = scale · Σ_j p_ij (dout_i·v_j − D_i) k_j, and D_i = dout_i · out_i itself, written to
// rowDot (B, heads, S) for the dk/dv kernel after it. grid (ceil(S / 64), heads, B); dynamic
// shared memory MmaShared<HDP>::keyLoop.
template <int HDP>
__global__ void LORASCOPE_LAUNCH_BOUNDS_BLOCKS(kMmaWaves* gpu::kWaveSize, kDqBlocks<HDP>)
    attentionDqMmaKernel(const hip_bfloat16* dout, const hip_bfloat16* q, const hip_bfloat16* k,
                         const hip_bfloat16* v, const hip_bfloat16* out, const float* logsumexp,
                         Dims dims, float scale, float* rowDot, hip_bfloat16* dq) {
#if defined(LORASCOPE_GPU_MMA)
  constexpr int ld = kMmaLd<HDP>;
  constexpr int steps = HDP / 16;
  constexpr bool tight = mma::kRegisterTight;
  constexpr int tileKeys = tight ? kTightKeys : kMmaKeys;
  constexpr int chunkKeys = tight ? kTightKeys : kDqKeyChunk;  // keys per register pass
  constexpr int chunkBlocks = chunkKeys / 16;
  constexpr int slots = mma::kAccRowSlots;
  constexpr int tileElems = kMmaKeys * ld;
  // As the forward kernel's; register-tight targets keep Q and dO in the first K and V tiles and
  // stream K and V through tightKeyTiles (which holds out for the row dot first).
  extern __shared__ __align__(16) unsigned char dqShared[];
  auto* tiles = reinterpret_cast<hip_bfloat16*>(dqShared);
  hip_bfloat16* scratch = tiles + kStages * 2 * tileElems;

  const int wave = static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  hip_bfloat16* waveScratch = scratch + wave * kMmaScratch;
  const int r0 = lastRowsFirst() * kMmaBlockRows;
  const int w0 = r0 + wave * 16;
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const long long qStride = static_cast<long long>(dims.heads) * dims.headDim;
  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;
  const float scaleLog2 = scale * kLog2e;

  const int blockRows = min(kMmaBlockRows, dims.seq - r0);
  loadTileBf16<HDP>(tiles, q + rowOffset(dims, dims.heads, b, 0, h), qStride, r0, blockRows,
                    kMmaBlockRows, dims.headDim);
  loadTileBf16<HDP>(tiles + tileElems, dout + rowOffset(dims, dims.heads, b, 0, h), qStride, r0,
                    blockRows, kMmaBlockRows, dims.headDim);
  __shared__ int rowStarts[kMmaBlockRows];
  stageRowStarts(dims, b, r0, rowStarts);
  mma::copyAsyncCommit();
  mma::copyAsyncWait<0>();
  __syncthreads();
  const int* waveStarts = rowStarts + wave * 16;
  const int firstStart = waveStarts[0];  // as in the forward kernel
  const int lastStart = waveStarts[15];
  const hip_bfloat16* qRows = tiles + wave * 16 * ld;
  const hip_bfloat16* doRows = tiles + tileElems + wave * 16 * ld;
  mma::FragA qa[steps];
  mma::FragA da[steps];
  hip_bfloat16* keyTiles = tiles;
  hip_bfloat16* outTile = tiles;
  if constexpr (tight) {
    static_assert(2 * kTightKeys == kMmaBlockRows, "out's tile takes the K and V tiles' place");
    keyTiles = tightKeyTiles<HDP>();
    outTile = keyTiles;
  } else {
#pragma unroll
    for (int kk = 0; kk < steps; ++kk) {
      mma::loadA(qa[kk], tiles + wave * 16 * ld + kk * 16, ld);
      mma::loadA(da[kk], tiles + tileElems + wave * 16 * ld + kk * 16, ld);
    }
  }
  // D_i = dout_i · out_i: out takes Q's place, two lanes per row sum half the head dim each.
  __shared__ float rowDotTile[kMmaBlockRows];
  const long long statBase = (static_cast<long long>(b) * dims.heads + h) * dims.seq;
  __syncthreads();
  loadTileBf16<HDP>(outTile, out + rowOffset(dims, dims.heads, b, 0, h), qStride, r0, blockRows,
                    kMmaBlockRows, dims.headDim);
  mma::copyAsyncCommit();
  mma::copyAsyncWait<0>();
  __syncthreads();
  for (int t = static_cast<int>(threadIdx.x); t < 2 * kMmaBlockRows;
       t += static_cast<int>(blockDim.x)) {
    const int r = t / 2;
    const hip_bfloat16* outRow = outTile + r * ld + (t % 2) * (HDP / 2);
    const hip_bfloat16* doRow = tiles + tileElems + r * ld + (t % 2) * (HDP / 2);
    float sum = 0.0f;
    // The padding is zero; a row's half starts on 16 bytes (ld and HDP / 2 are multiples of 8).
    for (int c = 0; c < HDP / 2; c += 8) {
      alignas(16) hip_bfloat16 d8[8];
      alignas(16) hip_bfloat16 o8[8];
      *reinterpret_cast<uint4*>(d8) = *reinterpret_cast<const uint4*>(doRow + c);
      *reinterpret_cast<uint4*>(o8) = *reinterpret_cast<const uint4*>(outRow + c);
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        sum += bf16ToFloat(d8[u]) * bf16ToFloat(o8[u]);
      }
    }
    sum += gpu::waveShflXor(sum, 1);
    if (t % 2 == 0) {
      rowDotTile[r] = sum;
      if (r < blockRows) {
        rowDot[statBase + r0 + r] = sum;
      }
    }
  }
  __syncthreads();
  float lseLog2[slots];
  float rowD[slots];
#pragma unroll
  for (int sl = 0; sl < slots; ++sl) {
    const int i = min(w0 + mma::slotRow(sl), dims.seq - 1);
    lseLog2[sl] = logsumexp[statBase + i] * kLog2e;
    rowD[sl] = rowDotTile[wave * 16 + mma::slotRow(sl)];
  }
  mma::FragC acc[steps];
#pragma unroll
  for (int n = 0; n < steps; ++n) {
    mma::zero(acc[n]);
  }

  const hip_bfloat16* kBase = k + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const hip_bfloat16* vBase = v + rowOffset(dims, dims.kvHeads, b, 0, kvh);
  const int keyEnd = min(r0 + kMmaBlockRows, dims.seq);
  const int firstKey = firstVisibleKey(dims, b, r0);
  const auto stageKeys = [&](int t0, int stage) {
    const int rows = min(tileKeys, dims.seq - t0);
    hip_bfloat16* kDst = tight ? keyTiles : tiles + 2 * stage * tileElems;
    loadTileBf16<HDP>(kDst, kBase, kvStride, t0, rows, tileKeys, dims.headDim);
    loadTileBf16<HDP>(kDst + tileKeys * ld, vBase, kvStride, t0, rows, tileKeys, dims.headDim);
  };
  __syncthreads();  // the staging of out and dO is read
  if (kStages > 1) {
    stageKeys(firstKey, 0);
    mma::copyAsyncCommit();
  }
  int stage = 0;
  for (int t0 = firstKey; t0 < keyEnd; t0 += tileKeys, stage = (stage + 1) % kStages) {
    __syncthreads();  // as in the forward kernel
    if (kStages == 1) {
      stageKeys(t0, 0);
    } else if (t0 + tileKeys < keyEnd) {
      stageKeys(t0 + tileKeys, (stage + 1) % kStages);
    }
    mma::copyAsyncCommit();
    mma::copyAsyncWait<kStages - 1>();
    __syncthreads();
    const hip_bfloat16* kTile = tight ? keyTiles : tiles + 2 * stage * tileElems;
    const hip_bfloat16* vTile = kTile + tileKeys * ld;
#pragma unroll
    for (int c0 = 0; c0 < tileKeys; c0 += chunkKeys) {
      const int j0 = t0 + c0;  // the chunk's first key
      if (w0 >= dims.seq || j0 > w0 + 15 || j0 + chunkKeys - 1 < firstStart ||
          (dims.window > 0 && j0 + chunkKeys - 1 <= w0 - dims.window)) {
        continue;
      }
      const bool masked = j0 + chunkKeys - 1 > w0 || j0 + chunkKeys > dims.seq || j0 < lastStart ||
                          (dims.window > 0 && j0 <= w0 + 15 - dims.window);
      mma::FragC s[chunkBlocks];
      mma::FragC dp[chunkBlocks];
#pragma unroll
      for (int n = 0; n < chunkBlocks; ++n) {
        mma::zero(s[n]);
        mma::zero(dp[n]);
      }
      if constexpr (tight) {  // one A operand live at a time: Q·Kᵀ, then dO·Vᵀ
#pragma unroll
        for (int kk = 0; kk < steps; ++kk) {
          mma::FragA a;
          mma::loadA(a, qRows + kk * 16, ld);
#pragma unroll
          for (int n = 0; n < chunkBlocks; ++n) {
            mma::FragB kb;
            mma::loadBt(kb, kTile + (c0 + n * 16) * ld + kk * 16, ld);
            mma::mma(s[n], a, kb);
          }
        }
#pragma unroll
        for (int kk = 0; kk < steps; ++kk) {
          mma::FragA a;
          mma::loadA(a, doRows + kk * 16, ld);
#pragma unroll
          for (int n = 0; n < chunkBlocks; ++n) {
            mma::FragB vb;
            mma::loadBt(vb, vTile + (c0 + n * 16) * ld + kk * 16, ld);
            mma::mma(dp[n], a, vb);
          }
        }
      } else {
#pragma unroll
        for (int kk = 0; kk < steps; ++kk) {
#pragma unroll
          for (int n = 0; n < chunkBlocks; ++n) {
            mma::FragB kb;
            mma::loadBt(kb, kTile + (c0 + n * 16) * ld + kk * 16, ld);
            mma::mma(s[n], qa[kk], kb);
            mma::FragB vb;
            mma::loadBt(vb, vTile + (c0 + n * 16) * ld + kk * 16, ld);
            mma::mma(dp[n], da[kk], vb);
          }
        }
      }
      if constexpr (tight) {  // s: capped scores, dp: (dO·Vᵀ − D)·slope
        capScoresWithDp<chunkBlocks>(dims, s, dp, scaleLog2,
                                     [&](int, int e) { return rowD[mma::accSlot(e)]; });
      }
      const auto hidden = [&](int n, int e) {
        const int row = mma::slotRow(mma::accSlot(e));
        return !visible(dims, w0 + row, j0 + n * 16 + mma::accCol(e), waveStarts[row]);
      };
#pragma unroll
      for (int n = 0; n < chunkBlocks; ++n) {
        if constexpr (!tight) {  // Note [masked passes apart], a 16-key tile at a time
          capScoresWithDp<1>(dims, &s[n], &dp[n], scaleLog2,
                             [&](int, int e) { return rowD[mma::accSlot(e)]; });
          if (masked) {
            maskScores<1>(&s[n], [&](int, int e) { return hidden(n, e); });
          }
        }
#pragma unroll
        for (int e = 0; e < mma::kAccElems; ++e) {
          const int sl = mma::accSlot(e);
          const bool seen = !tight || !masked || !hidden(n, e);
          s[n].v[e] = gpu::exp2Fast(seen ? s[n].v[e] - lseLog2[sl] : -INFINITY) * dp[n].v[e];
        }
        mma::FragA dsHigh;
        mma::FragA dsLow;
        mma::accToASplit(dsHigh, dsLow, s[n], waveScratch);
#pragma unroll
        for (int m = 0; m < steps; ++m) {
          mma::FragB kb;
          mma::loadB(kb, kTile + (c0 + n * 16) * ld + m * 16, ld);
          mma::mma(acc[m], dsHigh, kb);
          mma::mma(acc[m], dsLow, kb);
        }
      }
    }
  }
  // Note [paired stores]: at head dim 64 the pairs' registers would cost dq a resident block.
  constexpr int dqStep = HDP > 64 ? kAccStoreStep : 1;
#pragma unroll
  for (int n = 0; n < steps; ++n) {
#pragma unroll
    for (int e = 0; e < mma::kAccElems; e += dqStep) {
      const int i = w0 + mma::slotRow(mma::accSlot(e));
      const int c = n * 16 + mma::accCol(e);
      if (i < dims.seq && c < dims.headDim) {
        storeAcc<dqStep>(dq, rowOffset(dims, dims.heads, b, i, h) + c, acc[n], e, scale, c,
                         dims.headDim);
      }
    }
  }
#else
  unusedWithoutMatrixCores(dout, q, k, v, out, logsumexp, dims, scale, rowDot, dq);
#endif
}

// Per query head h: dk_j = scale · Σ_i ds_ij q_i, dv_j = Σ_i p_ij dout_i over visible i, into
// the f32 partials (B, S, heads, hd), as attentionDkDvKernel. grid (ceil(S / 64), heads, B);
// dynamic shared memory MmaShared<HDP>::dkDv.
template <int HDP>
__global__ void LORASCOPE_LAUNCH_BOUNDS_BLOCKS(kMmaWaves* gpu::kWaveSize, kDkDvBlocks<HDP>)
    attentionDkDvMmaKernel(const hip_bfloat16* dout, const hip_bfloat16* q, const hip_bfloat16* k,
                           const hip_bfloat16* v, const float* logsumexp, const float* rowDot,
                           Dims dims, float scale, float* dkPartial, float* dvPartial) {
#if defined(LORASCOPE_GPU_MMA)
  constexpr int ld = kMmaLd<HDP>;
  constexpr int steps = HDP / 16;
  constexpr int queries = kDkDvQueries;
  // Register-tight targets at head dim 128 (64 fits as it is): the dk and dv accumulators in two
  // passes over the queries, a half of the head dim each (the scores are computed twice).
  constexpr bool tight = mma::kRegisterTight && HDP >= 128;
  constexpr int passSteps = tight ? steps / 2 : steps;
  // K and V tiles, then per stage: Q and dO tiles, logsumexp (log2 units), D and the queries'
  // document starts; then scratch.
  extern __shared__ __align__(16) unsigned char dkDvShared[];
  auto* kTile = reinterpret_cast<hip_bfloat16*>(dkDvShared);
  hip_bfloat16* vTile = kTile + kMmaBlockRows * ld;
  unsigned char* stages = dkDvShared + 2 * kMmaBlockRows * ld * sizeof(hip_bfloat16);
  auto* scratch = reinterpret_cast<hip_bfloat16*>(stages + kStages * MmaShared<HDP>::queryStage);
  const auto qTileOf = [&](int stage) {
    return reinterpret_cast<hip_bfloat16*>(stages + stage * MmaShared<HDP>::queryStage);
  };
  const auto lseTileOf = [&](int stage) {
    return reinterpret_cast<float*>(qTileOf(stage) + 2 * queries * ld);
  };

  const int wave = static_cast<int>(threadIdx.x) / gpu::kWaveSize;
  hip_bfloat16* waveScratch = scratch + wave * kMmaScratch;
  const int k0 = static_cast<int>(blockIdx.x) * kMmaBlockRows;
  const int kw0 = k0 + wave * 16;  // this wave's first key row
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int kvh = h / (dims.heads / dims.kvHeads);
  const long long qStride = static_cast<long long>(dims.heads) * dims.headDim;
  const long long kvStride = static_cast<long long>(dims.kvHeads) * dims.headDim;
  const float scaleLog2 = scale * kLog2e;

  const int blockKeys = min(kMmaBlockRows, dims.seq - k0);
  loadTileBf16<HDP>(kTile, k + rowOffset(dims, dims.kvHeads, b, 0, kvh), kvStride, k0, blockKeys,
                    kMmaBlockRows, dims.headDim);
  loadTileBf16<HDP>(vTile, v + rowOffset(dims, dims.kvHeads, b, 0, kvh), kvStride, k0, blockKeys,
                    kMmaBlockRows, dims.headDim);
  const hip_bfloat16* qBase = q + rowOffset(dims, dims.heads, b, 0, h);
  const hip_bfloat16* doBase = dout + rowOffset(dims, dims.heads, b, 0, h);
  const long long statBase = (static_cast<long long>(b) * dims.heads + h) * dims.seq;
  // As in the vector kernel: the window and the documents' starts end the queries early.
  const int lastKey = min(k0 + kMmaBlockRows, dims.seq) - 1;
  const int queryEnd = min(queriesSeeingKeysEnd(dims, b, lastKey),
                           dims.window > 0 ? min(dims.seq, lastKey + dims.window) : dims.seq);
#pragma unroll 1
  for (int d0 = 0; d0 < steps; d0 += passSteps) {  // the first head-dim block of this pass
    mma::FragC dkAcc[passSteps];
    mma::FragC dvAcc[passSteps];
#pragma unroll
    for (int n = 0; n < passSteps; ++n) {
      mma::zero(dkAcc[n]);
      mma::zero(dvAcc[n]);
    }
    const auto stageQueries = [&](int t0, int stage) {
      const int rows = min(queries, dims.seq - t0);
      loadTileBf16<HDP>(qTileOf(stage), qBase, qStride, t0, rows, queries, dims.headDim);
      loadTileBf16<HDP>(qTileOf(stage) + queries * ld, doBase, qStride, t0, rows, queries,
                        dims.headDim);
      float* lse = lseTileOf(stage);
      int* starts = reinterpret_cast<int*>(lse + 2 * queries);
      for (int r = static_cast<int>(threadIdx.x); r < queries; r += static_cast<int>(blockDim.x)) {
        // Rows past the end get p = 0 (their Q and dO are zero too).
        lse[r] = r < rows ? logsumexp[statBase + t0 + r] * kLog2e : INFINITY;
        lse[queries + r] = r < rows ? rowDot[statBase + t0 + r] : 0.0f;
        starts[r] = r < rows ? documentStart(dims, b, t0 + r) : dims.seq;
      }
    };
    if (kStages > 1) {
      stageQueries(k0, 0);  // in the same group as K and V above
    }
    mma::copyAsyncCommit();
    int stage = 0;
    for (int t0 = k0; t0 < queryEnd; t0 += queries, stage = (stage + 1) % kStages) {
      __syncthreads();  // as in the forward kernel
      if (kStages == 1) {
        stageQueries(t0, 0);
      } else if (t0 + queries < queryEnd) {
        stageQueries(t0 + queries, (stage + 1) % kStages);
      }
      mma::copyAsyncCommit();
      mma::copyAsyncWait<kStages - 1>();
      __syncthreads();
      const hip_bfloat16* qTile = qTileOf(stage);
      const hip_bfloat16* doTile = qTile + queries * ld;
      const float* lseTile = lseTileOf(stage);
      const float* dTile = lseTile + queries;
      const int* startTile = reinterpret_cast<const int*>(lseTile + 2 * queries);
      // Skipped when no query of the tile sees the wave's keys: all before them, all past the
      // window, or all in documents that start after them (starts rise: the first is the least).
      if (kw0 >= dims.seq || t0 + queries - 1 < kw0 || startTile[0] > kw0 + 15 ||
          (dims.window > 0 && t0 >= kw0 + 15 + dims.window)) {
        continue;
      }
      const bool masked = t0 < kw0 + 15 || t0 + queries > dims.seq ||
                          startTile[queries - 1] > kw0 ||
                          (dims.window > 0 && t0 + queries - 1 >= kw0 + dims.window);
#pragma unroll
      for (int qs = 0; qs < queries / 16; ++qs) {
        const int i0 = t0 + qs * 16;
        if (i0 + 15 < kw0) {
          continue;  // these queries precede every key of the wave
        }
        mma::FragC s;   // K·Qᵀ: rows are keys, columns queries
        mma::FragC dp;  // V·dOᵀ
        mma::zero(s);
        mma::zero(dp);
#pragma unroll
        for (int kk = 0; kk < steps; ++kk) {
          mma::FragA ka;
          mma::loadA(ka, kTile + wave * 16 * ld + kk * 16, ld);
          mma::FragB qb;
          mma::loadBt(qb, qTile + qs * 16 * ld + kk * 16, ld);
          mma::mma(s, ka, qb);
          mma::FragA va;
          mma::loadA(va, vTile + wave * 16 * ld + kk * 16, ld);
          mma::FragB db;
          mma::loadBt(db, doTile + qs * 16 * ld + kk * 16, ld);
          mma::mma(dp, va, db);
        }
        // s: capped scores, dp: (V·dOᵀ − D)·slope
        capScoresWithDp<1>(dims, &s, &dp, scaleLog2,
                           [&](int, int e) { return dTile[qs * 16 + mma::accCol(e)]; });
        const auto hidden = [&](int, int e) {
          const int r = qs * 16 + mma::accCol(e);
          return !visible(dims, t0 + r, kw0 + mma::slotRow(mma::accSlot(e)), startTile[r]);
        };
        if constexpr (!tight) {  // Note [masked passes apart]
          if (masked) {
            maskScores<1>(&s, hidden);
          }
        }
#pragma unroll
        for (int e = 0; e < mma::kAccElems; ++e) {
          const int r = qs * 16 + mma::accCol(e);  // the query's row in the tile
          const bool seen = !tight || !masked || !hidden(0, e);
          const float p = gpu::exp2Fast(seen ? s.v[e] - lseTile[r] : -INFINITY);
          s.v[e] = p;
          dp.v[e] = p * dp.v[e];
        }
        mma::FragA high;
        mma::FragA low;
        mma::accToASplit(high, low, s, waveScratch);
#pragma unroll
        for (int n = 0; n < passSteps; ++n) {
          mma::FragB dob;
          mma::loadB(dob, doTile + qs * 16 * ld + (d0 + n) * 16, ld);
          mma::mma(dvAcc[n], high, dob);
          mma::mma(dvAcc[n], low, dob);
        }
        mma::accToASplit(high, low, dp, waveScratch);
#pragma unroll
        for (int n = 0; n < passSteps; ++n) {
          mma::FragB qb;
          mma::loadB(qb, qTile + qs * 16 * ld + (d0 + n) * 16, ld);
          mma::mma(dkAcc[n], high, qb);
          mma::mma(dkAcc[n], low, qb);
        }
      }
    }
#pragma unroll
    for (int n = 0; n < passSteps; ++n) {
#pragma unroll
      for (int e = 0; e < mma::kAccElems; e += kAccStoreStep) {
        const int j = kw0 + mma::slotRow(mma::accSlot(e));
        const int c = (d0 + n) * 16 + mma::accCol(e);
        if (j < dims.seq && c < dims.headDim) {
          const long long at = rowOffset(dims, dims.heads, b, j, h) + c;
          storeAcc(dkPartial, at, dkAcc[n], e, scale, c, dims.headDim);
          storeAcc(dvPartial, at, dvAcc[n], e, 1.0f, c, dims.headDim);
        }
      }
    }
  }
#else
  unusedWithoutMatrixCores(dout, q, k, v, logsumexp, rowDot, dims, scale, dkPartial, dvPartial);
#endif
}

// The matrix-core kernels' grid: 64 rows per block (forward, dq: query rows; dk/dv: key rows).
dim3 mmaGrid(const AttentionShape& s) {
  return dim3(static_cast<unsigned>((s.seq + kMmaBlockRows - 1) / kMmaBlockRows),
              static_cast<unsigned>(s.heads), static_cast<unsigned>(s.batch));
}

dim3 mmaBlock() {
  return dim3(static_cast<unsigned>(kMmaWaves * currentMatrixCores().waveSize));
}

template <int HDP>
void launchForwardMma(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                      const AttentionShape& shape, float scale, std::uint16_t* out,
                      float* logsumexp, hipStream_t stream) {
  constexpr std::size_t shared = MmaShared<HDP>::keyLoop;
  allowSharedBytes(attentionForwardMmaKernel<HDP>, shared);
  launch("attention_forward", attentionForwardMmaKernel<HDP>, mmaGrid(shape), mmaBlock(), shared,
         stream, asBf16(q), asBf16(k), asBf16(v), toDims(shape), scale * kLog2e, asBf16(out),
         logsumexp);
}

template <int HDP>
void launchBackwardMma(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                       const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                       const AttentionShape& shape, float scale, AttentionBackwardScratch scratch,
                       std::uint16_t* dq, hipStream_t stream) {
  allowSharedBytes(attentionDqMmaKernel<HDP>, MmaShared<HDP>::keyLoop);
  launch("attention_backward", attentionDqMmaKernel<HDP>, mmaGrid(shape), mmaBlock(),
         MmaShared<HDP>::keyLoop, stream, asBf16(dout), asBf16(q), asBf16(k), asBf16(v),
         asBf16(out), logsumexp, toDims(shape), scale, scratch.rowDot, asBf16(dq));
  constexpr std::size_t shared = MmaShared<HDP>::dkDv;
  allowSharedBytes(attentionDkDvMmaKernel<HDP>, shared);
  launch("attention_backward", attentionDkDvMmaKernel<HDP>, mmaGrid(shape), mmaBlock(), shared,
         stream, asBf16(dout), asBf16(q), asBf16(k), asBf16(v), logsumexp, scratch.rowDot,
         toDims(shape), scale, scratch.dkPartial, scratch.dvPartial);
}

}  // namespace

void forwardMatrixCores(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                        const AttentionShape& shape, float scale, std::uint16_t* out,
                        float* logsumexp, hipStream_t stream) {
  if (shape.headDim <= 64) {
    launchForwardMma<64>(q, k, v, shape, scale, out, logsumexp, stream);
  } else {
    launchForwardMma<128>(q, k, v, shape, scale, out, logsumexp, stream);
  }
}

void backwardMatrixCores(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                         const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                         const AttentionShape& shape, float scale, AttentionBackwardScratch scratch,
                         std::uint16_t* dq, hipStream_t stream) {
  // D = rowsum(dout ∘ out) comes from the dq kernel.
  if (shape.headDim <= 64) {
    launchBackwardMma<64>(dout, q, k, v, out, logsumexp, shape, scale, scratch, dq, stream);
  } else {
    launchBackwardMma<128>(dout, q, k, v, out, logsumexp, shape, scale, scratch, dq, stream);
  }
}

}  // namespace lorascope::compute::hip::attention
