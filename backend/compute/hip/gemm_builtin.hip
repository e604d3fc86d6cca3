// hip/gemm_builtin.hip — the built-in GEMM: a shared-memory tiled kernel with fp32 accumulation
// that needs nothing but the HIP runtime (gemm.h says when it is used). CPU twin: cpu/matmul.cpp.
//
// Each block computes a BM × BN tile of c. Per step of kBlockK along k it stages the op(a) and
// op(b) tiles in shared memory as fp32 (bf16 is widened on load, out-of-range elements read as 0,
// so any m, n, k works), then each of its 256 threads accumulates TM × TN outputs in registers.
// A thread's outputs are strided by the thread grid (row ty + r·BM/TM, column tx + c·BN/TN), so
// the threads of a wave read consecutive shared-memory words and write consecutive columns of c.
// Transposes only change which index walks the stored row while staging, which keeps global
// reads coalesced for all four combinations.
//
// Note [split k]: the LoRA products have a rank-sized side (m or n = 8) and k = the tokens of a
// micro-batch (4096), so their output has a handful of tiles: a dozen blocks would walk all of k
// while the GPU idles. Such products split k over blockIdx.z; each block writes its fp32 partial
// tile to a workspace and a second kernel adds the partials in split order and applies alpha and
// beta, so the result is the same run to run (atomics would not be).
#include <algorithm>
#include <string>

#include "compute/Errors.h"
#include "compute/hip/device_common.h"  // defines: loadFloat, storeFloat
#include "compute/hip/gemm.h"
#include "compute/hip/launch.h"  // defines: launch

namespace lorascope::compute::hip {
namespace {

using gpu::loadFloat;
using gpu::storeFloat;

constexpr int kThreads = 256;  // a multiple of both wave sizes (32 and 64)
constexpr int kBlockK = 16;    // k-step per shared-memory stage
constexpr int kPad = 1;        // extra column against bank conflicts when staging along k
// Below this many 128 × 128 tiles the GPU is underfilled, so the 64 × 64 tile is used instead.
constexpr long long kMinLargeTiles = 128;
constexpr long long kMaxGridY = 65535;  // the grid's y limit on both vendors
// Note [split k]: split only where the small tile's grid has fewer blocks than kSplitBelowBlocks,
// aim for about kSplitTargetBlocks blocks, and give every split at least kMinSplitK of k.
constexpr long long kSplitBelowBlocks = 128;
constexpr long long kSplitTargetBlocks = 256;
constexpr long long kMinSplitK = 256;  // a multiple of kBlockK

// a: op(a) is (m, k); stored (m, k) row-major, or (k, m) when transA. b likewise (k, n) / (n, k).
// c (m, n) with leading dimension ldc; read only when beta != 0.
template <int BM, int BN, int TM, int TN, typename TA, typename TB, typename TC>
__global__ void __launch_bounds__(kThreads)
    gemmKernel(const TA* a, long long lda, bool transA, const TB* b, long long ldb, bool transB,
               TC* c, long long ldc, long long m, long long n, long long k, float alpha, float beta,
               long long kChunk, float* partial) {
  static_assert((BM / TM) * (BN / TN) == kThreads, "one output micro-tile per thread");
  __shared__ float aTile[kBlockK][BM + kPad];  // aTile[kk][i] = op(a)[row0 + i][k0 + kk]
  __shared__ float bTile[kBlockK][BN + kPad];  // bTile[kk][j] = op(b)[k0 + kk][col0 + j]
  constexpr int kThreadCols = BN / TN;
  constexpr int kThreadRows = BM / TM;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % kThreadCols;
  const int ty = tid / kThreadCols;
  const long long row0 = static_cast<long long>(blockIdx.y) * BM;
  const long long col0 = static_cast<long long>(blockIdx.x) * BN;
  // This block's share of k (all of it unless split; note [split k]).
  const long long kBegin = static_cast<long long>(blockIdx.z) * kChunk;
  const long long kEnd = kBegin + kChunk < k ? kBegin + kChunk : k;

  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r) {
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      acc[r][q] = 0.0f;
    }
  }

