// cpu/attention.cpp — causal GQA attention as blocked GEMMs through OpenBLAS.
//
// A tile is kQueryBlock query rows of one (batch, head) against the keys its rows can see: from
// the first row's first visible key (0; first − W + 1 with a sliding window of W; its document's
// start with packed documents; the latest of these) to the tile's last row. The first visible
// key never falls from row to row, so the keys before the first row's are masked for every row
// and never computed. A head's slice
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

#include "compute/cpu/matmul.h"    // defines: cpu::sgemm
#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelFor, threadScratch
#include "compute/cpu/simd.h"      // defines: simd (exp, sums, the softmax gradient rows)

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

// One tile's rows and keys: scores are computed for keys keyStart .. keyEnd − 1 (`keys` of them).
struct Tile {
  std::int64_t first = 0;  // first query row
  std::int64_t rows = 0;
  std::int64_t keyStart = 0;  // the first key its first row sees
  std::int64_t keys = 0;      // keyEnd − keyStart, keyEnd = first + rows (its last row's keys)
};

// What bounds the keys of a row of the batch: the window, and its documents' starts (seq) or null.
struct RowMask {
  std::int64_t window = 0;
  const std::int32_t* documentStarts = nullptr;

  std::int64_t firstKey(std::int64_t i) const {  // the first key query i sees
    const std::int64_t windowed = window > 0 ? std::max<std::int64_t>(0, i - window + 1) : 0;
    return documentStarts != nullptr ? std::max<std::int64_t>(windowed, documentStarts[i])
                                     : windowed;
  }
};
RowMask rowMask(const AttentionMasking& masking, std::int64_t b, std::int64_t seq) {
  return {masking.window,
          masking.documentStarts != nullptr ? masking.documentStarts + b * seq : nullptr};
}

Tile tileAt(std::int64_t block, std::int64_t seq, const RowMask& mask) {
  const std::int64_t first = block * kQueryBlock;
  const std::int64_t rows = std::min(kQueryBlock, seq - first);
  const std::int64_t keyStart = mask.firstKey(first);
  return {first, rows, keyStart, first + rows - keyStart};
}

// The span of tile-local key columns [begin, end) that query row `i` sees.
struct KeySpan {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};
KeySpan visibleKeys(const Tile& t, std::int64_t i, const RowMask& mask) {
  return {mask.firstKey(i) - t.keyStart, i + 1 - t.keyStart};
}

// s ← cap·tanh(s / cap) over one row's visible scores.
void softcapRow(float* row, KeySpan span, float cap) {
  for (std::int64_t j = span.begin; j < span.end; ++j) {
    row[j] = cap * std::tanh(row[j] / cap);
  }
}

// row (keys) holds scores; those in `span` are real, the rest masked. Leaves the unnormalised
// probabilities exp(s − max) in place (0 where masked) and returns log Σ and 1/Σ.
struct RowSoftmax {
  float logsumexp;
  float inverseSum;
};
RowSoftmax softmaxRowInPlace(float* row, KeySpan span, std::int64_t keys) {
  float* valid = row + span.begin;
  const std::int64_t count = span.end - span.begin;
  const SimdKernels& k = simd();
  const float maxScore = k.maxOf(valid, count);
  k.expArray(valid, valid, count, 1.0f, maxScore);
  const double sum = k.sumAsDouble(valid, count);
  std::fill(row, valid, 0.0f);
  std::fill(row + span.end, row + keys, 0.0f);
  return {static_cast<float>(maxScore + std::log(sum)), static_cast<float>(1.0 / sum)};
}

}  // namespace

void attentionForward(const float* q, const float* k, const float* v, AttentionDims dims,
                      AttentionMasking masking, float* out, float* logsumexp) {
  const OpTimer timer(CpuOp::AttentionForward);
  const float scale = masking.scale, softcap = masking.softcap;
  // Plain copies, not structured bindings: the lambda below captures them (clang 15 cannot).
  const std::int64_t batch = dims.batch, seq = dims.seq, heads = dims.heads;
  const std::int64_t kvHeads = dims.kvHeads, headDim = dims.headDim;
  const std::int64_t group = heads / kvHeads;  // query heads per KV head
  const std::int64_t qRow = heads * headDim;   // stride of one token in q and out
  const std::int64_t kvRow = kvHeads * headDim;
  const std::int64_t blocks = (seq + kQueryBlock - 1) / kQueryBlock;
  parallelFor(batch * heads * blocks, [=](std::int64_t item) {
    const std::int64_t b = item / blocks / heads;
    const RowMask mask = rowMask(masking, b, seq);
    // The last tiles (the most keys) first, so that the items handed out last are the cheapest.
    const Tile t = tileAt(blocks - 1 - item % blocks, seq, mask);
    const std::int64_t h = item / blocks % heads;
    const std::int64_t tokenAt = (b * seq + t.first) * qRow + h * headDim;
    const float* kHead = k + (b * seq + t.keyStart) * kvRow + h / group * headDim;
    const float* vHead = v + (b * seq + t.keyStart) * kvRow + h / group * headDim;
    float* probs =
        threadScratch(ScratchSlot::AttentionProbabilities, t.rows * t.keys);  // (rows, keys)
    sgemm(q + tokenAt, false, qRow, kHead, true, kvRow, probs, t.keys, {t.rows, t.keys, headDim},
          scale, 0.0f);
    float* inverseSums = threadScratch(ScratchSlot::AttentionSecond, t.rows);
    for (std::int64_t r = 0; r < t.rows; ++r) {
      const KeySpan span = visibleKeys(t, t.first + r, mask);
      if (softcap > 0.0f) {
        softcapRow(probs + r * t.keys, span, softcap);
      }
      const RowSoftmax s = softmaxRowInPlace(probs + r * t.keys, span, t.keys);
      logsumexp[(b * heads + h) * seq + t.first + r] = s.logsumexp;
      inverseSums[r] = s.inverseSum;
    }
    float* o = out + tokenAt;
    sgemm(probs, false, t.keys, vHead, false, kvRow, o, qRow, {t.rows, headDim, t.keys}, 1.0f,
          0.0f);
    for (std::int64_t r = 0; r < t.rows; ++r) {
      simd().scaleArray(o + r * qRow, headDim, inverseSums[r]);
    }
  });
}

