// hip/elementwise.hip — gather, rotary, SwiGLU, add/multiply/bias, cast and cross-entropy
// kernels. CPU twins: cpu/embedding.cpp, cpu/rope.cpp, cpu/swiglu.cpp, cpu/add.cpp,
// cpu/cross_entropy.cpp. Values are read as fp32, computed in fp32 and rounded once on store.
// Elementwise kernels use grid-stride loops, so any count fits a bounded grid.
//
// Note [packed elementwise]: a bf16 tensor read two bytes per thread keeps a GPU's memory at
// about half its bandwidth (on an H200, SwiGLU's passes over Llama-3.2-1B's 4096 × 8192
// activations ran at 40% of it). The streaming kernels (SwiGLU, GeGLU, add, multiply, scale, the
// f32 → bf16 cast and accumulation) therefore take template parameter P, the consecutive elements
// a thread handles per iteration: 8 (one 16-byte load or store per bf16 operand, two per f32
// one) when the count is a multiple of 8 and every operand is 16-byte aligned, as the allocator's
// tensors are; else 1. Each element is computed by the same expression either way, so the results
// are bit for bit the same.
#include "compute/hip/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "compute/hip/device_common.h"  // defines: loadFloat, storeFloat, blockSum, blockMax
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

using gpu::alignedTo;
using gpu::kPack;
using gpu::loadFloat;
using gpu::loadPack;
using gpu::packable;
using gpu::storeFloat;
using gpu::storePack;

constexpr int kThreads = 256;              // a multiple of both wave sizes (32 and 64)
constexpr long long kMaxBlocks = 1 << 16;  // enough to fill any GPU; the loops stride beyond
constexpr int kRowThreads = 256;           // one block per row for the cross-entropy

