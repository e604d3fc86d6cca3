// hip/elementwise.hip — gather, rotary, SwiGLU, add/multiply/bias, cast and cross-entropy
// kernels. CPU twins: cpu/embedding.cpp, cpu/rope.cpp, cpu/swiglu.cpp, cpu/add.cpp,
// cpu/cross_entropy.cpp. Values are read as fp32, computed in fp32 and rounded once on store.
// Elementwise kernels use grid-stride loops, so any count fits a bounded grid.
#include "compute/hip/elementwise.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "compute/hip/device_common.h"  // defines: loadFloat, storeFloat, blockSum, blockMax
#include "compute/hip/launch.h"         // defines: launch

namespace lorascope::compute::hip {
namespace {

using gpu::loadFloat;
using gpu::storeFloat;

constexpr int kThreads = 256;              // a multiple of both wave sizes (32 and 64)
constexpr long long kMaxBlocks = 1 << 16;  // enough to fill any GPU; the loops stride beyond
constexpr int kRowThreads = 256;           // one block per row for the cross-entropy

dim3 gridFor(long long count) {
  return dim3(static_cast<unsigned>(std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
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

// x (tokens, heads, headDim); one thread per rotated pair (i, i + headDim/2).
__global__ void ropeKernel(hip_bfloat16* x, long long heads, long long half, const int* positions,
                           const float* invFreq, float sign, long long pairs) {
  for (long long p = firstIndex(); p < pairs; p += gridStride()) {
    const long long i = p % half;
    const long long row = p / half;  // t · heads + h
    const long long t = row / heads;
    // The angle is the fp32 product, as on the CPU and in transformers; sincosf is the accurate
    // (not the fast-math) version, within 2 ulp for the angles of any context length.
    const float angle = static_cast<float>(positions[t]) * invFreq[i];
    float s = 0.0f;
    float c = 0.0f;
    sincosf(angle, &s, &c);
    s *= sign;
    hip_bfloat16* pair = x + row * 2 * half;
    const float x1 = loadFloat(pair, i);
    const float x2 = loadFloat(pair, i + half);
    storeFloat(pair, i, x1 * c - x2 * s);
    storeFloat(pair, i + half, x2 * c + x1 * s);
  }
}

__device__ inline float sigmoid(float g) {
  return 1.0f / (1.0f + expf(-g));
}

__global__ void swigluForwardKernel(const hip_bfloat16* gate, const hip_bfloat16* up,
                                    long long count, hip_bfloat16* out) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    const float g = loadFloat(gate, i);
    storeFloat(out, i, g * sigmoid(g) * loadFloat(up, i));
  }
}

__global__ void swigluBackwardKernel(const hip_bfloat16* dout, const hip_bfloat16* gate,
                                     const hip_bfloat16* up, long long count, hip_bfloat16* dgate,
                                     hip_bfloat16* dup) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    const float g = loadFloat(gate, i);
    const float s = sigmoid(g);
    const float d = loadFloat(dout, i);
    storeFloat(dup, i, d * g * s);
    storeFloat(dgate, i, d * loadFloat(up, i) * s * (1.0f + g * (1.0f - s)));
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

__global__ void gegluForwardKernel(const hip_bfloat16* gate, const hip_bfloat16* up,
                                   long long count, hip_bfloat16* out) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(out, i, geluTanh(loadFloat(gate, i)).x * loadFloat(up, i));
  }
}

__global__ void gegluBackwardKernel(const hip_bfloat16* dout, const hip_bfloat16* gate,
                                    const hip_bfloat16* up, long long count, hip_bfloat16* dgate,
                                    hip_bfloat16* dup) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    const float2 g = geluTanh(loadFloat(gate, i));
    const float d = loadFloat(dout, i);
    storeFloat(dup, i, d * g.x);
    storeFloat(dgate, i, d * loadFloat(up, i) * g.y);
  }
}