  for (long long k0 = kBegin; k0 < kEnd; k0 += kBlockK) {
    for (int l = tid; l < BM * kBlockK; l += kThreads) {
      // Consecutive threads walk the stored row: along k, or along m when a is transposed.
      const int i = transA ? l % BM : l / kBlockK;
      const int kk = transA ? l / BM : l % kBlockK;
      const long long gi = row0 + i;
      const long long gk = k0 + kk;
      aTile[kk][i] =
          gi < m && gk < kEnd ? loadFloat(a, transA ? gk * lda + gi : gi * lda + gk) : 0.0f;
    }
    for (int l = tid; l < kBlockK * BN; l += kThreads) {
      const int j = transB ? l / kBlockK : l % BN;
      const int kk = transB ? l % kBlockK : l / BN;
      const long long gj = col0 + j;
      const long long gk = k0 + kk;
      bTile[kk][j] =
          gj < n && gk < kEnd ? loadFloat(b, transB ? gj * ldb + gk : gk * ldb + gj) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      float aFrag[TM];
      float bFrag[TN];
#pragma unroll
      for (int r = 0; r < TM; ++r) {
        aFrag[r] = aTile[kk][ty + r * kThreadRows];
      }
#pragma unroll
      for (int q = 0; q < TN; ++q) {
        bFrag[q] = bTile[kk][tx + q * kThreadCols];
      }
#pragma unroll
      for (int r = 0; r < TM; ++r) {
#pragma unroll
        for (int q = 0; q < TN; ++q) {
          acc[r][q] += aFrag[r] * bFrag[q];
        }
      }
    }
    __syncthreads();  // the tiles are overwritten by the next stage
  }

#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const long long gi = row0 + ty + r * kThreadRows;
    if (gi >= m) {
      continue;
    }
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      const long long gj = col0 + tx + q * kThreadCols;
      if (gj >= n) {
        continue;
      }
      if (partial != nullptr) {
        partial[(static_cast<long long>(blockIdx.z) * m + gi) * n + gj] = acc[r][q];
      } else {
        float v = alpha * acc[r][q];
        if (beta != 0.0f) {  // c may be uninitialised when beta == 0 (NaN · 0 would be NaN)
          v += beta * loadFloat(c, gi * ldc + gj);
        }
        storeFloat(c, gi * ldc + gj, v);
      }
    }
  }
}

// c = alpha · Σ_z partial[z] + beta · c over (m, n), the splits added in order (note [split k]).
template <typename TC>
__global__ void splitKReduceKernel(const float* partial, long long splits, long long m, long long n,
                                   TC* c, long long ldc, float alpha, float beta) {
  const long long count = m * n;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (long long z = 0; z < splits; ++z) {
      sum += partial[z * count + i];
    }
    const long long at = i / n * ldc + i % n;
    float v = alpha * sum;
    if (beta != 0.0f) {
      v += beta * loadFloat(c, at);
    }
    storeFloat(c, at, v);
  }
}

struct GemmProblem {
  const char* opName;
  const GemmOperand& a;
  const GemmOperand& b;
  const GemmOutput& c;
  long long m, n, k;
  float alpha, beta;
  hipStream_t stream;
  float* workspace;  // for split k; null: no split
};

long long tilesOf(long long m, long long n, long long tile) {
  return ((m + tile - 1) / tile) * ((n + tile - 1) / tile);
}

bool usesLargeTile(long long m, long long n) {
  return tilesOf(m, n, 128) >= kMinLargeTiles;
}

// How many parts k is split into (note [split k]); 1 for products that fill the GPU as they are.
long long splitCount(long long m, long long n, long long k) {
  const long long tiles = tilesOf(m, n, 64);
  if (usesLargeTile(m, n) || tiles >= kSplitBelowBlocks || k < 2 * kMinSplitK) {
    return 1;
  }
  return std::max(1LL, std::min(k / kMinSplitK, kSplitTargetBlocks / tiles));
}

// k per split, rounded up to whole kBlockK steps.
long long splitChunk(long long k, long long splits) {
  const long long chunk = (k + splits - 1) / splits;
  return (chunk + kBlockK - 1) / kBlockK * kBlockK;
}