dim3 gridFor(long long count) {
  return dim3(static_cast<unsigned>(std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

// The grid of an elementwise kernel over count elements in packs of P.
dim3 gridFor(long long count, int pack) {
  return gridFor(count / pack);
}

__device__ inline long long firstIndex() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline long long gridStride() {
  return static_cast<long long>(gridDim.x) * blockDim.x;
}

// ids (tokens); table (vocab, dim); out (tokens, dim)
template <typename TableT>
__global__ void embeddingKernel(const TableT* table, long long dim, const int* ids, long long count,
                                hip_bfloat16* out) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    const long long t = i / dim;
    storeFloat(out, i, loadFloat(table, static_cast<long long>(ids[t]) * dim + i % dim));
  }
}

// x (tokens, heads, headDim); a thread per (token, group of heads, pack of P consecutive i)
// rotates the pairs (i, i + headDim/2) of its pack in each head of its group. The angle depends on
// the token and i alone, so its sine and cosine are computed once for the heads of a group (the
// accurate sincosf is most of the kernel's work when done per pair: 32 times over for Llama's
// query heads); the pairs' values are computed by the same expression whatever P and the group,
// so the results are the same bits. Note [RoPE packs]: with one i a thread (P = 1, every head in
// one thread) each access moved two bytes a thread and RoPE ran at ~1.6 TB/s of an H200's
// bandwidth over Llama-3.2-1B's q and k; P = 8 (16-byte accesses: Note [packed elementwise]) where
// headDim/2 and x's address allow, and groups of kRopeHeadsPerThread heads, so that a token's
// pack still has several threads over its heads. On the H200, 64 launches a Llama-3.2-1B step
// went from 0.84 ms to 0.62-0.63, Qwen2.5-0.5B's 96 from 0.86 to 0.71-0.73.
constexpr long long kRopeHeadsPerThread = 4;

// The sines (times sign) and cosines of token position `position`'s angles for the P pairs from
// i. The angle is the fp32 product, as on the CPU and in transformers; sincosf is the accurate
// (not the fast-math) version, within 2 ulp for the angles of any context length.
template <int P>
__device__ inline void ropeAngles(int position, const float* invFreq, long long i, float sign,
                                  float (&s)[P], float (&c)[P]) {
#pragma unroll
  for (int k = 0; k < P; ++k) {
    const float angle = static_cast<float>(position) * invFreq[i + k];
    sincosf(angle, &s[k], &c[k]);
    s[k] *= sign;
  }
}

template <int P>
__global__ void ropeKernel(hip_bfloat16* x, long long heads, long long half, const int* positions,
                           const float* invFreq, float sign, long long packs, long long groups,
                           long long count) {
  for (long long p = firstIndex(); p < count; p += gridStride()) {
    const long long i = p % packs * P;
    const long long g = p / packs % groups;
    const long long t = p / packs / groups;
    float s[P], c[P];
    ropeAngles(positions[t], invFreq, i, sign, s, c);
    hip_bfloat16* token = x + t * heads * 2 * half;
    const long long lastHead = min(heads, (g + 1) * kRopeHeadsPerThread);
    for (long long h = g * kRopeHeadsPerThread; h < lastHead; ++h) {
      hip_bfloat16* pair = token + h * 2 * half;
      float x1[P], x2[P], y1[P], y2[P];
      loadPack(pair, i, x1);
      loadPack(pair, i + half, x2);
#pragma unroll
      for (int k = 0; k < P; ++k) {
        y1[k] = x1[k] * c[k] - x2[k] * s[k];
        y2[k] = x2[k] * c[k] + x1[k] * s[k];
      }
      storePack(pair, i, y1);
      storePack(pair, i + half, y2);
    }
  }
}

// Backend::ropeBackwardStacked: dqkv's rows (ld apart) = [rope⁻¹(dq) | rope⁻¹(dk) | dv], a row's
// heads + 2·kvHeads heads in groups of kRopeHeadsPerThread (the angles computed once a group). A
// thread takes one pack of P values of its heads and reads the pack half a head away as well, so
// that a warp's store covers whole heads: dq's and dk's values are rotated back by ropeKernel's
// expressions, dv's copied (a group of dv's heads alone computes no angle). Note [RoPE into the
// stacked gradient] in train/TrainGraph.cpp.
template <int P>
__global__ void ropeBackwardStackedKernel(const hip_bfloat16* dq, const hip_bfloat16* dk,
                                          const hip_bfloat16* dv, long long heads,
                                          long long kvHeads, long long half, const int* positions,
                                          const float* invFreq, long long packs, long long groups,
                                          long long count, hip_bfloat16* dqkv, long long ld) {
  const long long rotated = heads + kvHeads;
  const long long rowHeads = rotated + kvHeads;
  for (long long p = firstIndex(); p < count; p += gridStride()) {
    const long long e = p % packs * P;  // within the head, 0 .. 2·half
    const long long g = p / packs % groups;
    const long long t = p / packs / groups;
    const bool firstHalf = e < half;
    const long long a = firstHalf ? e : e - half;
    const long long partner = firstHalf ? e + half : e - half;
    const long long firstHead = g * kRopeHeadsPerThread;
    const long long lastHead = min(rowHeads, firstHead + kRopeHeadsPerThread);
    float s[P] = {}, c[P] = {};
    if (firstHead < rotated) {
      ropeAngles(positions[t], invFreq, a, -1.0f, s, c);
    }
    hip_bfloat16* row = dqkv + t * ld;
    for (long long h = firstHead; h < lastHead; ++h) {
      hip_bfloat16* out = row + h * 2 * half;
      float own[P];
      if (h >= rotated) {
        loadPack(dv + (t * kvHeads + h - rotated) * 2 * half, e, own);
        storePack(out, e, own);
        continue;
      }
      const hip_bfloat16* pair =
          h < heads ? dq + (t * heads + h) * 2 * half : dk + (t * kvHeads + h - heads) * 2 * half;
      float other[P], y[P];
      loadPack(pair, e, own);
      loadPack(pair, partner, other);
#pragma unroll
      for (int k = 0; k < P; ++k) {
        y[k] = firstHalf ? own[k] * c[k] - other[k] * s[k] : own[k] * c[k] + other[k] * s[k];
      }
      storePack(out, e, y);
    }
  }
}

__device__ inline float sigmoid(float g) {
  return 1.0f / (1.0f + expf(-g));
}

template <int P>
__global__ void swigluForwardKernel(const hip_bfloat16* gate, const hip_bfloat16* up,
                                    long long count, hip_bfloat16* out) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float g[P], u[P], o[P];
    loadPack(gate, i, g);
    loadPack(up, i, u);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      o[k] = g[k] * sigmoid(g[k]) * u[k];
    }
    storePack(out, i, o);
  }
}