void attentionBackward(const float* dout, const float* q, const float* k, const float* v,
                       const float* out, const float* logsumexp, AttentionDims dims,
                       AttentionMasking masking, float* dq, float* dk, float* dv) {
  const OpTimer timer(CpuOp::AttentionBackward);
  const float scale = masking.scale, softcap = masking.softcap;
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
    const RowMask mask = rowMask(masking, b, seq);
    const std::int64_t kvAt = b * seq * kvRow + h / group * headDim;
    const std::int64_t ldKv = direct ? kvRow : headDim;
    float* dkHead = direct ? dk + kvAt : partial + item * 2 * headFloats;
    float* dvHead = direct ? dv + kvAt : dkHead + headFloats;
    for (std::int64_t j = 0; j < seq; ++j) {
      std::fill_n(dkHead + j * ldKv, headDim, 0.0f);
      std::fill_n(dvHead + j * ldKv, headDim, 0.0f);
    }
    for (std::int64_t block = 0; block < blocks; ++block) {
      const Tile t = tileAt(block, seq, mask);
      const std::int64_t tokenAt = (b * seq + t.first) * qRow + h * headDim;
      const std::int64_t keyAt = kvAt + t.keyStart * kvRow;  // the tile's first key in k, v
      const std::int64_t keyGradAt = t.keyStart * ldKv;      // ... in dkHead, dvHead
      float* probs =
          threadScratch(ScratchSlot::AttentionProbabilities, t.rows * t.keys);  // (rows, keys) P
      float* dprobs =
          threadScratch(ScratchSlot::AttentionSecond, t.rows * t.keys);  // (rows, keys) dP, then dS
      sgemm(q + tokenAt, false, qRow, k + keyAt, true, kvRow, probs, t.keys,
            {t.rows, t.keys, headDim}, scale, 0.0f);
      sgemm(dout + tokenAt, false, qRow, v + keyAt, true, kvRow, dprobs, t.keys,
            {t.rows, t.keys, headDim}, 1.0f, 0.0f);
      for (std::int64_t r = 0; r < t.rows; ++r) {
        const std::int64_t i = t.first + r;
        const KeySpan span = visibleKeys(t, i, mask);
        const float lse = logsumexp[(b * heads + h) * seq + i];
        const float rowDot = dot(dout + tokenAt + r * qRow, out + tokenAt + r * qRow, headDim);
        float* p = probs + r * t.keys;
        float* ds = dprobs + r * t.keys;
        if (softcap > 0.0f) {
          for (std::int64_t j = span.begin; j < span.end; ++j) {
            // s = c·tanh(raw / c): ∂s/∂raw = 1 − tanh²
            const float th = std::tanh(p[j] / softcap);
            p[j] = softcap * th;
            ds[j] = (ds[j] - rowDot) * (scale * (1.0f - th * th));
          }
          simd().expArray(p + span.begin, p + span.begin, span.end - span.begin, 1.0f, lse);
          simd().multiplyArray(ds + span.begin, p + span.begin, span.end - span.begin);
        } else {
          simd().softmaxGradRow(p + span.begin, ds + span.begin, span.end - span.begin, lse, rowDot,
                                scale);
        }
        std::fill(p, p + span.begin, 0.0f);
        std::fill(ds, ds + span.begin, 0.0f);
        std::fill(p + span.end, p + t.keys, 0.0f);
        std::fill(ds + span.end, ds + t.keys, 0.0f);
      }
      sgemm(dprobs, false, t.keys, k + keyAt, false, kvRow, dq + tokenAt, qRow,
            {t.rows, headDim, t.keys}, 1.0f, 0.0f);
      sgemm(dprobs, true, t.keys, q + tokenAt, false, qRow, dkHead + keyGradAt, ldKv,
            {t.keys, headDim, t.rows}, 1.0f, 1.0f);
      sgemm(probs, true, t.keys, dout + tokenAt, false, qRow, dvHead + keyGradAt, ldKv,
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