__global__ void scaleKernel(hip_bfloat16* x, long long count, float factor) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(x, i, loadFloat(x, i) * factor);
  }
}

__global__ void softcapKernel(hip_bfloat16* x, long long count, float cap) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(x, i, cap * tanhf(loadFloat(x, i) / cap));
  }
}

__global__ void addKernel(hip_bfloat16* x, const hip_bfloat16* y, long long count) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(x, i, loadFloat(x, i) + loadFloat(y, i));
  }
}

__global__ void multiplyKernel(hip_bfloat16* x, const hip_bfloat16* y, long long count) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(x, i, loadFloat(x, i) * loadFloat(y, i));
  }
}

// x (rows, dim); bias (dim)
template <typename BiasT>
__global__ void addBiasKernel(hip_bfloat16* x, const BiasT* bias, long long dim, long long count) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(x, i, loadFloat(x, i) + loadFloat(bias, i % dim));
  }
}

__global__ void castF32ToBf16Kernel(const float* in, long long count, hip_bfloat16* out) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(out, i, in[i]);
  }
}

// y (tokens, n) += scale · Σ_j lhsT[j, t] · w(o, j), w(o, j) = w[o·strideO + j·strideJ]; the sum
// in fp32 in the order j = 0 … k − 1, y rounded once. A block takes kLowRankColumns outputs o (a
// thread each, its k weights in registers) over kLowRankTokens tokens, whose k values of lhsT it
// stages in shared memory (every thread reads the same one: a broadcast). Each thread loads its
// y values of those tokens before it adds to any, so their loads are in flight together. y is read
// and written once, a row of consecutive o per wave: coalesced. K is k rounded up to a power of
// two (≤ kMaxLowRank); the rows j ≥ k are zeros in both operands, which adds nothing.
constexpr int kLowRankColumns = 256;
constexpr int kLowRankTokens = 16;

template <int K, typename WeightT>
__global__ void __launch_bounds__(kLowRankColumns)
    addLowRankProductKernel(const hip_bfloat16* lhsT, const WeightT* w, long long tokens,
                            long long n, int k, long long strideO, long long strideJ, float scale,
                            hip_bfloat16* y) {
  __shared__ float lhs[K][kLowRankTokens];
  const long long o = static_cast<long long>(blockIdx.x) * kLowRankColumns + threadIdx.x;
  const long long t0 = static_cast<long long>(blockIdx.y) * kLowRankTokens;
  for (int e = static_cast<int>(threadIdx.x); e < K * kLowRankTokens; e += kLowRankColumns) {
    const int j = e / kLowRankTokens;
    const long long t = t0 + e % kLowRankTokens;
    lhs[j][e % kLowRankTokens] = j < k && t < tokens ? loadFloat(lhsT, j * tokens + t) : 0.0f;
  }
  float weights[K];
#pragma unroll
  for (int j = 0; j < K; ++j) {
    weights[j] = j < k && o < n ? loadFloat(w, o * strideO + j * strideJ) : 0.0f;
  }
  __syncthreads();
  if (o >= n) {
    return;
  }
  const long long count = tokens - t0 < kLowRankTokens ? tokens - t0 : kLowRankTokens;
  float values[kLowRankTokens];
#pragma unroll
  for (int t = 0; t < kLowRankTokens; ++t) {
    values[t] = t < count ? loadFloat(y, (t0 + t) * n + o) : 0.0f;
  }
#pragma unroll
  for (int t = 0; t < kLowRankTokens; ++t) {
    if (t < count) {
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < K; ++j) {
        sum += lhs[j][t] * weights[j];
      }
      storeFloat(y, (t0 + t) * n + o, values[t] + scale * sum);
    }
  }
}