// Stacked: dgate and dup are the halves of one (rows, 2·cols) tensor (dgate at its column 0, dup at
// its column cols), element i of the inputs at i + (i / cols)·cols; else both dense like the
// inputs. A pack never straddles a row (cols is a multiple of P when stacked).
template <int P, bool Stacked>
__global__ void swigluBackwardKernel(const hip_bfloat16* dout, const hip_bfloat16* gate,
                                     const hip_bfloat16* up, long long count, long long cols,
                                     long long outLd, hip_bfloat16* dgate, hip_bfloat16* dup) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float g[P], u[P], d[P], dg[P], du[P];
    loadPack(gate, i, g);
    loadPack(up, i, u);
    loadPack(dout, i, d);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const float s = sigmoid(g[k]);
      du[k] = d[k] * g[k] * s;
      dg[k] = d[k] * u[k] * s * (1.0f + g[k] * (1.0f - s));
    }
    const long long o = Stacked ? i / cols * outLd + i % cols : i;
    storePack(dup, o, du);
    storePack(dgate, o, dg);
  }
}

constexpr float kSqrtTwoOverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// gelu_tanh(g) (PyTorch's approximate="tanh") and its derivative.
__device__ inline float2 geluTanh(float g) {
  const float t = tanhf(kSqrtTwoOverPi * (g + kGeluCubic * g * g * g));
  return make_float2(0.5f * g * (1.0f + t),
                     0.5f * (1.0f + t) + 0.5f * g * (1.0f - t * t) * kSqrtTwoOverPi *
                                             (1.0f + 3.0f * kGeluCubic * g * g));
}

template <int P>
__global__ void gegluForwardKernel(const hip_bfloat16* gate, const hip_bfloat16* up,
                                   long long count, hip_bfloat16* out) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float g[P], u[P], o[P];
    loadPack(gate, i, g);
    loadPack(up, i, u);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      o[k] = geluTanh(g[k]).x * u[k];
    }
    storePack(out, i, o);
  }
}

template <int P>
__global__ void gegluBackwardKernel(const hip_bfloat16* dout, const hip_bfloat16* gate,
                                    const hip_bfloat16* up, long long count, hip_bfloat16* dgate,
                                    hip_bfloat16* dup) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float g[P], u[P], d[P], dg[P], du[P];
    loadPack(gate, i, g);
    loadPack(up, i, u);
    loadPack(dout, i, d);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const float2 gelu = geluTanh(g[k]);
      du[k] = d[k] * gelu.x;
      dg[k] = d[k] * u[k] * gelu.y;
    }
    storePack(dup, i, du);
    storePack(dgate, i, dg);
  }
}

template <int P>
__global__ void scaleKernel(hip_bfloat16* x, long long count, float factor) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float v[P];
    loadPack(x, i, v);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      v[k] *= factor;
    }
    storePack(x, i, v);
  }
}

__global__ void softcapKernel(hip_bfloat16* x, long long count, float cap) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(x, i, cap * tanhf(loadFloat(x, i) / cap));
  }
}

template <int P>
__global__ void addKernel(hip_bfloat16* x, const hip_bfloat16* y, long long count) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float a[P], b[P];
    loadPack(x, i, a);
    loadPack(y, i, b);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      a[k] += b[k];
    }
    storePack(x, i, a);
  }
}

template <int P>
__global__ void multiplyKernel(hip_bfloat16* x, const hip_bfloat16* y, long long count) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float a[P], b[P];
    loadPack(x, i, a);
    loadPack(y, i, b);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      a[k] *= b[k];
    }
    storePack(x, i, a);
  }
}

// x (rows, dim); bias (dim)
template <typename BiasT>
__global__ void addBiasKernel(hip_bfloat16* x, const BiasT* bias, long long dim, long long count) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(x, i, loadFloat(x, i) + loadFloat(bias, i % dim));
  }
}

template <int P>
__global__ void castF32ToBf16Kernel(const float* in, long long count, hip_bfloat16* out) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float v[P];
    loadPack(in, i, v);
    storePack(out, i, v);
  }
}