template <int BM, int BN, int TM, int TN, typename TA, typename TB, typename TC>
void launchTile(const GemmProblem& p) {
  const long long tilesX = (p.n + BN - 1) / BN;
  const long long tilesY = (p.m + BM - 1) / BM;
  if (tilesY > kMaxGridY) {
    throw ShapeError(std::string(p.opName) + ": " + std::to_string(p.m) +
                     " rows exceed the built-in GEMM's grid (" + std::to_string(kMaxGridY * BM) +
                     " rows at most)");
  }
  const long long wanted = p.workspace != nullptr ? splitCount(p.m, p.n, p.k) : 1;
  const long long chunk = wanted > 1 ? splitChunk(p.k, wanted) : std::max(p.k, 1LL);
  const long long splits = (p.k + chunk - 1) / chunk;  // the last chunk may end early
  float* partial = splits > 1 ? p.workspace : nullptr;
  auto* c = static_cast<TC*>(p.c.data);
  launch(p.opName, gemmKernel<BM, BN, TM, TN, TA, TB, TC>,
         dim3(static_cast<unsigned>(tilesX), static_cast<unsigned>(tilesY),
              static_cast<unsigned>(std::max(splits, 1LL))),
         dim3(kThreads), 0, p.stream, static_cast<const TA*>(p.a.data), p.a.ld, p.a.transposed,
         static_cast<const TB*>(p.b.data), p.b.ld, p.b.transposed, c, p.c.ld, p.m, p.n, p.k,
         p.alpha, p.beta, chunk, partial);
  if (partial != nullptr) {
    const long long count = p.m * p.n;
    const long long blocks = std::min((count + kThreads - 1) / kThreads, 1LL << 16);
    launch(p.opName, splitKReduceKernel<TC>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0,
           p.stream, static_cast<const float*>(partial), splits, p.m, p.n, c, p.c.ld, p.alpha,
           p.beta);
  }
}

template <typename TA, typename TB, typename TC>
void launchTyped(const GemmProblem& p) {
  if (usesLargeTile(p.m, p.n)) {
    launchTile<128, 128, 8, 8, TA, TB, TC>(p);
  } else {
    launchTile<64, 64, 4, 4, TA, TB, TC>(p);
  }
}

template <typename TA, typename TB>
void dispatchOutput(const GemmProblem& p) {
  if (p.c.dtype == DType::F32) {
    launchTyped<TA, TB, float>(p);
  } else {
    launchTyped<TA, TB, hip_bfloat16>(p);
  }
}

template <typename TA>
void dispatchB(const GemmProblem& p) {
  if (p.b.dtype == DType::F32) {
    dispatchOutput<TA, float>(p);
  } else {
    dispatchOutput<TA, hip_bfloat16>(p);
  }
}

void requireGemmDType(const char* opName, const char* what, DType dtype) {
  if (dtype != DType::BF16 && dtype != DType::F32) {
    throw ShapeError(std::string(opName) + ": " + what + " is " + dtypeName(dtype) +
                     "; the GPU GEMM takes bf16 or f32");
  }
}

}  // namespace

std::int64_t builtinGemmWorkspaceFloats(const GemmOperand& a, const GemmOperand& b) {
  const long long m = a.opRows();
  const long long n = b.opCols();
  const long long splits = splitCount(m, n, a.opCols());
  return splits > 1 ? splits * m * n : 0;
}

void builtinGemm(const char* opName, const GemmOperand& a, const GemmOperand& b,
                 const GemmOutput& c, float alpha, float beta, hipStream_t stream,
                 float* workspace) {
  requireGemmDType(opName, "a", a.dtype);
  requireGemmDType(opName, "b", b.dtype);
  requireGemmDType(opName, "c", c.dtype);
  if (a.opCols() != b.opRows()) {
    throw ShapeError(std::string(opName) + ": op(a) has " + std::to_string(a.opCols()) +
                     " columns but op(b) has " + std::to_string(b.opRows()) + " rows");
  }
  const GemmProblem p{opName,     a,     b,    c,      a.opRows(), b.opCols(),
                      a.opCols(), alpha, beta, stream, workspace};
  if (p.m == 0 || p.n == 0) {
    return;
  }
  if (a.dtype == DType::F32) {
    dispatchB<float>(p);
  } else {
    dispatchB<hip_bfloat16>(p);
  }
}

}  // namespace lorascope::compute::hip
