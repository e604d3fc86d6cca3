// cpu/attention.cpp — causal GQA attention as blocked GEMMs through OpenBLAS.
//
// A tile is kQueryBlock query rows of one (batch, head) against keys 0 .. the tile's last row
// (the causal mask makes the later keys irrelevant, so they are never computed). A head's slice
// of q (batch, seq, heads, headDim) is a strided matrix (leading dimension heads·headDim), and a
// query head reads its KV head's slice the same way: GQA costs no copy of K or V.
//
// Forward, per tile: scores = scale·Q_tile·Kᵀ (one sgemm), a max-shifted softmax per row in
// place (masked entries set to 0; the normaliser summed in double), out = P·V (one sgemm) scaled
// by 1/sum. Tiles are independent, so (batch, head, tile) items run in parallel.
//
// Backward, per (batch, head): for each tile, P is recomputed from the saved logsumexp (no
// (seq, seq) tensor is kept between the passes), dP = dO_tile·Vᵀ, dS = scale·P⊙(dP − D) with
// D_i = dO_i·O_i, then dQ_tile = dS·K, dK += dSᵀ·Q_tile and dV += Pᵀ·dO_tile (5 sgemms). With
// GQA several query heads feed one KV head: each head accumulates its own dK/dV and a second
// parallel pass sums the group in head order, so no two threads ever add into the same row and
// the result does not depend on the thread that ran a head.
//
// fp32 with fp32 accumulation, as the GPU kernels.
#include "compute/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "compute/cpu/fast_exp.h"  // defines: expArray, sumAsDouble
#include "compute/cpu/matmul.h"    // defines: cpu::sgemm
#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelFor

namespace lorascope::compute::cpu {
namespace {

// Query rows per tile: a (64, keys) block of scores stays in L2 for keys up to a few thousand,
// and the causal tiles waste at most a 64-row triangle each.
constexpr std::int64_t kQueryBlock = 64;

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

// One tile's rows and keys.
struct Tile {
  std::int64_t first = 0;  // first query row
  std::int64_t rows = 0;
  std::int64_t keys = 0;  // first + rows: the keys its last row sees
};

Tile tileAt(std::int64_t block, std::int64_t seq) {
  const std::int64_t first = block * kQueryBlock;
  const std::int64_t rows = std::min(kQueryBlock, seq - first);
  return {first, rows, first + rows};
}

// A per-thread scratch buffer of at least `floats` (kept between calls: no allocation per tile).
float* threadScratch(int which, std::int64_t floats) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& buffer = buffers[which];
  if (static_cast<std::int64_t>(buffer.size()) < floats) {
    buffer.resize(static_cast<std::size_t>(floats));
  }
  return buffer.data();
}

// row (keys) holds scores; the first `valid` are real, the rest masked. Leaves the unnormalised
// probabilities exp(s − max) in place (0 where masked) and returns log Σ and 1/Σ.
struct RowSoftmax {
  float logsumexp;
  float inverseSum;
};
RowSoftmax softmaxRowInPlace(float* row, std::int64_t valid, std::int64_t keys) {
  const float maxScore = *std::max_element(row, row + valid);
  expArray(row, row, valid, 1.0f, maxScore);
  const double sum = sumAsDouble(row, valid);
  std::fill(row + valid, row + keys, 0.0f);
  return {static_cast<float>(maxScore + std::log(sum)), static_cast<float>(1.0 / sum)};
}

}  // namespace

void attentionForward(const float* q, const float* k, const float* v, AttentionDims dims,
                      float scale, float* out, float* logsumexp) {
  const OpTimer timer(CpuOp::AttentionForward);
  // Plain copies, not structured bindings: the lambda below captures them (clang 15 cannot).
  const std::int64_t batch = dims.batch, seq = dims.seq, heads = dims.heads;
  const std::int64_t kvHeads = dims.kvHeads, headDim = dims.headDim;
  const std::int64_t group = heads / kvHeads;  // query heads per KV head
  const std::int64_t qRow = heads * headDim;   // stride of one token in q and out
  const std::int64_t kvRow = kvHeads * headDim;
  const std::int64_t blocks = (seq + kQueryBlock - 1) / kQueryBlock;
  parallelFor(batch * heads * blocks, [=](std::int64_t item) {
    // The last tiles (the most keys) first, so that the items handed out last are the cheapest.
    const Tile t = tileAt(blocks - 1 - item % blocks, seq);
    const std::int64_t b = item / blocks / heads;
    const std::int64_t h = item / blocks % heads;
    const std::int64_t tokenAt = (b * seq + t.first) * qRow + h * headDim;
    const float* kHead = k + b * seq * kvRow + h / group * headDim;
    const float* vHead = v + b * seq * kvRow + h / group * headDim;
    float* probs = threadScratch(0, t.rows * t.keys);  // (rows, keys)
    sgemm(q + tokenAt, false, qRow, kHead, true, kvRow, probs, t.keys, {t.rows, t.keys, headDim},
          scale, 0.0f);
    float* inverseSums = threadScratch(1, t.rows);
    for (std::int64_t r = 0; r < t.rows; ++r) {
      const RowSoftmax s = softmaxRowInPlace(probs + r * t.keys, t.first + r + 1, t.keys);
      logsumexp[(b * heads + h) * seq + t.first + r] = s.logsumexp;
      inverseSums[r] = s.inverseSum;
    }
    float* o = out + tokenAt;
    sgemm(probs, false, t.keys, vHead, false, kvRow, o, qRow, {t.rows, headDim, t.keys}, 1.0f,
          0.0f);
    for (std::int64_t r = 0; r < t.rows; ++r) {
      for (std::int64_t d = 0; d < headDim; ++d) {
        o[r * qRow + d] *= inverseSums[r];
      }
    }
  });
}