// y (tokens, n) += scale · Σ_j lhsT[j, t] · w(o, j), w(o, j) = w[o·strideO + j·strideJ]; the sum
// in fp32 in the order j = 0 … k − 1, y rounded once. A block takes kLowRankThreads × C outputs
// o (C consecutive ones a thread, their C × K weights in registers) over kLowRankTokens tokens,
// whose K values of lhsT it stages in shared memory (every thread reads the same ones: a
// broadcast). A thread reads and writes its C outputs of a token as one pack (hip/
// device_common.h's loadPack), and loads G tokens' packs before it adds to any, so their loads
// are in flight together. K is k rounded up to a power of two (≤ kMaxLowRank); the rows j ≥ k
// are zeros in both operands, which adds nothing.
//
// Note [low-rank packs]: with one output a thread (C = 1, G = 16, 16 tokens a block, as before)
// the kernel moved 0.7-1.9 TB/s of y on an H200 where a copy moves 3.6 (Llama-3.2-1B's eleven
// LoRA products of a layer, T = 4096). Measured there over C ∈ {1, 2, 4, 8}, G and 16-128
// tokens a block: 32 tokens a block and, for k ≤ 16, C = 2 where w is a LoRA B (n, k) (a
// thread's weights are then 2k consecutive values) and C = 4 where it is a group's A (k, n)
// (consecutive threads read consecutive weights); C = 2 for k ≤ 32 and 1 beyond; G = 16 / C
// (8 / C from k = 32). That took 25-50% off every product (2.3-3.0 TB/s on the large ones);
// C = 8 was slower (its weights fill the registers). The sums are the same expressions in the
// same order, so y is bit for bit what the one-output kernel wrote.
constexpr int kLowRankThreads = 256;
constexpr int kLowRankTokens = 32;

template <int K, int C, int G, typename WeightT>
__global__ void __launch_bounds__(kLowRankThreads)
    addLowRankProductKernel(const hip_bfloat16* lhsT, const WeightT* w, long long tokens,
                            long long n, int k, long long strideO, long long strideJ, float scale,
                            hip_bfloat16* y) {
  __shared__ float lhs[kLowRankTokens][K];
  const long long o = (static_cast<long long>(blockIdx.x) * kLowRankThreads + threadIdx.x) * C;
  const long long t0 = static_cast<long long>(blockIdx.y) * kLowRankTokens;
  for (int e = static_cast<int>(threadIdx.x); e < K * kLowRankTokens; e += kLowRankThreads) {
    const int j = e / kLowRankTokens;
    const long long t = t0 + e % kLowRankTokens;
    lhs[e % kLowRankTokens][j] = j < k && t < tokens ? loadFloat(lhsT, j * tokens + t) : 0.0f;
  }
  float weights[C][K];
#pragma unroll
  for (int c = 0; c < C; ++c) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      weights[c][j] = j < k && o + c < n ? loadFloat(w, (o + c) * strideO + j * strideJ) : 0.0f;
    }
  }
  __syncthreads();
  if (o >= n) {
    return;
  }
  const long long count = tokens - t0 < kLowRankTokens ? tokens - t0 : kLowRankTokens;
  for (int g = 0; g < count; g += G) {
    float values[G][C];
#pragma unroll
    for (int t = 0; t < G; ++t) {
      if (g + t < count) {
        loadPack(y, (t0 + g + t) * n + o, values[t]);
      }
    }
#pragma unroll
    for (int t = 0; t < G; ++t) {
      if (g + t < count) {
        float out[C];
#pragma unroll
        for (int c = 0; c < C; ++c) {
          float sum = 0.0f;
#pragma unroll
          for (int j = 0; j < K; ++j) {
            sum += lhs[g + t][j] * weights[c][j];
          }
          out[c] = values[t][c] + scale * sum;
        }
        storePack(y, (t0 + g + t) * n + o, out);
      }
    }
  }
}

template <int K, int C, typename WeightT>
void launchLowRank(const hip_bfloat16* lhsT, const WeightT* w, long long tokens, long long n, int k,
                   long long strideO, long long strideJ, float scale, hip_bfloat16* y,
                   hipStream_t stream) {
  constexpr int kGroup = (K >= 32 ? 8 : 16) / C;  // tokens whose packs a thread loads together
  const long long columns = (n + C - 1) / C;
  const dim3 grid(static_cast<unsigned>((columns + kLowRankThreads - 1) / kLowRankThreads),
                  static_cast<unsigned>((tokens + kLowRankTokens - 1) / kLowRankTokens));
  launch("lowrank_gemm", addLowRankProductKernel<K, C, kGroup, WeightT>, grid,
         dim3(kLowRankThreads), 0, stream, lhsT, w, tokens, n, k, strideO, strideJ, scale, y);
}

