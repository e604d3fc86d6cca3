// cpu/attention.cpp — causal GQA attention, one query row at a time: scores over keys 0..i, a
// max-shifted softmax in double, then the weighted sum of values. O(seq²) memory-free; this is the
// reference and the fallback, not the fast path. The backward pass walks the same rows,
// recomputing each probability from the saved logsumexp, and sums dk/dv of a KV head over its
// group of query heads in double before rounding once.
#include "compute/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lorascope::compute::cpu {

void attentionForward(const float* q, const float* k, const float* v, AttentionDims dims,
                      float scale, float* out, float* logsumexp) {
  const auto [batch, seq, heads, kvHeads, headDim] = dims;
  const std::int64_t group = heads / kvHeads;  // query heads per KV head
  const std::int64_t qRow = heads * headDim;   // stride of one token in q and out
  const std::int64_t kvRow = kvHeads * headDim;
  std::vector<double> scores(static_cast<std::size_t>(seq));
  std::vector<double> accumulator(static_cast<std::size_t>(headDim));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t kvh = h / group;
      for (std::int64_t i = 0; i < seq; ++i) {
        const float* qi = q + (b * seq + i) * qRow + h * headDim;
        double maxScore = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* kj = k + (b * seq + j) * kvRow + kvh * headDim;
          double dot = 0.0;
          for (std::int64_t d = 0; d < headDim; ++d) {
            dot += static_cast<double>(qi[d]) * kj[d];
          }
          scores[static_cast<std::size_t>(j)] = dot * scale;
          maxScore = std::max(maxScore, scores[static_cast<std::size_t>(j)]);
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j <= i; ++j) {
          auto& s = scores[static_cast<std::size_t>(j)];
          s = std::exp(s - maxScore);
          sum += s;
        }
        std::fill(accumulator.begin(), accumulator.end(), 0.0);
        for (std::int64_t j = 0; j <= i; ++j) {
          const float* vj = v + (b * seq + j) * kvRow + kvh * headDim;
          const double p = scores[static_cast<std::size_t>(j)] / sum;
          for (std::int64_t d = 0; d < headDim; ++d) {
            accumulator[static_cast<std::size_t>(d)] += p * vj[d];
          }
        }
        float* oi = out + (b * seq + i) * qRow + h * headDim;
        for (std::int64_t d = 0; d < headDim; ++d) {
          oi[d] = static_cast<float>(accumulator[static_cast<std::size_t>(d)]);
        }
        logsumexp[(b * heads + h) * seq + i] = static_cast<float>(maxScore + std::log(sum));
      }
    }
  }
}

namespace {

double dot(const float* a, const float* b, std::int64_t n) {
  double sum = 0.0;
  for (std::int64_t d = 0; d < n; ++d) {
    sum += static_cast<double>(a[d]) * b[d];
  }
  return sum;
}

}  // namespace

void attentionBackward(const float* dout, const float* q, const float* k, const float* v,
                       const float* out, const float* logsumexp, AttentionDims dims, float scale,
                       float* dq, float* dk, float* dv) {
  const auto [batch, seq, heads, kvHeads, headDim] = dims;
  const std::int64_t group = heads / kvHeads;
  const std::int64_t qRow = heads * headDim;
  const std::int64_t kvRow = kvHeads * headDim;
  const auto hd = static_cast<std::size_t>(headDim);
  std::vector<double> dkSum(static_cast<std::size_t>(seq) * hd);  // (seq, hd) of one KV head
  std::vector<double> dvSum(static_cast<std::size_t>(seq) * hd);
  std::vector<double> dqRow(hd);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t kvh = 0; kvh < kvHeads; ++kvh) {
      std::fill(dkSum.begin(), dkSum.end(), 0.0);
      std::fill(dvSum.begin(), dvSum.end(), 0.0);
      for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        for (std::int64_t i = 0; i < seq; ++i) {
          const std::int64_t qOffset = (b * seq + i) * qRow + h * headDim;
          const float* qi = q + qOffset;
          const float* doi = dout + qOffset;
          const double rowDot = dot(doi, out + qOffset, headDim);  // D_i
          const double lse = logsumexp[(b * heads + h) * seq + i];
          std::fill(dqRow.begin(), dqRow.end(), 0.0);
          for (std::int64_t j = 0; j <= i; ++j) {
            const float* kj = k + (b * seq + j) * kvRow + kvh * headDim;
            const float* vj = v + (b * seq + j) * kvRow + kvh * headDim;
            const double p = std::exp(dot(qi, kj, headDim) * scale - lse);
            const double ds = p * (dot(doi, vj, headDim) - rowDot);
            double* dkj = dkSum.data() + static_cast<std::size_t>(j) * hd;
            double* dvj = dvSum.data() + static_cast<std::size_t>(j) * hd;
            for (std::size_t d = 0; d < hd; ++d) {
              dqRow[d] += ds * kj[d];
              dkj[d] += ds * qi[d];
              dvj[d] += p * doi[d];
            }
          }
          float* dqi = dq + qOffset;
          for (std::size_t d = 0; d < hd; ++d) {
            dqi[d] = static_cast<float>(dqRow[d] * scale);
          }
        }
      }
      for (std::int64_t j = 0; j < seq; ++j) {
        float* dkj = dk + (b * seq + j) * kvRow + kvh * headDim;
        float* dvj = dv + (b * seq + j) * kvRow + kvh * headDim;
        for (std::size_t d = 0; d < hd; ++d) {
          dkj[d] = static_cast<float>(dkSum[static_cast<std::size_t>(j) * hd + d] * scale);
          dvj[d] = static_cast<float>(dvSum[static_cast<std::size_t>(j) * hd + d]);
        }
      }
    }
  }
}

}  // namespace lorascope::compute::cpu
