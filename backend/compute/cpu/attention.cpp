// cpu/attention.cpp — causal GQA attention, one query row at a time: scores over keys 0..i, a
// max-shifted softmax, then the weighted sum of values; no (seq, seq) buffer. The backward pass
// walks the same rows, recomputing each probability from the saved logsumexp, and accumulates
// dk/dv of a KV head over its whole group of query heads. fp32 with fp32 accumulation (as the GPU
// kernels); the softmax normaliser is summed in double. (batch, head) items — (batch, KV head)
// in the backward — run in parallel (cpu/parallel.h); each is computed the same way on any thread.
#include "compute/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "compute/cpu/parallel.h"  // defines: parallelFor

namespace lorascope::compute::cpu {
namespace {

constexpr int kLanes = 8;  // independent partial sums: lets the compiler vectorise the dot product

float dot(const float* a, const float* b, std::int64_t n) {
  float partial[kLanes] = {};
  std::int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      partial[l] += a[d + l] * b[d + l];
    }
  }
  float sum = 0.0f;
  for (; d < n; ++d) {
    sum += a[d] * b[d];
  }
  for (int l = 0; l < kLanes; ++l) {
    sum += partial[l];
  }
  return sum;
}

// y (n) += alpha · x (n)
void axpy(float alpha, const float* x, float* y, std::int64_t n) {
  for (std::int64_t d = 0; d < n; ++d) {
    y[d] += alpha * x[d];
  }
}

}  // namespace

void attentionForward(const float* q, const float* k, const float* v, AttentionDims dims,
                      float scale, float* out, float* logsumexp) {
  // Plain copies, not structured bindings: the lambda below captures them (clang 15 cannot).
  const std::int64_t batch = dims.batch, seq = dims.seq, heads = dims.heads;
  const std::int64_t kvHeads = dims.kvHeads, headDim = dims.headDim;
  const std::int64_t group = heads / kvHeads;  // query heads per KV head
  const std::int64_t qRow = heads * headDim;   // stride of one token in q and out
  const std::int64_t kvRow = kvHeads * headDim;
  parallelFor(batch * heads, [=](std::int64_t item) {
    const std::int64_t b = item / heads;
    const std::int64_t h = item % heads;
    const std::int64_t kvh = h / group;
    std::vector<float> scores(static_cast<std::size_t>(seq));
    std::vector<float> accumulator(static_cast<std::size_t>(headDim));
    for (std::int64_t i = 0; i < seq; ++i) {
      const float* qi = q + (b * seq + i) * qRow + h * headDim;
      float maxScore = -INFINITY;
      for (std::int64_t j = 0; j <= i; ++j) {
        const float s = dot(qi, k + (b * seq + j) * kvRow + kvh * headDim, headDim) * scale;
        scores[static_cast<std::size_t>(j)] = s;
        maxScore = std::max(maxScore, s);
      }
      double sum = 0.0;
      std::fill(accumulator.begin(), accumulator.end(), 0.0f);
      for (std::int64_t j = 0; j <= i; ++j) {
        const float p = std::exp(scores[static_cast<std::size_t>(j)] - maxScore);
        sum += p;
        axpy(p, v + (b * seq + j) * kvRow + kvh * headDim, accumulator.data(), headDim);
      }
      const auto inverse = static_cast<float>(1.0 / sum);
      float* oi = out + (b * seq + i) * qRow + h * headDim;
      for (std::int64_t d = 0; d < headDim; ++d) {
        oi[d] = accumulator[static_cast<std::size_t>(d)] * inverse;
      }
      logsumexp[(b * heads + h) * seq + i] = static_cast<float>(maxScore + std::log(sum));
    }
  });
}

void attentionBackward(const float* dout, const float* q, const float* k, const float* v,
                       const float* out, const float* logsumexp, AttentionDims dims, float scale,
                       float* dq, float* dk, float* dv) {
  // Plain copies, not structured bindings: the lambda below captures them (clang 15 cannot).
  const std::int64_t batch = dims.batch, seq = dims.seq, heads = dims.heads;
  const std::int64_t kvHeads = dims.kvHeads, headDim = dims.headDim;
  const std::int64_t group = heads / kvHeads;
  const std::int64_t qRow = heads * headDim;
  const std::int64_t kvRow = kvHeads * headDim;
  parallelFor(batch * kvHeads, [=](std::int64_t item) {
    const std::int64_t b = item / kvHeads;
    const std::int64_t kvh = item % kvHeads;
    const auto kvAt = [&](std::int64_t j) { return (b * seq + j) * kvRow + kvh * headDim; };
    for (std::int64_t j = 0; j < seq; ++j) {
      std::fill(dk + kvAt(j), dk + kvAt(j) + headDim, 0.0f);
      std::fill(dv + kvAt(j), dv + kvAt(j) + headDim, 0.0f);
    }
    for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
      for (std::int64_t i = 0; i < seq; ++i) {
        const std::int64_t qAt = (b * seq + i) * qRow + h * headDim;
        const float* qi = q + qAt;
        const float* doi = dout + qAt;
        const float rowDot = dot(doi, out + qAt, headDim);  // D_i
        const float lse = logsumexp[(b * heads + h) * seq + i];
        float* dqi = dq + qAt;
        std::fill(dqi, dqi + headDim, 0.0f);
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* kj = k + kvAt(j);
          const float p = std::exp(dot(qi, kj, headDim) * scale - lse);
          const float ds = p * (dot(doi, v + kvAt(j), headDim) - rowDot);
          axpy(ds, kj, dqi, headDim);
          axpy(ds, qi, dk + kvAt(j), headDim);  // scaled once below
          axpy(p, doi, dv + kvAt(j), headDim);
        }
        for (std::int64_t d = 0; d < headDim; ++d) {
          dqi[d] *= scale;
        }
      }
    }
    for (std::int64_t j = 0; j < seq; ++j) {
      for (std::int64_t d = 0; d < headDim; ++d) {
        dk[kvAt(j) + d] *= scale;
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