// Note [low-rank packs]'s choice of C, or 1 where n or y's address does not allow packs of it.
template <int K, typename WeightT>
void launchLowRankPacked(const hip_bfloat16* lhsT, const WeightT* w, bool transposeW,
                         long long tokens, long long n, int k, long long strideO, long long strideJ,
                         float scale, hip_bfloat16* y, hipStream_t stream) {
  constexpr int kWidest = K <= 16 ? 4 : (K <= 32 ? 2 : 1);
  const int wanted = transposeW ? std::min(2, kWidest) : kWidest;
  const auto fits = [&](int c) {
    return n % c == 0 && alignedTo(y, 2 * static_cast<std::uintptr_t>(c));
  };
  if (wanted >= 4 && fits(4)) {
    launchLowRank<K, (kWidest >= 4 ? 4 : 1)>(lhsT, w, tokens, n, k, strideO, strideJ, scale, y,
                                             stream);
  } else if (wanted >= 2 && fits(2)) {
    launchLowRank<K, (kWidest >= 2 ? 2 : 1)>(lhsT, w, tokens, n, k, strideO, strideJ, scale, y,
                                             stream);
  } else {
    launchLowRank<K, 1>(lhsT, w, tokens, n, k, strideO, strideJ, scale, y, stream);
  }
}

template <int P>
__global__ void accumulateIntoBf16Kernel(const float* product, long long count, float beta,
                                         hip_bfloat16* c) {
  for (long long i = firstIndex() * P; i < count; i += gridStride() * P) {
    float p[P], v[P];
    loadPack(product, i, p);
    loadPack(c, i, v);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      v[k] = p[k] + beta * v[k];
    }
    storePack(c, i, v);
  }
}

// One block per row of logits (rows, vocab). Each thread keeps a running max and a sum of
// exponentials shifted by it (online softmax), so the row is read twice at most: once here and
// once for the target's logit.
__global__ void crossEntropyKernel(const hip_bfloat16* logits, long long vocab, const int* targets,
                                   int ignoreTarget, float* losses, float* logsumexp) {
  const long long row = blockIdx.x;
  const hip_bfloat16* rowLogits = logits + row * vocab;
  float localMax = -INFINITY;
  float localSum = 0.0f;
  for (long long i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float v = loadFloat(rowLogits, i);
    if (v > localMax) {
      localSum = localSum * expf(localMax - v) + 1.0f;
      localMax = v;
    } else {
      localSum += expf(v - localMax);
    }
  }
  const float rowMax = gpu::blockMax(localMax);
  // A thread that saw no element has localMax = −inf and localSum = 0: it adds nothing.
  const float shifted = localSum == 0.0f ? 0.0f : localSum * expf(localMax - rowMax);
  const float lse = rowMax + logf(gpu::blockSum(shifted));
  if (threadIdx.x == 0) {
    const int target = targets[row];
    logsumexp[row] = lse;
    losses[row] = target == ignoreTarget ? 0.0f : lse - loadFloat(rowLogits, target);
  }
}

const hip_bfloat16* asBf16(const std::uint16_t* p) {
  return reinterpret_cast<const hip_bfloat16*>(p);
}
hip_bfloat16* asBf16(std::uint16_t* p) {
  return reinterpret_cast<hip_bfloat16*>(p);
}

// Backend::copyMatrices' kernel: blockIdx.y picks a copy, the blocks along x stride over its
// elements. The copies are small (a LoRA weight, a rank's columns of T rows), so elements go one
// by one; a transposed read strides through src.
struct MatrixCopyArgs {
  const hip_bfloat16* src;
  long long srcLd;
  hip_bfloat16* dst;
  long long dstLd;
  long long rows;
  long long cols;
  int transpose;
  float scale;
};
struct MatrixCopyLaunch {
  MatrixCopyArgs job[kMatrixCopiesPerLaunch];
};

__global__ void copyMatricesKernel(MatrixCopyLaunch batch) {
  const MatrixCopyArgs& j = batch.job[blockIdx.y];
  const long long count = j.rows * j.cols;
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    const long long r = i / j.cols;
    const long long c = i - r * j.cols;
    const long long from = j.transpose != 0 ? c * j.srcLd + r : r * j.srcLd + c;
    storeFloat(j.dst, r * j.dstLd + c, j.scale * loadFloat(j.src, from));
  }
}

}  // namespace