template <int K>
void launchLowRank(const hip_bfloat16* lhsT, const void* w, bool weightIsBf16, long long tokens,
                   long long n, int k, long long strideO, long long strideJ, float scale,
                   hip_bfloat16* y, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>((n + kLowRankColumns - 1) / kLowRankColumns),
                  static_cast<unsigned>((tokens + kLowRankTokens - 1) / kLowRankTokens));
  if (weightIsBf16) {
    launch("lowrank_gemm", addLowRankProductKernel<K, hip_bfloat16>, grid, dim3(kLowRankColumns), 0,
           stream, lhsT, static_cast<const hip_bfloat16*>(w), tokens, n, k, strideO, strideJ, scale,
           y);
  } else {
    launch("lowrank_gemm", addLowRankProductKernel<K, float>, grid, dim3(kLowRankColumns), 0,
           stream, lhsT, static_cast<const float*>(w), tokens, n, k, strideO, strideJ, scale, y);
  }
}

__global__ void accumulateIntoBf16Kernel(const float* product, long long count, float beta,
                                         hip_bfloat16* c) {
  for (long long i = firstIndex(); i < count; i += gridStride()) {
    storeFloat(c, i, product[i] + beta * loadFloat(c, i));
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
  const long long pairs = tokens * heads * half;
  if (pairs == 0) {
    return;
  }
  launch("rope", ropeKernel, gridFor(pairs), dim3(kThreads), 0, stream, asBf16(x), heads, half,
         positions, invFreq, inverse ? -1.0f : 1.0f, pairs);
}

void swigluForward(const std::uint16_t* gate, const std::uint16_t* up, std::int64_t count,
                   std::uint16_t* out, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("swiglu_forward", swigluForwardKernel, gridFor(count), dim3(kThreads), 0, stream,
         asBf16(gate), asBf16(up), count, asBf16(out));
}

void swigluBackward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                    std::int64_t count, std::uint16_t* dgate, std::uint16_t* dup,
                    hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("swiglu_backward", swigluBackwardKernel, gridFor(count), dim3(kThreads), 0, stream,
         asBf16(dout), asBf16(gate), asBf16(up), count, asBf16(dgate), asBf16(dup));
}

void gegluForward(const std::uint16_t* gate, const std::uint16_t* up, std::int64_t count,
                  std::uint16_t* out, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("geglu_forward", gegluForwardKernel, gridFor(count), dim3(kThreads), 0, stream,
         asBf16(gate), asBf16(up), count, asBf16(out));
}

void gegluBackward(const std::uint16_t* dout, const std::uint16_t* gate, const std::uint16_t* up,
                   std::int64_t count, std::uint16_t* dgate, std::uint16_t* dup,
                   hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("geglu_backward", gegluBackwardKernel, gridFor(count), dim3(kThreads), 0, stream,
         asBf16(dout), asBf16(gate), asBf16(up), count, asBf16(dgate), asBf16(dup));
}

void scaleInPlace(std::uint16_t* x, std::int64_t count, float factor, hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("scale", scaleKernel, gridFor(count), dim3(kThreads), 0, stream, asBf16(x), count, factor);
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
  launch("add", addKernel, gridFor(count), dim3(kThreads), 0, stream, asBf16(x), asBf16(y), count);
}

void multiplyInPlace(std::uint16_t* x, const std::uint16_t* y, std::int64_t count,
                     hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("multiply", multiplyKernel, gridFor(count), dim3(kThreads), 0, stream, asBf16(x),
         asBf16(y), count);
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
  launch("cast_f32_bf16", castF32ToBf16Kernel, gridFor(count), dim3(kThreads), 0, stream, in, count,
         asBf16(out));
}

void accumulateIntoBf16(const float* product, std::int64_t count, float beta, std::uint16_t* c,
                        hipStream_t stream) {
  if (count == 0) {
    return;
  }
  launch("accumulate_bf16", accumulateIntoBf16Kernel, gridFor(count), dim3(kThreads), 0, stream,
         product, count, beta, asBf16(c));
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
    launchLowRank<decltype(kernelK)::value>(asBf16(lhsT), w, weightIsBf16, tokens, n, rank, strideO,
                                            strideJ, scale, asBf16(y), stream);
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
