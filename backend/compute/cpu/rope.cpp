// cpu/rope.cpp — RoPE for the CPU backend. The angle is formed in fp32 (position · inv_freq), as
// transformers does, and cos/sin are taken in double so that only that product rounds; once per
// distinct position, and kept: every layer's q and k (and their gradients, with the sine negated)
// rotate by the same positions and frequencies, so the tables of the last few (frequencies,
// positions, direction) are reused instead of taking ~16,000 cos/sin per call again. Tokens run
// in parallel.
#include "compute/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelRanges

namespace lorascope::compute::cpu {
namespace {

constexpr std::int64_t kTokensPerRange = 16;  // tokens per parallel item
constexpr std::size_t kKeptTables = 4;        // e.g. forward and backward of global and local RoPE

// cos and sin of (first + p) · invFreq[i] at [p · half + i], the sine times ±1.
struct RopeTable {
  std::vector<float> invFreq;
  std::int64_t first = 0;
  std::int64_t span = 0;
  bool inverse = false;
  std::vector<float> cosines, sines;
};

std::shared_ptr<const RopeTable> makeTable(const float* invFreq, std::int64_t half,
                                           std::int64_t first, std::int64_t span, bool inverse) {
  auto table = std::make_shared<RopeTable>();
  table->invFreq.assign(invFreq, invFreq + half);
  table->first = first;
  table->span = span;
  table->inverse = inverse;
  table->cosines.resize(static_cast<std::size_t>(span * half));
  table->sines.resize(static_cast<std::size_t>(span * half));
  float* const cosTable = table->cosines.data();
  float* const sinTable = table->sines.data();
  const double sign = inverse ? -1.0 : 1.0;
  parallelRanges(span, kTokensPerRange, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      for (std::int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(first + p) * invFreq[i];
        cosTable[p * half + i] = static_cast<float>(std::cos(double{angle}));
        sinTable[p * half + i] = static_cast<float>(sign * std::sin(double{angle}));
      }
    }
  });
  return table;
}

// The table for these frequencies, positions and direction: a kept one, else a new one (kept in
// place of the oldest).
std::shared_ptr<const RopeTable> tableFor(const float* invFreq, std::int64_t half,
                                          std::int64_t first, std::int64_t span, bool inverse) {
  static std::mutex mutex;
  static std::deque<std::shared_ptr<const RopeTable>> kept;
  {
    const std::lock_guard lock(mutex);
    for (const auto& t : kept) {
      if (t->first == first && t->span == span && t->inverse == inverse &&
          std::equal(t->invFreq.begin(), t->invFreq.end(), invFreq, invFreq + half)) {
        return t;
      }
    }
  }
  std::shared_ptr<const RopeTable> table = makeTable(invFreq, half, first, span, inverse);
  const std::lock_guard lock(mutex);
  kept.push_back(table);
  if (kept.size() > kKeptTables) {
    kept.pop_front();
  }
  return table;
}

}  // namespace

void rope(float* x, RopeDims dims, const std::int32_t* positions, const float* invFreq,
          bool inverse) {
  const OpTimer timer(CpuOp::Rope);
  if (dims.tokens == 0) {
    return;
  }
  const std::int64_t half = dims.headDim / 2;
  // cos/sin once per distinct position: a batch repeats the same positions in every sequence.
  const auto [low, high] = std::minmax_element(positions, positions + dims.tokens);
  const std::int64_t first = *low;
  const std::int64_t span = std::int64_t{*high} - first + 1;
  const std::shared_ptr<const RopeTable> table = tableFor(invFreq, half, first, span, inverse);
  const float* const cosTable = table->cosines.data();
  const float* const sinTable = table->sines.data();
  parallelRanges(dims.tokens, kTokensPerRange, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t = begin; t < end; ++t) {
      const float* c = cosTable + (positions[t] - first) * half;
      const float* s = sinTable + (positions[t] - first) * half;
      for (std::int64_t h = 0; h < dims.heads; ++h) {
        float* row = x + (t * dims.heads + h) * dims.headDim;
        for (std::int64_t i = 0; i < half; ++i) {
          const float x1 = row[i];
          const float x2 = row[i + half];
          row[i] = x1 * c[i] - x2 * s[i];
          row[i + half] = x2 * c[i] + x1 * s[i];
        }
      }
    }
  });
}

}  // namespace lorascope::compute::cpu