void embeddingForward(const void* table, bool tableIsBf16, std::int64_t dim,
                      const std::int32_t* ids, std::int64_t tokens, std::uint16_t* out,
                      hipStream_t stream) {
  const long long count = tokens * dim;
  if (count == 0) {
    return;
  }
  if (tableIsBf16) {
    launch("embedding_forward", embeddingKernel<hip_bfloat16>, gridFor(count), dim3(kThreads), 0,
           stream, static_cast<const hip_bfloat16*>(table), dim, ids, count, asBf16(out));
  } else {
    launch("embedding_forward", embeddingKernel<float>, gridFor(count), dim3(kThreads), 0, stream,
           static_cast<const float*>(table), dim, ids, count, asBf16(out));
  }
}

void rope(std::uint16_t* x, std::int64_t tokens, std::int64_t heads, std::int64_t headDim,
          const std::int32_t* positions, const float* invFreq, bool inverse, hipStream_t stream) {
  const long long half = headDim / 2;
  if (tokens == 0 || heads == 0 || half == 0) {
    return;
  }
  const long long groups = (heads + kRopeHeadsPerThread - 1) / kRopeHeadsPerThread;
  const auto run = [&](auto kernel, long long pack) {
    const long long count = tokens * groups * (half / pack);  // a thread per (token, group, pack)
    launch("rope", kernel, gridFor(count), dim3(kThreads), 0, stream, asBf16(x), heads, half,
           positions, invFreq, inverse ? -1.0f : 1.0f, half / pack, groups, count);
  };
  if (half % kPack == 0 && alignedTo(x, 16)) {
    run(ropeKernel<kPack>, kPack);
  } else {
    run(ropeKernel<1>, 1);
  }
}

void ropeBackwardStacked(const std::uint16_t* dq, const std::uint16_t* dk, const std::uint16_t* dv,
                         std::int64_t tokens, std::int64_t heads, std::int64_t kvHeads,
                         std::int64_t headDim, const std::int32_t* positions, const float* invFreq,
                         std::uint16_t* dqkv, std::int64_t outLd, hipStream_t stream) {
  const long long half = headDim / 2;
  if (tokens == 0 || half == 0) {
    return;
  }
  const long long rowHeads = heads + 2 * kvHeads;
  const long long groups = (rowHeads + kRopeHeadsPerThread - 1) / kRopeHeadsPerThread;
  const auto run = [&](auto kernel, long long pack) {
    const long long packs = headDim / pack;
    const long long count = tokens * groups * packs;  // a thread per (token, group, pack)
    launch("rope_backward_stacked", kernel, gridFor(count), dim3(kThreads), 0, stream, asBf16(dq),
           asBf16(dk), asBf16(dv), heads, kvHeads, half, positions, invFreq, packs, groups, count,
           asBf16(dqkv), outLd);
  };
  if (half % kPack == 0 && outLd % kPack == 0 && alignedTo(dq, 16) && alignedTo(dk, 16) &&
      alignedTo(dv, 16) && alignedTo(dqkv, 16)) {
    run(ropeBackwardStackedKernel<kPack>, kPack);
  } else {
    run(ropeBackwardStackedKernel<1>, 1);
  }
}

void swigluForward(const std::uint16_t* gate, const std::uint16_t* up, std::int64_t count,
                   std::uint16_t* out, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, gate, up, out) ? kPack : 1;
  launch("swiglu_forward", pack == kPack ? swigluForwardKernel<kPack> : swigluForwardKernel<1>,
         gridFor(count, pack), dim3(kThreads), 0, stream, asBf16(gate), asBf16(up), count,
         asBf16(out));
}

void swigluBackward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                    std::int64_t count, std::uint16_t* dgate, std::uint16_t* dup,
                    hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, dout, gate, up, dgate, dup) ? kPack : 1;
  launch("swiglu_backward",
         pack == kPack ? swigluBackwardKernel<kPack, false> : swigluBackwardKernel<1, false>,
         gridFor(count, pack), dim3(kThreads), 0, stream, asBf16(dout), asBf16(gate), asBf16(up),
         count, 0LL, 0LL, asBf16(dgate), asBf16(dup));
}

void swigluBackwardStacked(const std::uint16_t* dout, const std::uint16_t* gate,
                           const std::uint16_t* up, std::int64_t rows, std::int64_t cols,
                           std::uint16_t* dGateUp, std::int64_t outLd, hipStream_t stream) {
  const long long count = rows * cols;
  if (count == 0) {
    return;
  }
  std::uint16_t* dup = dGateUp + cols;
  const int pack =
      cols % kPack == 0 && outLd % kPack == 0 && packable(count, dout, gate, up, dGateUp, dup)
          ? kPack
          : 1;
  launch("swiglu_backward",
         pack == kPack ? swigluBackwardKernel<kPack, true> : swigluBackwardKernel<1, true>,
         gridFor(count, pack), dim3(kThreads), 0, stream, asBf16(dout), asBf16(gate), asBf16(up),
         count, static_cast<long long>(cols), static_cast<long long>(outLd), asBf16(dGateUp),
         asBf16(dup));
}