void attentionBackward(const float* dout, const float* q, const float* k, const float* v,
                       const float* out, const float* logsumexp, AttentionDims dims, float scale,
                       float* dq, float* dk, float* dv) {
  const OpTimer timer(CpuOp::AttentionBackward);
  // Plain copies, not structured bindings: the lambda below captures them (clang 15 cannot).
  const std::int64_t batch = dims.batch, seq = dims.seq, heads = dims.heads;
  const std::int64_t kvHeads = dims.kvHeads, headDim = dims.headDim;
  const std::int64_t group = heads / kvHeads;
  const std::int64_t qRow = heads * headDim;
  const std::int64_t kvRow = kvHeads * headDim;
  const std::int64_t blocks = (seq + kQueryBlock - 1) / kQueryBlock;
  const std::int64_t headFloats = seq * headDim;  // one head's dK (or dV)
  // Without GQA a head owns its KV head's rows and accumulates straight into dk/dv; with it,
  // each query head's dK and dV go to its own slice here first.
  const bool direct = group == 1;
  const auto perHead = std::make_unique_for_overwrite<float[]>(
      static_cast<std::size_t>(direct ? 0 : batch * heads * 2 * headFloats));
  float* const partial = perHead.get();
  parallelFor(batch * heads, [=](std::int64_t item) {
    const std::int64_t b = item / heads;
    const std::int64_t h = item % heads;
    const std::int64_t kvAt = b * seq * kvRow + h / group * headDim;
    const std::int64_t ldKv = direct ? kvRow : headDim;
    float* dkHead = direct ? dk + kvAt : partial + item * 2 * headFloats;
    float* dvHead = direct ? dv + kvAt : dkHead + headFloats;
    for (std::int64_t j = 0; j < seq; ++j) {
      std::fill_n(dkHead + j * ldKv, headDim, 0.0f);
      std::fill_n(dvHead + j * ldKv, headDim, 0.0f);
    }
    for (std::int64_t block = 0; block < blocks; ++block) {
      const Tile t = tileAt(block, seq);
      const std::int64_t tokenAt = (b * seq + t.first) * qRow + h * headDim;
      float* probs = threadScratch(0, t.rows * t.keys);   // (rows, keys) P
      float* dprobs = threadScratch(1, t.rows * t.keys);  // (rows, keys) dP, then dS
      sgemm(q + tokenAt, false, qRow, k + kvAt, true, kvRow, probs, t.keys,
            {t.rows, t.keys, headDim}, scale, 0.0f);
      sgemm(dout + tokenAt, false, qRow, v + kvAt, true, kvRow, dprobs, t.keys,
            {t.rows, t.keys, headDim}, 1.0f, 0.0f);
      for (std::int64_t r = 0; r < t.rows; ++r) {
        const std::int64_t i = t.first + r;
        const float lse = logsumexp[(b * heads + h) * seq + i];
        const float rowDot = dot(dout + tokenAt + r * qRow, out + tokenAt + r * qRow, headDim);
        float* p = probs + r * t.keys;
        float* ds = dprobs + r * t.keys;
        expArray(p, p, i + 1, 1.0f, lse);
        for (std::int64_t j = 0; j <= i; ++j) {
          ds[j] = p[j] * (ds[j] - rowDot) * scale;
        }
        std::fill(p + i + 1, p + t.keys, 0.0f);
        std::fill(ds + i + 1, ds + t.keys, 0.0f);
      }
      sgemm(dprobs, false, t.keys, k + kvAt, false, kvRow, dq + tokenAt, qRow,
            {t.rows, headDim, t.keys}, 1.0f, 0.0f);
      sgemm(dprobs, true, t.keys, q + tokenAt, false, qRow, dkHead, ldKv, {t.keys, headDim, t.rows},
            1.0f, 1.0f);
      sgemm(probs, true, t.keys, dout + tokenAt, false, qRow, dvHead, ldKv,
            {t.keys, headDim, t.rows}, 1.0f, 1.0f);
    }
  });
  if (direct) {
    return;
  }
  // dk/dv of (batch, token, KV head) = Σ over the group's query heads, in head order.
  parallelRanges(batch * seq * kvHeads, 256, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t b = row / (seq * kvHeads);
      const std::int64_t j = row / kvHeads % seq;
      const std::int64_t kvh = row % kvHeads;
      float* dkRow = dk + row * headDim;
      float* dvRow = dv + row * headDim;
      for (std::int64_t g = 0; g < group; ++g) {
        const float* head = partial + (b * heads + kvh * group + g) * 2 * headFloats + j * headDim;
        for (std::int64_t d = 0; d < headDim; ++d) {
          dkRow[d] = g == 0 ? head[d] : dkRow[d] + head[d];
          dvRow[d] = g == 0 ? head[headFloats + d] : dvRow[d] + head[headFloats + d];
        }
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
