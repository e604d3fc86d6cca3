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

// a: op(a) is (m, k); stored (m, k) row-major, or (k, m) when transA. b likewise (k, n) / (n, k).
// c (m, n) with leading dimension ldc; read only when beta != 0.
template <int BM, int BN, int TM, int TN, typename TA, typename TB, typename TC>
__global__ void __launch_bounds__(kThreads)
    gemmKernel(const TA* a, long long lda, bool transA, const TB* b, long long ldb, bool transB,
               TC* c, long long ldc, long long m, long long n, long long k, float alpha,
               float beta) {
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

  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; ++r) {
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      acc[r][q] = 0.0f;
    }
  }

  for (long long k0 = 0; k0 < k; k0 += kBlockK) {
    for (int l = tid; l < BM * kBlockK; l += kThreads) {
      // Consecutive threads walk the stored row: along k, or along m when a is transposed.
      const int i = transA ? l % BM : l / kBlockK;
      const int kk = transA ? l / BM : l % kBlockK;
      const long long gi = row0 + i;
      const long long gk = k0 + kk;
      aTile[kk][i] = gi < m && gk < k ? loadFloat(a, transA ? gk * lda + gi : gi * lda + gk) : 0.0f;
    }
    for (int l = tid; l < kBlockK * BN; l += kThreads) {
      const int j = transB ? l / kBlockK : l % BN;
      const int kk = transB ? l % kBlockK : l / BN;
      const long long gj = col0 + j;
      const long long gk = k0 + kk;
      bTile[kk][j] = gj < n && gk < k ? loadFloat(b, transB ? gj * ldb + gk : gk * ldb + gj) : 0.0f;
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
      if (gj < n) {
        float v = alpha * acc[r][q];
        if (beta != 0.0f) {  // c may be uninitialised when beta == 0 (NaN · 0 would be NaN)
          v += beta * loadFloat(c, gi * ldc + gj);
        }
        storeFloat(c, gi * ldc + gj, v);
      }
    }
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
};

template <int BM, int BN, int TM, int TN, typename TA, typename TB, typename TC>
void launchTile(const GemmProblem& p) {
  const long long tilesX = (p.n + BN - 1) / BN;
  const long long tilesY = (p.m + BM - 1) / BM;
  if (tilesY > kMaxGridY) {
    throw ShapeError(std::string(p.opName) + ": " + std::to_string(p.m) +
                     " rows exceed the built-in GEMM's grid (" + std::to_string(kMaxGridY * BM) +
                     " rows at most)");
  }
  launch(p.opName, gemmKernel<BM, BN, TM, TN, TA, TB, TC>,
         dim3(static_cast<unsigned>(tilesX), static_cast<unsigned>(tilesY)), dim3(kThreads), 0,
         p.stream, static_cast<const TA*>(p.a.data), p.a.ld, p.a.transposed,
         static_cast<const TB*>(p.b.data), p.b.ld, p.b.transposed, static_cast<TC*>(p.c.data),
         p.c.ld, p.m, p.n, p.k, p.alpha, p.beta);
}

template <typename TA, typename TB, typename TC>
void launchTyped(const GemmProblem& p) {
  const long long largeTiles = ((p.m + 127) / 128) * ((p.n + 127) / 128);
  if (largeTiles >= kMinLargeTiles) {
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

void builtinGemm(const char* opName, const GemmOperand& a, const GemmOperand& b,
                 const GemmOutput& c, float alpha, float beta, hipStream_t stream) {
  requireGemmDType(opName, "a", a.dtype);
  requireGemmDType(opName, "b", b.dtype);
  requireGemmDType(opName, "c", c.dtype);
  if (a.opCols() != b.opRows()) {
    throw ShapeError(std::string(opName) + ": op(a) has " + std::to_string(a.opCols()) +
                     " columns but op(b) has " + std::to_string(b.opRows()) + " rows");
  }
  const GemmProblem p{opName, a, b, c, a.opRows(), b.opCols(), a.opCols(), alpha, beta, stream};
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