void gegluForward(const std::uint16_t* gate, const std::uint16_t* up, std::int64_t count,
                  std::uint16_t* out, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, gate, up, out) ? kPack : 1;
  launch("geglu_forward", pack == kPack ? gegluForwardKernel<kPack> : gegluForwardKernel<1>,
         gridFor(count, pack), dim3(kThreads), 0, stream, asBf16(gate), asBf16(up), count,
         asBf16(out));
}

void gegluBackward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                   std::int64_t count, std::uint16_t* dgate, std::uint16_t* dup,
                   hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, dout, gate, up, dgate, dup) ? kPack : 1;
  launch("geglu_backward", pack == kPack ? gegluBackwardKernel<kPack> : gegluBackwardKernel<1>,
         gridFor(count, pack), dim3(kThreads), 0, stream, asBf16(dout), asBf16(gate), asBf16(up),
         count, asBf16(dgate), asBf16(dup));
}

void scaleInPlace(std::uint16_t* x, std::int64_t count, float factor, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, x) ? kPack : 1;
  launch("scale", pack == kPack ? scaleKernel<kPack> : scaleKernel<1>, gridFor(count, pack),
         dim3(kThreads), 0, stream, asBf16(x), count, factor);
}

void softcapInPlace(std::uint16_t* x, std::int64_t count, float cap, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("softcap", softcapKernel, gridFor(count), dim3(kThreads), 0, stream, asBf16(x), count,
         cap);
}

void addInPlace(std::uint16_t* x, const std::uint16_t* y, std::int64_t count, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, x, y) ? kPack : 1;
  launch("add", pack == kPack ? addKernel<kPack> : addKernel<1>, gridFor(count, pack),
         dim3(kThreads), 0, stream, asBf16(x), asBf16(y), count);
}

void multiplyInPlace(std::uint16_t* x, const std::uint16_t* y, std::int64_t count,
                     hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, x, y) ? kPack : 1;
  launch("multiply", pack == kPack ? multiplyKernel<kPack> : multiplyKernel<1>,
         gridFor(count, pack), dim3(kThreads), 0, stream, asBf16(x), asBf16(y), count);
}

// dst row r, columns 0..unitsPerRow ← src row r, the rows srcUnitsPerRow and dstUnitsPerRow units
// apart (HipBackend::stackColumns' parts, a column block of a LoRA site's dy).
template <typename Unit>
__global__ void copyColumnsKernel(const Unit* __restrict__ src, long long srcUnitsPerRow,
                                  long long unitsPerRow, long long units, Unit* __restrict__ dst,
                                  long long dstUnitsPerRow) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < units;
       i += stride) {
    const long long r = i / unitsPerRow;
    const long long c = i - r * unitsPerRow;
    dst[r * dstUnitsPerRow + c] = src[r * srcUnitsPerRow + c];
  }
}

void copyColumns(const std::uint16_t* src, std::int64_t rows, std::int64_t cols, std::int64_t srcLd,
                 std::uint16_t* dst, std::int64_t dstLd, hipStream_t stream) {
  const long long count = rows * cols;
  if (count == 0) {
    return;
  }
  constexpr long long kPerUnit = sizeof(uint4) / sizeof(std::uint16_t);
  if (cols % kPerUnit == 0 && srcLd % kPerUnit == 0 && dstLd % kPerUnit == 0 &&
      gpu::alignedTo(src, 16) && gpu::alignedTo(dst, 16)) {
    launch("stack_columns", copyColumnsKernel<uint4>, gridFor(count / kPerUnit), dim3(kThreads), 0,
           stream, reinterpret_cast<const uint4*>(src), srcLd / kPerUnit, cols / kPerUnit,
           count / kPerUnit, reinterpret_cast<uint4*>(dst), dstLd / kPerUnit);
  } else {
    launch("stack_columns", copyColumnsKernel<std::uint16_t>, gridFor(count), dim3(kThreads), 0,
           stream, src, srcLd, cols, count, dst, dstLd);
  }
}

void copyMatrices(const MatrixCopyJob* jobs, std::size_t count, hipStream_t stream) {
  for (std::size_t first = 0; first < count; first += kMatrixCopiesPerLaunch) {
    MatrixCopyLaunch batch;
    const std::size_t n = std::min(kMatrixCopiesPerLaunch, count - first);
    long long most = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const MatrixCopyJob& j = jobs[first + i];
      batch.job[i] = {asBf16(j.src), j.srcLd, asBf16(j.dst),       j.dstLd,
                      j.rows,        j.cols,  j.transpose ? 1 : 0, j.scale};
      most = std::max<long long>(most, j.rows * j.cols);
    }
    if (most == 0) {
      continue;
    }
    const dim3 grid(gridFor(most).x, static_cast<unsigned>(n));
    launch("copy_matrices", copyMatricesKernel, grid, dim3(kThreads), 0, stream, batch);
  }
}

void addBias(std::uint16_t* x, const void* bias, bool biasIsBf16, std::int64_t rows,
             std::int64_t dim, hipStream_t stream) {
  const long long count = rows * dim;
  if (count == 0) {
    return;
  }
  if (biasIsBf16) {
    launch("add_bias", addBiasKernel<hip_bfloat16>, gridFor(count), dim3(kThreads), 0, stream,
           asBf16(x), static_cast<const hip_bfloat16*>(bias), dim, count);
  } else {
    launch("add_bias", addBiasKernel<float>, gridFor(count), dim3(kThreads), 0, stream, asBf16(x),
           static_cast<const float*>(bias), dim, count);
  }
}

void castF32ToBf16(const float* in, std::int64_t count, std::uint16_t* out, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, in, out) ? kPack : 1;
  launch("cast_f32_bf16", pack == kPack ? castF32ToBf16Kernel<kPack> : castF32ToBf16Kernel<1>,
         gridFor(count, pack), dim3(kThreads), 0, stream, in, count, asBf16(out));
}

void accumulateIntoBf16(const float* product, std::int64_t count, float beta, std::uint16_t* c,
                        hipStream_t stream) {
  if (count == 0) {
    return;
  }
  const int pack = packable(count, product, c) ? kPack : 1;
  launch("accumulate_bf16",
         pack == kPack ? accumulateIntoBf16Kernel<kPack> : accumulateIntoBf16Kernel<1>,
         gridFor(count, pack), dim3(kThreads), 0, stream, product, count, beta, asBf16(c));
}

void addLowRankProduct(const std::uint16_t* lhsT, std::int64_t k, std::int64_t tokens,
                       const void* w, bool weightIsBf16, bool transposeW, std::int64_t n,
                       float scale, std::uint16_t* y, hipStream_t stream) {
  if (tokens == 0 || n == 0) {
    return;
  }
  // op(w) (k, n): w stored (n, k) when transposed (a LoRA B), else (k, n) (a group's A).
  const long long strideO = transposeW ? k : 1;
  const long long strideJ = transposeW ? 1 : n;
  const int rank = static_cast<int>(k);
  const auto run = [&](auto kernelK) {
    constexpr int K = decltype(kernelK)::value;
    if (weightIsBf16) {
      launchLowRankPacked<K>(asBf16(lhsT), static_cast<const hip_bfloat16*>(w), transposeW, tokens,
                             n, rank, strideO, strideJ, scale, asBf16(y), stream);
    } else {
      launchLowRankPacked<K>(asBf16(lhsT), static_cast<const float*>(w), transposeW, tokens, n,
                             rank, strideO, strideJ, scale, asBf16(y), stream);
    }
  };
  if (k <= 8) {
    run(std::integral_constant<int, 8>{});
  } else if (k <= 16) {
    run(std::integral_constant<int, 16>{});
  } else if (k <= 32) {
    run(std::integral_constant<int, 32>{});
  } else {
    run(std::integral_constant<int, kMaxLowRank>{});
  }
}

void crossEntropyForward(const std::uint16_t* logits, std::int64_t rows, std::int64_t vocab,
                         const std::int32_t* targets, std::int32_t ignoreTarget, float* losses,
                         float* logsumexp, hipStream_t stream) {
  if (rows == 0) {
    return;
  }
  launch("cross_entropy_forward", crossEntropyKernel, dim3(static_cast<unsigned>(rows)),
         dim3(kRowThreads), 0, stream, asBf16(logits), vocab, targets, ignoreTarget, losses,
         logsumexp);
}

}  // namespace lorascope::compute::hip
